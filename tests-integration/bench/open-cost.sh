#!/usr/bin/env bash
# The gateway's cost of one open+close of a small file the kernel already holds, the part of a
# DataLoader epoch that a local file system does not pay: N opens of one JPEG of the bench dataset
# (OPEN, Python's isatty IOCTL, RELEASE; FLUSH where the mount answers it), timed from Python, with
# the mount's CPU per open. Mount flags after -- (e.g. -- --allow-writes, -- --cache-dir DIR).
#   tests-integration/bench/open-cost.sh [N] [-- MOUNT FLAGS]     (after run.sh has seeded $OS2G_BENCH_DIR)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
data="${OS2G_BENCH_DIR:-/var/tmp/os2g-bench}"
opens=20000
if [ $# -gt 0 ] && [ "$1" != "--" ]; then opens="$1"; shift; fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
export JAVA_HOME="${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
[ -d "$data/s3/bench/small" ] || { echo "no bench dataset in $data: run tests-integration/bench/run.sh first" >&2; exit 2; }
work="$(mktemp -d /tmp/os2g-open-cost.XXXX)"
pids=()
cleanup() {
  fusermount3 -u "$work/mnt" 2>/dev/null || true
  kill "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
"$root/os2g" s3-server --dir "$data/s3" > "$work/s3.log" 2>&1 & pids+=($!)
for _ in $(seq 600); do grep -q '^endpoint ' "$work/s3.log" 2>/dev/null && break; sleep 0.1; done
endpoint="$(awk '/^endpoint /{print $2}' "$work/s3.log")"
mkdir "$work/mnt"
AWS_ACCESS_KEY_ID=os2g-demo AWS_SECRET_ACCESS_KEY=os2g-demo-secret \
  "$root/os2g" mount bench "$work/mnt" --endpoint "$endpoint" "$@" > "$work/mount.log" 2>&1 & pids+=($!)
for _ in $(seq 600); do mountpoint -q "$work/mnt" && break; sleep 0.1; done
mountpoint -q "$work/mnt" || { echo "the mount did not start: $(tail -3 "$work/mount.log")" >&2; exit 2; }
mount_pid="$(pgrep -f "mount bench $work/mnt" | tail -1)"
/usr/bin/python3 - "$work/mnt" "$mount_pid" "$opens" "$*" <<'PY'
import os, sys, time
mnt, pid, n, flags = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
folder = os.path.join(mnt, "small", sorted(os.listdir(os.path.join(mnt, "small")))[0])
path = os.path.join(folder, sorted(os.listdir(folder))[0])
def cpu():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
for _ in range(2000):  # staged (or in the disk cache), and the JIT past its first compiles
    open(path, "rb").close()
c0, t0 = cpu(), time.perf_counter()
for _ in range(n):
    with open(path, "rb"):
        pass
seconds, used = time.perf_counter() - t0, cpu() - c0
print(f"{n} opens ({flags or 'default flags'}): {seconds / n * 1e6:.1f} us each, mount {used / n * 1e6:.1f} us CPU each")
PY
