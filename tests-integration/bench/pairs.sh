#!/usr/bin/env bash
# One workload, targets alternating round after round on one warm server: for a ratio that a single
# run's drift cannot tip (this machine's speed moves by more than some goals' margins within a run).
# Each round runs every target once, each on a fresh mount after the page cache is dropped; the local
# copy runs first and last in each round. Prints each round and the means, with ratios to local and
# between the two os2g modes, and the share of each interval that the hypervisor stole: a round in which
# any target lost more than 10% is marked, and the means are also given without such rounds. With s3fs
# among the targets, a second table gives each gateway's CPU seconds per GiB and each os2g target's
# share of s3fs's, round by round (the offload's goal: the shim at most a quarter).
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
/usr/bin/python3 - "$results" "$targets" "$rounds" <<'PY'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
targets, rounds = sys.argv[2].split(), int(sys.argv[3])
per_round = len(rows) // rounds
MAX_STOLEN = 0.10  # of the interval's CPU time: beyond it a round measures the neighbours, not the targets

def interval(row):
    return row["epochs"][0] if "epochs" in row else row

def rate(row):  # the first epoch's, where there are several
    i = interval(row)
    return i.get("samples_per_s") or i.get("files_per_s") or i.get("mb_per_s")

def stolen(row):
    i = interval(row)
    cpus = len(i.get("idle_by_cpu_s") or []) or 2
    return i.get("steal_s", 0) / (i["seconds"] * cpus) if i.get("seconds") else 0

def cpu_per_gib(row):  # the gateway's CPU (os2g-split: the shim's alone) per GiB read
    i = interval(row)
    return i["gateway_cpu_s"] / (i["bytes"] / 2**30) if i.get("bytes") and "gateway_cpu_s" in i else None

table, cpu = [], []
for r in range(rounds):
    got, steal, spent = {}, {}, {}
    for row in rows[r * per_round:(r + 1) * per_round]:
        if "error" not in row:
            got.setdefault(row["target"], []).append(rate(row))
            steal[row["target"]] = max(steal.get(row["target"], 0), stolen(row))
            if cpu_per_gib(row) is not None:
                spent.setdefault(row["target"], []).append(cpu_per_gib(row))
    table.append(({t: statistics.mean(v) for t, v in got.items()}, steal))
    cpu.append({t: statistics.mean(v) for t, v in spent.items()})
others = [t for t in targets if t != "local"]
split = "os2g" in targets and "os2g-split" in targets
based = [t for t in targets if t + "-base" in targets]  # a build against its baseline (OS2G_BASELINE)

def ratios(row):
    cells = [f"{row[t] / row['local']:.0%}" if t in row and "local" in row else "" for t in others]
    cells += [f"{row['os2g-split'] / row['os2g']:.2f}" if "os2g" in row and "os2g-split" in row else ""] if split else []
    return cells + [f"{row[t] / row[t + '-base']:.2f}" if t in row and t + "-base" in row else "" for t in based]

def mean(selected):
    return {t: statistics.mean(x[t] for x, _ in selected if t in x) for t in targets if any(t in x for x, _ in selected)}

print("| round | " + " | ".join(targets) + "".join(f" | {t} / local" for t in others)
      + (" | split / in process" if split else "") + "".join(f" | {t} / base" for t in based) + " | stolen |")
print("|---" * (2 + len(targets) + len(others) + split + len(based)) + "|")
calm = []
for i, (row, steal) in enumerate(table):
    disturbed = any(v > MAX_STOLEN for v in steal.values())
    if not disturbed:
        calm.append((row, steal))
    cells = [f"{row[t]:.0f}" if t in row else "failed" for t in targets]
    stolen_cell = ", ".join(f"{t} {v:.0%}" for t, v in steal.items()) + (" (disturbed)" if disturbed else "")
    print(f"| {i + 1} | " + " | ".join(cells + ratios(row)) + f" | {stolen_cell} |")
for name, selected in (("mean", table), (f"mean of the {len(calm)} rounds with <= {MAX_STOLEN:.0%} stolen", calm)):
    if selected:
        row = mean(selected)
        print(f"| {name} | " + " | ".join([f"{row[t]:.0f}" if t in row else "failed" for t in targets] + ratios(row)) + " | |")
# the offload's CPU goal: each os2g target's gateway CPU per GiB against s3fs's, round by round
gateways = [t for t in targets if t != "local"]
shims = [t for t in gateways if t.startswith("os2g")] if "s3fs" in gateways else []
shims_based = [t for t in gateways if t + "-base" in gateways]
print()
print("| round | " + " | ".join(f"{t} CPU s/GiB" for t in gateways) + "".join(f" | {t} / s3fs" for t in shims)
      + "".join(f" | {t} / base" for t in shims_based) + " |")
print("|---" * (1 + len(gateways) + len(shims) + len(shims_based)) + "|")
for i, row in enumerate(cpu + [{t: statistics.mean(x[t] for x in cpu if t in x) for t in gateways if any(t in x for x in cpu)}]):
    cells = [f"{row[t]:.2f}" if t in row else "failed" for t in gateways]
    cells += [f"{row[t] / row['s3fs']:.2f}" if t in row and "s3fs" in row else "" for t in shims]
    cells += [f"{row[t] / row[t + '-base']:.2f}" if t in row and t + "-base" in row else "" for t in shims_based]
    print(f"| {i + 1 if i < len(cpu) else 'mean'} | " + " | ".join(cells) + " |")
PY
