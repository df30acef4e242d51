#!/usr/bin/env python3
"""Summaries of workloads run in rounds (pairs.sh, run.sh --rounds): every target once per round, in turn,
so that this machine's drift within a run, larger than some goals' margins, moves every target alike.

RESULTS holds bench.py's rows in the order they ran; the rows of one workload divide evenly into ROUNDS.
A target at other flags than its defaults (the disk cache workloads) is a column of its own, as is
OS2G_BASELINE's build (os2g-base). `detail` gives each round of each epoch (pairs.sh); `summary` each
epoch's means over the rounds, with the range of the per-round ratios to the local copy (run.sh's report).
  rounds.py RESULTS ROUNDS [--summary]
"""
import json
import statistics
import sys

MAX_STOLEN = 0.10  # of the interval's CPU time: beyond it a round measures the neighbours, not the targets


def load(path):
    rows = (json.loads(line) for line in open(path) if line.strip())
    return [row for row in rows if "target" in row]


def column(row):
    if row["target"] == "local" or row["flags"] == "default":
        return row["target"]
    return f'{row["target"]} ({row["flags"]})'


def base_of(name):  # os2g-split (flags) -> os2g-split-base (flags)
    target, _, flags = name.partition(" ")
    return target + "-base" + (" " + flags if flags else "")


def intervals(row):  # each epoch, where there are several
    return row.get("epochs") or [row]


def rate(i):
    return i.get("samples_per_s") or i.get("files_per_s") or i.get("mb_per_s")


def stolen(i):
    cpus = len(i.get("idle_by_cpu_s") or []) or 2
    return i.get("steal_s", 0) / (i["seconds"] * cpus) if i.get("seconds") else 0


def cpu_per_gib(i):  # the gateway's CPU (os2g-split: the shim's alone) per GiB read
    return i["gateway_cpu_s"] / (i["bytes"] / 2**30) if i.get("bytes") and "gateway_cpu_s" in i else None


class Workload:
    """One workload's rows split into rounds: per epoch and round, each column's rate, stolen share,
    gateway CPU per GiB and GETs (the means of a column's rows in that round: the local copy runs twice)."""

    def __init__(self, rows, rounds):
        self.label = rows[0]["label"]
        ok = [row for row in rows if "error" not in row]
        self.columns = list(dict.fromkeys(column(row) for row in ok))
        self.epochs = max((len(intervals(row)) for row in ok), default=0)
        self.rounds = rounds
        per_round = len(rows) // rounds
        self.cells = []  # [epoch][round] -> {measure: {column: value}}
        for e in range(self.epochs):
            by_round = []
            for r in range(rounds):
                got = {"rate": {}, "stolen": {}, "cpu": {}, "gets": {}}
                for row in rows[r * per_round:(r + 1) * per_round]:
                    if "error" in row or len(intervals(row)) <= e:
                        continue
                    i, c = intervals(row)[e], column(row)
                    for measure, v in (("rate", rate(i)), ("stolen", stolen(i)), ("cpu", cpu_per_gib(i)), ("gets", i.get("gets"))):
                        if v is not None:
                            got[measure].setdefault(c, []).append(v)
                by_round.append({m: {c: (max(v) if m == "stolen" else statistics.mean(v)) for c, v in cols.items()}
                                 for m, cols in got.items()})
            self.cells.append(by_round)

    def ratios(self, e, col):
        """Each round's rate of `col` in epoch e over the local copy's in the same round."""
        return [r["rate"][col] / r["rate"]["local"] for r in self.cells[e] if col in r["rate"] and r["rate"].get("local")]

    def mean(self, e, measure, col):
        values = [r[measure][col] for r in self.cells[e] if col in r[measure]]
        return statistics.mean(values) if values else None


def split_by_label(rows):
    labels = {}
    for row in rows:
        labels.setdefault(row["label"], []).append(row)
    return labels


def detail(rows, rounds):
    """Round by round, per workload and epoch: each column's rate, its ratios, the stolen shares; then the
    gateways' CPU per GiB (with s3fs among them: each os2g column's share of s3fs's, the offload's goal)."""
    out = []
    for label, group in split_by_label(rows).items():
        w = Workload(group, rounds)
        others = [c for c in w.columns if c != "local"]
        split = "os2g" in w.columns and "os2g-split" in w.columns
        based = [c for c in w.columns if base_of(c) in w.columns]
        shims = [c for c in others if c.startswith("os2g")] if "s3fs" in others else []

        def ratio_cells(row):
            cells = [f"{row[c] / row['local']:.0%}" if c in row and "local" in row else "" for c in others]
            cells += [f"{row['os2g-split'] / row['os2g']:.2f}" if "os2g" in row and "os2g-split" in row else ""] if split else []
            return cells + [f"{row[c] / row[base_of(c)]:.2f}" if c in row and base_of(c) in row else "" for c in based]

        for e in range(w.epochs):
            out += ["", f"## {label}" + (f", epoch {e + 1}" if w.epochs > 1 else ""), ""]
            out.append("| round | " + " | ".join(w.columns) + "".join(f" | {c} / local" for c in others)
                       + (" | split / in process" if split else "") + "".join(f" | {c} / base" for c in based) + " | stolen |")
            out.append("|---" * (2 + len(w.columns) + len(others) + split + len(based)) + "|")
            calm = []
            for i, r in enumerate(w.cells[e]):
                disturbed = any(v > MAX_STOLEN for v in r["stolen"].values())
                if not disturbed:
                    calm.append(r)
                cells = [f"{r['rate'][c]:.0f}" if c in r["rate"] else "failed" for c in w.columns]
                steal = ", ".join(f"{c} {v:.0%}" for c, v in r["stolen"].items() if v >= 0.01) + (" (disturbed)" if disturbed else "")
                out.append(f"| {i + 1} | " + " | ".join(cells + ratio_cells(r["rate"])) + f" | {steal} |")
            for name, selected in (("mean", w.cells[e]), (f"mean of the {len(calm)} rounds with <= {MAX_STOLEN:.0%} stolen", calm)):
                if selected:
                    row = {c: statistics.mean(r["rate"][c] for r in selected if c in r["rate"]) for c in w.columns
                           if any(c in r["rate"] for r in selected)}
                    out.append(f"| {name} | " + " | ".join([f"{row[c]:.0f}" if c in row else "failed" for c in w.columns]
                                                           + ratio_cells(row)) + " | |")
            gets = {c: w.mean(e, "gets", c) for c in others if w.mean(e, "gets", c) is not None}
            if gets:
                out += ["", "GETs, mean per round: " + ", ".join(f"{c} {v:.0f}" for c, v in gets.items())]
            out += ["", "| round | " + " | ".join(f"{c} CPU s/GiB" for c in others) + "".join(f" | {c} / s3fs" for c in shims)
                    + "".join(f" | {c} / base" for c in based) + " |",
                    "|---" * (1 + len(others) + len(shims) + len(based)) + "|"]
            cpu_rows = [r["cpu"] for r in w.cells[e]]
            cpu_rows.append({c: w.mean(e, "cpu", c) for c in others if w.mean(e, "cpu", c) is not None})
            for i, row in enumerate(cpu_rows):
                cells = [f"{row[c]:.2f}" if c in row else "failed" for c in others]
                cells += [f"{row[c] / row['s3fs']:.2f}" if c in row and "s3fs" in row else "" for c in shims]
                cells += [f"{row[c] / row[base_of(c)]:.2f}" if c in row and base_of(c) in row else "" for c in based]
                out.append(f"| {i + 1 if i < len(cpu_rows) - 1 else 'mean'} | " + " | ".join(cells) + " |")
    return out


def summary(rows, rounds, titles=None):
    """Per workload, one row per epoch: each column's mean rate over the rounds, each os2g column's mean
    ratio to the local copy of its round (with the lowest and highest), and its GETs per epoch."""
    out = []
    for label, group in split_by_label(rows).items():
        w = Workload(group, rounds)
        others = [c for c in w.columns if c != "local"]
        fetching = [c for c in others if any(w.mean(e, "gets", c) is not None for e in range(w.epochs))]
        title = (titles or {}).get(label, label)
        out += ["", f"### {title} ({rounds} rounds) <a id=\"rounds-{label}\"></a>", "",
                "| epoch | " + " | ".join(w.columns) + "".join(f" | {c} / local (lowest-highest)" for c in others)
                + "".join(f" | {c}: GETs" for c in fetching) + " |",
                "|---" * (1 + len(w.columns) + len(others) + len(fetching)) + "|"]
        for e in range(w.epochs):
            rates = [f"{w.mean(e, 'rate', c):.0f}" if w.mean(e, "rate", c) is not None else "failed" for c in w.columns]
            ratio_cells = []
            for c in others:
                r = w.ratios(e, c)
                ratio_cells.append(f"{statistics.mean(r):.2f}x ({min(r):.2f}-{max(r):.2f})" if r else "")
            gets = [f"{w.mean(e, 'gets', c):,.0f}" if w.mean(e, "gets", c) is not None else "" for c in fetching]
            out.append(f"| {e + 1} | " + " | ".join(rates + ratio_cells + gets) + " |")
    return out


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        sys.exit(2)
    rows, rounds = load(sys.argv[1]), int(sys.argv[2])
    print("\n".join(summary(rows, rounds) if "--summary" in sys.argv[3:] else detail(rows, rounds)))
