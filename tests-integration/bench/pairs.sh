#!/usr/bin/env bash
# One workload, targets alternating round after round on one warm server: for a ratio that a single
# run's drift cannot tip (this machine's speed moves by more than some goals' margins within a run).
# Each round runs every target once, each on a fresh mount after the page cache is dropped; the local
# copy runs first and last in each round. Prints each round and the means, with ratios to local.
#   tests-integration/bench/pairs.sh [--rounds N] [--workload LABEL] [--targets "local os2g os2g-split"]
# (after run.sh has installed the packages and seeded $OS2G_BENCH_DIR). Rows go to $data/pairs.jsonl.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
root="$(cd "$here/../.." && pwd)"

rounds=4; workload=dataloader-hinted; targets="local os2g os2g-split"; latency=10
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift ;;
    --workload) workload="$2"; shift ;;
    --targets) targets="$2"; shift ;;
    *) echo "usage: $0 [--rounds N] [--workload LABEL] [--targets \"local os2g os2g-split\"]" >&2; exit 2 ;;
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
      --default-flags --latency-ms "$latency" --server-pid "$server" | sed "s/^/round $r: /"
  done
done
/usr/bin/python3 - "$results" "$targets" "$rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
targets, rounds = sys.argv[2].split(), int(sys.argv[3])
per_round = len(rows) // rounds
def rate(row):
    return row.get("samples_per_s") or row.get("mb_per_s") or (row["epochs"][0]["files_per_s"] if "epochs" in row else None)
table = []
for r in range(rounds):
    got = {}
    for row in rows[r * per_round:(r + 1) * per_round]:
        if "error" not in row:
            got.setdefault(row["target"], []).append(rate(row))
    table.append({t: statistics.mean(v) for t, v in got.items()})
others = [t for t in targets if t != "local"]
print("| round | " + " | ".join(targets) + "".join(f" | {t} / local" for t in others) + " |")
print("|---" * (1 + len(targets) + len(others)) + "|")
for i, row in enumerate(table + [{t: statistics.mean(x[t] for x in table if t in x) for t in targets
                                  if any(t in x for x in table)}]):
    name = str(i + 1) if i < len(table) else "mean"
    cells = [f"{row[t]:.0f}" if t in row else "failed" for t in targets]
    ratios = [f"{row[t] / row['local']:.0%}" if t in row and "local" in row else "" for t in others]
    print(f"| {name} | " + " | ".join(cells + ratios) + " |")
PY
