#!/usr/bin/env bash
# GPU staging, end to end, on a machine with one NVIDIA GPU (its driver), a JDK >= 25, FUSE and a CUDA
# build of PyTorch (python3 with torch.cuda.is_available()). Not part of the test command: run it by hand.
#   tests-integration/gpu/check.sh [--small N] [--large N] [--large-mb M] [--python PYTHON]
# Starts a local S3 server, seeds an ImageFolder of N JPEGs and N large files, mounts the bucket with
# --gpu 0, stages everything (os2g warm), then loads every file to the GPU both ways: read() + .cuda(),
# and os2g.torch (the staged extents, mapped and registered with CUDA, copied by DMA). Checks the bytes
# are equal on the GPU and prints GB/s and host CPU seconds per GiB of both (consumer + mount). A few
# minutes; exit 0 when the bytes are equal (the performance goal is reported, not asserted).
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
root="$(cd "$here/../.." && pwd)"
small=2000; large=8; large_mb=256; python="${PYTHON:-python3}"
while [ $# -gt 0 ]; do
  case "$1" in
    --small) small="$2"; shift ;;
    --large) large="$2"; shift ;;
    --large-mb) large_mb="$2"; shift ;;
    --python) python="$2"; shift ;;
    *) echo "usage: $0 [--small N] [--large N] [--large-mb M] [--python PYTHON]" >&2; exit 2 ;;
  esac
  shift
done
"$python" -c 'import torch, boto3, PIL; assert torch.cuda.is_available(), "torch sees no CUDA device"' \
  || { echo "check.sh needs $python with a CUDA build of torch, boto3 and Pillow" >&2; exit 2; }

work="$(mktemp -d /tmp/os2g-gpu-check.XXXXXX)"
mnt="$work/mnt"; mkdir -p "$mnt"
export AWS_ACCESS_KEY_ID=os2g-demo AWS_SECRET_ACCESS_KEY=os2g-demo-secret
server=""; mount=""
cleanup() {
  [ -n "$mount" ] && kill -TERM "$mount" 2>/dev/null && wait "$mount" 2>/dev/null || true
  mountpoint -q "$mnt" && fusermount3 -u -z "$mnt" || true
  [ -n "$server" ] && kill "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

"$root/os2g" s3-server --dir "$work/s3" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 600); do grep -q 'endpoint ' "$work/server.log" 2>/dev/null && break; sleep 0.1; done
endpoint="$(grep -o 'endpoint http[^ ]*' "$work/server.log" | awk '{print $2}')"
[ -n "$endpoint" ] || { echo "s3-server did not start: $(cat "$work/server.log")" >&2; exit 1; }

echo "== seeding $small JPEGs and $large x $large_mb MiB at $endpoint"
"$python" "$root/compose/seed.py" "$endpoint" gpu --prefix imagefolder/train --classes 10 --per-class $(( (small + 9) / 10 ))
"$python" - "$endpoint" "$large" "$large_mb" <<'PY'
import os, sys, boto3
endpoint, n, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
for i in range(n):
    s3.put_object(Bucket="gpu", Key=f"large/part-{i}.bin", Body=os.urandom(mb << 20))
PY

staging_gb=$(( (small * 150 / 1024 + large * large_mb) / 1024 * 2 + 2 ))
echo "== mounting with --gpu 0 (staging ${staging_gb}G)"
"$root/os2g" mount gpu "$mnt" --endpoint "$endpoint" --gpu 0 --staging-size "${staging_gb}G" --metadata-ttl forever \
  > "$work/mount.log" 2>&1 &
mount=$!
for _ in $(seq 1200); do grep -q ' mounted ' "$work/mount.log" && break; kill -0 "$mount" || { cat "$work/mount.log"; exit 1; }; sleep 0.1; done
grep ' mounted ' "$work/mount.log"
"$root/os2g" warm "$mnt"

PYTHONPATH="$root/clients/python${PYTHONPATH:+:$PYTHONPATH}" "$python" "$here/check.py" "$mnt" "$mount"
