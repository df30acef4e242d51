#!/usr/bin/env bash
# os2g benchmark: an S3 server with injected latency, a deterministic dataset seeded through the S3 API,
# and the workloads of the read-only mount issue, each on a fresh (cold) mount.
#   tests-integration/bench/run.sh [--quick] [--latency-ms N] [--out FILE]
# Results: one JSON line per workload in FILE (default tests-integration/bench/results.jsonl), and a table.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
root="$(cd "$here/../.." && pwd)"

quick=0; latency=10; out="$here/results.jsonl"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --latency-ms) latency="$2"; shift ;;
    --out) out="$2"; shift ;;
    *) echo "usage: $0 [--quick] [--latency-ms N] [--out FILE]" >&2; exit 2 ;;
  esac
  shift
done

for p in fuse3 python3-numpy python3-boto3; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { echo "missing $p: sudo apt-get install $p" >&2; exit 1; }
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fuse3 python3-numpy python3-boto3 >/dev/null
    break
  fi
done

if [ "$quick" = 1 ]; then small=1000; large=2; tree=20000; else small=4000; large=4; tree=20000; fi
data="${OS2G_BENCH_DIR:-/var/tmp/os2g-bench}"
mkdir -p "$data/s3" "$data/mnt"
py=/usr/bin/python3

server_log="$data/s3-server.log"
"$root/os2g" s3-server --dir "$data/s3" --latency-ms "$latency" > "$server_log" 2>&1 &
server=$!
mount_pid=""
cleanup() {
  [ -n "$mount_pid" ] && kill "$mount_pid" 2>/dev/null && wait "$mount_pid" 2>/dev/null || true
  fusermount -u -z "$data/mnt" 2>/dev/null || true
  kill "$server" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 600); do grep -q '^endpoint ' "$server_log" 2>/dev/null && break; sleep 0.1; done
endpoint="$(awk '/^endpoint /{print $2}' "$server_log")"
[ -n "$endpoint" ] || { echo "s3-server did not start: $(cat "$server_log")" >&2; exit 1; }

echo "== seeding s3://bench ($small small, $large x 256 MiB, $tree tree objects) at $endpoint"
"$py" "$here/seed.py" "$endpoint" bench "$small" "$large" 256 "$tree"

mount_fresh() {
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  AWS_ACCESS_KEY_ID=os2g-demo AWS_SECRET_ACCESS_KEY=os2g-demo-secret \
    "$root/os2g" mount bench "$data/mnt" --endpoint "$endpoint" --metadata-ttl forever > "$data/mount.log" 2>&1 &
  mount_pid=$!
  for _ in $(seq 600); do grep -qs " $data/mnt " /proc/mounts && break; sleep 0.05; done
  grep -qs " $data/mnt " /proc/mounts || { echo "mount failed: $(cat "$data/mount.log")" >&2; exit 1; }
  # the launcher execs java, so the mount's pid is the gateway's
}
unmount() {
  kill "$mount_pid"; wait "$mount_pid" || true; mount_pid=""
}

: > "$out.tmp"
run() {  # label, workload args...
  local label="$1"; shift
  mount_fresh
  "$py" "$here/workloads.py" "$data/mnt" "$mount_pid" "$@" | sed "s/^{/{\"target\": \"os2g\", \"label\": \"$label\", \"latency_ms\": $latency, /" | tee -a "$out.tmp"
  unmount
}
run small-4 small --readers 4 --epochs 2
run seq-1 sequential --readers 1
run seq-4 sequential --readers 4
run walk walk
run ttfb ttfb
mv "$out.tmp" "$out"
"$py" "$here/report.py" "$out"
