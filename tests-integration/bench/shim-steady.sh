#!/usr/bin/env bash
# The shim's CPU per GiB at steady state, without the agent or the store in the way: a split mount
# (agent pinned to core 1) stages one 256 MiB file of the bench dataset, then reads it N more times
# with the page cache dropped before each read, so every read is a staging hit. Root (drop_caches).
#   tests-integration/bench/shim-steady.sh [ROUNDS]     (after run.sh has seeded $OS2G_BENCH_DIR)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${OS2G_BENCH_DIR:-/var/tmp/os2g-bench}"
rounds="${1:-4}"
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
[ -f "$data/s3/bench/large/shard-0.bin" ] || { echo "no bench dataset in $data: run tests-integration/bench/run.sh first" >&2; exit 2; }
work="$(mktemp -d /tmp/os2g-steady.XXXX)"
pids=()
cleanup() {
  fusermount3 -u "$work/mnt" 2>/dev/null || true
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work" "/dev/shm/os2g-steady-$$"
}
trap cleanup EXIT
"$root/os2g" s3-server --dir "$data/s3" --latency-ms 10 > "$work/s3.log" 2>&1 & pids+=($!)
for _ in $(seq 600); do grep -q '^endpoint ' "$work/s3.log" 2>/dev/null && break; sleep 0.1; done
endpoint="$(awk '/^endpoint /{print $2}' "$work/s3.log")"
mkdir "$work/mnt"
AWS_ACCESS_KEY_ID=os2g-demo AWS_SECRET_ACCESS_KEY=os2g-demo-secret taskset -c 1 "$root/os2g" agent \
  --listen "unix:$work/agent.sock" --endpoint "$endpoint" --staging-dir "/dev/shm/os2g-steady-$$" --cpus 1 > "$work/agent.log" 2>&1 & pids+=($!)
for _ in $(seq 600); do [ -S "$work/agent.sock" ] && break; sleep 0.1; done
"$root/os2g" mount bench/large "$work/mnt" --agent "unix:$work/agent.sock" --staging-size 1G > "$work/mount.log" 2>&1 & pids+=($!)
for _ in $(seq 600); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
shim="$(pgrep -f "mount bench/large $work/mnt" | tail -1)"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
dd if="$work/mnt/shard-0.bin" of=/dev/null bs=1M 2>/dev/null
for r in $(seq "$rounds"); do
  echo 1 > /proc/sys/vm/drop_caches
  c0=$(cpu "$shim"); t0=$(date +%s.%N)
  dd if="$work/mnt/shard-0.bin" of=/dev/null bs=1M 2>/dev/null
  t1=$(date +%s.%N); c1=$(cpu "$shim")
  awk -v r="$r" -v t="$(echo "$t1 - $t0" | bc -l)" -v c="$(( c1 - c0 ))" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "re-read %d of 256 MiB from staging: %.0f MB/s, shim %.2f CPU s/GiB\n", r, 268.435456 / t, c / hz * 4 }'
done
/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print("bytes spliced: %d of %d served" % (d["bytes_spliced"], d["bytes_served"]))' "$work/mnt/.os2g/stats"
