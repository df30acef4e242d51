#!/usr/bin/env bash
# One workload, targets alternating round after round on one warm server: for a ratio that a single
# run's drift cannot tip (this machine's speed moves by more than some goals' margins within a run).
# Each round runs every target once, each on a fresh mount after the page cache is dropped; the local
# copy runs first and last in each round. Prints each round of each epoch (rounds.py), with ratios to local
# and between the two os2g modes, and the share of each interval that the hypervisor stole: a round in which
# any target lost more than 10% is marked, and the means are also given without such rounds. With s3fs
# among the targets, a second table gives each gateway's CPU seconds per GiB and each os2g target's share
# of s3fs's, round by round (the offload's goal: the shim at most a quarter). Then each epoch's means over
# the rounds. A *-cache workload runs os2g's disk cache targets (256 MiB staging without and with
# --cache-dir), each a column of its own.
#   tests-integration/bench/pairs.sh [--rounds N] [--workload LABEL] [--targets "local os2g os2g-split"]
#                                    [--warm-agent FILES]
# Before/after a change: OS2G_BASELINE=DIR (another checkout of os2g, built) adds the targets os2g-base
# and os2g-split-base, run by DIR's launcher; with them among --targets, each round also gives new / base.
# (after run.sh has installed the packages and seeded $OS2G_BENCH_DIR). Rows go to $data/pairs.jsonl.
# --warm-agent FILES: each round's agent serves one unmeasured job first (bench.py --warm-agent), as a
# running os2g-agent.service has; without it every round measures an agent's first job.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
root="$(cd "$here/../.." && pwd)"

rounds=4; workload=dataloader-hinted; targets="local os2g os2g-split"; latency=10; warm_agent=0
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift ;;
    --workload) workload="$2"; shift ;;
    --targets) targets="$2"; shift ;;
    --warm-agent) warm_agent="$2"; shift ;;
    *) echo "usage: $0 [--rounds N] [--workload LABEL] [--targets \"local os2g os2g-split\"] [--warm-agent FILES]" >&2; exit 2 ;;
  esac
  shift
done
[ -f "${OS2G_BENCH_DIR:-/var/tmp/os2g-bench}/s3/bench/manifest.json" ] \
  || { echo "no bench dataset: run tests-integration/bench/run.sh first" >&2; exit 2; }

source "$here/server.sh"
results="$data/pairs.jsonl"
: > "$results"
for r in $(seq "$rounds"); do
  for t in $targets; do
    /usr/bin/python3 "$here/bench.py" "$endpoint" "$data" "$results" --only "$t" --workloads "$workload" \
      --default-flags --latency-ms "$latency" --server-pid "$server" --warm-agent "$warm_agent" | sed "s/^/round $r: /"
  done
done
/usr/bin/python3 "$here/rounds.py" "$results" "$rounds"
echo
/usr/bin/python3 "$here/rounds.py" "$results" "$rounds" --summary
