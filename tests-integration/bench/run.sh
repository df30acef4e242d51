#!/usr/bin/env bash
# Benchmarks of os2g against its peers (s3fs, rclone mount) and a local copy, side by side, in one run:
# S3Proxy with injected latency, a deterministic dataset seeded through the S3 API (reused when
# unchanged), every (target, workload) on a fresh mount with the page cache dropped.
#   tests-integration/bench/run.sh [--quick] [--latency-ms N] [--workloads LABELS] [--default-flags] [--report NAME]
#                                  [--warm-agent FILES] [--resume] [--rounds N]
# Writes tests-integration/bench/results.jsonl, docs/BENCHMARKS.md and docs/benchmarks.png (--report
# NAME: docs/NAME.md and docs/NAME.png). --workloads small-4,small-4-hinted runs only those;
# --default-flags runs each peer with its default flags only (and os2g's disk cache targets), at full
# size. --warm-agent FILES: the split target's agent serves one unmeasured job of FILES small files first,
# as a running os2g-agent.service has (without it, its first measured workload is the agent's first job:
# its JIT warms up on its one core).
# --resume: a run cut short goes on, keeping results.jsonl's rows and running only the pairs it lacks.
# Without --quick, a second server serves the same data over HTTPS (a self-signed key) for one pair,
# os2g-https and os2g-net-plain-https, on small-4, seq-4 and dataloader: where TLS to the store is paid.
# os2g-shared is a second node of a cluster sharing a cache (--shared-cache on another server 1 ms away):
# two nodes first read small/ at once over an empty tier (a row each, with its origin GETs), then a
# first node's epoch fills the tier (its row), then small-4 and dataloader run on fresh mounts.
# As root, os2g-net-veth puts the shim in a network namespace of its own (nsenter --net; its mount is
# this host's) with a veth pair to the agent: the link crosses a network interface, as to a DPU.
# The links' targets (os2g-split-off, os2g-net*, os2g-https) run small-4, seq-4 and dataloader only, and
# the later DataLoader epochs (dataloader-epochs, dataloader-after-large) run on the local copy and os2g.
# --rounds N (default 3; 0: none): after the run, the epoch workloads (those two and dataloader-cache) run
# again in N rounds, the local copy and os2g in turn (tests-integration/bench/rounds.jsonl), and the
# report gives their means: one run's drift is larger than the margins of the epoch goals.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
root="$(cd "$here/../.." && pwd)"

quick=""; latency=10; select=(); rounds=3; report_md="$root/docs/BENCHMARKS.md"; report_png="$root/docs/benchmarks.png"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick="--quick" ;;
    --latency-ms) latency="$2"; shift ;;
    --workloads) select+=(--workloads "$2"); shift ;;
    --default-flags) select+=(--default-flags) ;;
    --report) report_md="$root/docs/$2.md"; report_png="$root/docs/$2.png"; shift ;;
    --warm-agent) select+=(--warm-agent "$2"); shift ;;
    --resume) select+=(--resume) ;;
    --rounds) rounds="$2"; shift ;;
    *) echo "usage: $0 [--quick] [--latency-ms N] [--workloads LABELS] [--default-flags] [--report NAME] [--warm-agent FILES] [--resume] [--rounds N]" >&2; exit 2 ;;
  esac
  shift
done

packages=(fuse3 s3fs rclone python3-numpy python3-boto3 python3-pil python3-matplotlib python3-torch python3-torchvision)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ "${#missing[@]}" -gt 0 ]; then
  [ "$(id -u)" = 0 ] || { echo "missing: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2; exit 1; }
  echo "== installing ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

source "$here/server.sh"

echo "== indexing the tar shards (os2g index: sidecar indexes, as a user of --expand-tar would)"
for shard in $(seq 0 7); do
  AWS_ACCESS_KEY_ID=os2g-demo AWS_SECRET_ACCESS_KEY=os2g-demo-secret \
    "$root/os2g" index "bench/shards/train-00$shard.tar" --endpoint "$endpoint"
done

echo "== running (latency $latency ms${quick:+, quick})"
/usr/bin/python3 "$here/bench.py" "$endpoint" "$data" "$here/results.jsonl" --latency-ms "$latency" --server-pid "$server" --server-warmed "$warmed" $quick "${select[@]}"
in_rounds=()
if [ "$rounds" -gt 0 ]; then
  echo "== the later epochs again, $rounds rounds of the local copy and os2g in turn"
  : > "$here/rounds.jsonl"
  for r in $(seq "$rounds"); do
    for t in local os2g; do
      /usr/bin/python3 "$here/bench.py" "$endpoint" "$data" "$here/rounds.jsonl" --only "$t" --default-flags $quick \
        --workloads dataloader-epochs,dataloader-after-large,dataloader-cache --latency-ms "$latency" --server-pid "$server" \
        | sed "s/^/round $r: /"
    done
  done
  in_rounds=(--rounds "$here/rounds.jsonl" "$rounds")
fi
/usr/bin/python3 "$here/report.py" "$here/results.jsonl" --markdown "$report_md" --png "$report_png" "${in_rounds[@]}"
