"""Turns a results file of bench.py into a table on stdout, and optionally into docs/BENCHMARKS.md and
a PNG chart: one table per workload, each target's result, its gateway CPU seconds per GiB, the S3
server's CPU seconds and the machine's stolen seconds over the same interval, peak RSS, and ratios to
the best peer (s3fs, rclone) and to the local copy.

    report.py RESULTS [--markdown FILE] [--png FILE] [--rounds FILE N]

--rounds: the workloads run.sh ran again in N rounds (rounds.py), summarised in a section of their own.
"""

import argparse
import json
import os
from collections import OrderedDict

import rounds as rounds_summary

GIB = 1 << 30
PEERS = ("s3fs", "rclone")
# workload label -> (title, value key, unit, higher is better)
WORKLOADS = OrderedDict([
    ("small-1", ("Shuffled whole-file reads of ~125 KB JPEGs, 1 reader", "files_per_s", "files/s", True)),
    ("small-4", ("Shuffled whole-file reads of ~125 KB JPEGs, 4 reader processes", "files_per_s", "files/s", True)),
    ("seq-1", ("Sequential read of a 256 MiB file, 1 reader", "mb_per_s", "MB/s", True)),
    ("seq-1-warm", ("The same read on a mount that has read another 256 MiB file first (its start-up, JIT included, past)", "mb_per_s", "MB/s", True)),
    ("seq-4", ("Sequential reads of four 256 MiB files, 4 readers", "mb_per_s", "MB/s", True)),
    ("walk", ("os.walk + stat of the object tree", "seconds", "s", False)),
    ("seq-huge", ("Sequential read of a 4 GiB file, 1 reader", "mb_per_s", "MB/s", True)),
    ("ttfb", ("Time to first byte of a file not read before: the first read of a fresh mount (the next file's in the flags column)", "seconds", "s", False)),
    ("torch-load", ("torch.load of a 2 GiB checkpoint (torch.save of float32 tensors), MB/s of the file", "mb_per_s", "MB/s", True)),
    ("safetensors", ("A 1 GiB safetensors file mapped and each tensor copied out, as safetensors.torch.load_file does", "mb_per_s", "MB/s", True)),
    ("npy-mmap", ("np.load(mmap_mode='r') of a 1 GiB float32 array, summed 64 MiB at a time in order", "mb_per_s", "MB/s", True)),
    ("tar-stream", ("8 tar shards (~1 GB) streamed with tarfile (r|) by 4 DataLoader workers, WebDataset-style", "mb_per_s", "MB/s", True)),
    ("cp", ("cp of the 2 GiB checkpoint to /dev/null", "mb_per_s", "MB/s", True)),
    ("dd", ("dd bs=4M of the 2 GiB checkpoint to /dev/null", "mb_per_s", "MB/s", True)),
    ("dataloader", ("PyTorch DataLoader over ImageFolder (PIL decode, resize 224, batch 32, 2 workers, shuffled)", "samples_per_s", "samples/s", True)),
    ("small-4-hinted", ("Shuffled whole-file reads of ~125 KB JPEGs, 4 reader processes, the order hinted to /.os2g/prefetch first (cold)", "files_per_s", "files/s", True)),
    ("dataloader-epochs", ("The DataLoader as above, three epochs on one fresh mount, page cache dropped before each", "samples_per_s", "samples/s", True)),
    ("dataloader-after-large", ("The DataLoader as above, on a mount that read 1 GiB of large files in order between epochs 1 and 2, page cache dropped before each epoch", "samples_per_s", "samples/s", True)),
    ("dataloader-hinted", ("PyTorch DataLoader over ImageFolder as above, with os2g.Os2gSampler hinting each epoch's order (cold)", "samples_per_s", "samples/s", True)),
    ("zstd-1", ("1 GiB of text stored as one .zst: os2g reads its --decompress view, the others run zstd -dc on the .zst (decompressed MB/s)", "mb_per_s", "MB/s", True)),
    ("tarsrc-4", ("8,000 ~125 KB JPEGs (~1 GB) as separate objects, shuffled, 4 reader processes (cold)", "files_per_s", "files/s", True)),
    ("tar-4", ("The same 8,000 JPEGs as members of 8 tar shards through --expand-tar (sidecar indexes), shuffled, 4 reader processes (cold); peers and local: tarsrc-4 above", "files_per_s", "files/s", True)),
    ("dataloader-cache", ("Larger than memory: the DataLoader over the ~630 MB of JPEGs with a 256 MiB staging region (2.5x smaller), page cache dropped before each epoch, disk caches emptied first", "samples_per_s", "samples/s", True)),
    ("dataloader-hinted-cache", ("Larger than memory: the hinted DataLoader (os2g.Os2gSampler), 256 MiB staging, one fresh epoch", "samples_per_s", "samples/s", True)),
    ("small-4-cache", ("Larger than memory: shuffled reads of the ~630 MB of JPEGs, 4 readers, 256 MiB staging, page cache dropped before each epoch", "files_per_s", "files/s", True)),
    ("write-ckpt", ("Write of one 2 GiB checkpoint file, 1 MiB per write(), timed until the object is in the bucket", "mb_per_s", "MB/s", True)),
    ("write-dir", ("Write of a directory of 64 files of 32 MiB, 4 writers at once, timed until every object is in the bucket", "mb_per_s", "MB/s", True)),
])


def value(row, key, epoch=0):
    if "epochs" in row:
        return row["epochs"][epoch].get(key) if epoch < len(row["epochs"]) else None
    return row.get(key)


def cpu_per_gib(row, epoch=0):
    if "epochs" in row and epoch >= len(row["epochs"]):
        return None
    source = row["epochs"][epoch] if "epochs" in row else row
    b = source.get("bytes")
    if not b or "gateway_cpu_s" not in source or row.get("target") in ("local", "direct"):
        return None
    return source["gateway_cpu_s"] / (b / GIB)


def agent_cpu_per_gib(row, epoch=0):
    """Split mode: the agent process's CPU over the measured interval (as the gateway's), per GiB read.
    Results from before the interval was metered carry only the whole workload's (both epochs, listing)."""
    source = row["epochs"][epoch] if "epochs" in row and epoch < len(row["epochs"]) else row
    if "agent_cpu_s" in source and source.get("bytes"):
        return source["agent_cpu_s"] / (source["bytes"] / GIB)
    if "agent_cpu_s" not in row:
        return None
    b = sum(e.get("bytes", 0) for e in row["epochs"]) if "epochs" in row else row.get("bytes")
    return row["agent_cpu_s"] / (b / GIB) if b else None


def interval_seconds(row, key, epoch=0):
    """server_cpu_s or steal_s of the measured interval (results from before they were recorded: None)."""
    source = row["epochs"][epoch] if "epochs" in row and epoch < len(row["epochs"]) else row
    return source.get(key)


def load(path):
    meta, rows = {}, []
    for line in open(path):
        if line.strip():
            r = json.loads(line)
            if "meta" in r:
                meta = r["meta"]
            elif "run" in r:
                meta.setdefault("later_runs", []).append(r["run"])
            else:
                rows.append(r)
    return meta, rows


# a workload whose peers' numbers come from another workload over the same files
REFERENCE = {"tar-4": "tarsrc-4"}


def local_reference(rows, key, epoch=0):
    """The local copy's value: the mean of its runs (bench.py runs it first and last, against drift)."""
    values = [value(r, key, epoch) for r in rows if r["target"] == "local" and value(r, key, epoch) is not None]
    return sum(values) / len(values) if values else None


def ratio(v, ref, higher):
    if v is None or ref in (None, 0) or v == 0:
        return None
    return v / ref if higher else ref / v


def tables(meta, rows):
    out = []
    for label, (title, key, unit, higher) in WORKLOADS.items():
        group = [r for r in rows if r.get("label") == label]
        if not group:
            continue
        epochs = list(range(max((len(r["epochs"]) for r in group if "epochs" in r), default=1)))
        for epoch in epochs:
            name = title + (f", epoch {epoch + 1}" + (" (cold)" if epoch == 0 else " (warm)") if len(epochs) > 1 else "")
            ok = [r for r in group if "error" not in r]
            # tar-4 runs on os2g only: its peers and local copy read the same files as separate objects (small-4)
            reference = [r for r in rows if r.get("label") == REFERENCE.get(label) and "error" not in r] or ok
            peer_values = [value(r, key, epoch) for r in reference if r["target"] in PEERS and value(r, key, epoch) is not None]
            best_peer = (max(peer_values) if higher else min(peer_values)) if peer_values else None
            local = local_reference(reference, key, epoch)
            directs = [value(r, key, epoch) for r in ok if r["target"] == "direct"]
            direct = directs[0] if directs else None
            anchor = f'<a id="{label}"></a>' if epoch == 0 else ""
            notes = sorted({r["run_note"] for r in group if r.get("run_note")})
            lines = [f"## {name} {anchor}".rstrip(), "", *(f"{n}\n" for n in notes), f"| target | flags | {unit} | gateway CPU s/GiB | split: agent CPU s/GiB | S3 server CPU s | stolen s | peak RSS MiB | vs best peer | vs local |"
                     + ((" vs direct upload |" if label.startswith("write-") else " vs direct GETs |") if direct else ""), "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if direct else "")]
            for r in group:
                if "error" in r:
                    lines.append(f"| {r['target']} | {r['flags']} | failed: {r['error'][:80]} | | | | | | | |" + (" |" if direct else ""))
                    continue
                v = value(r, key, epoch)
                c = cpu_per_gib(r, epoch)
                a = agent_cpu_per_gib(r, epoch)
                rss = r.get("gateway_peak_rss_bytes", 0) / (1 << 20)
                rp, rl = ratio(v, best_peer, higher), ratio(v, local, higher)
                fmt = (lambda x: f"{x:.3f}" if x < 0.1 else f"{x:.2f}") if unit == "s" else (lambda x: f"{x:,.0f}")
                server, stolen = interval_seconds(r, "server_cpu_s", epoch), interval_seconds(r, "steal_s", epoch)
                flags = r["flags"] + (f"; next file {1000 * r['seconds_next']:.1f} ms" if "seconds_next" in r else "")
                gets = value(r, "gets", epoch)
                flags += f"; {gets:,} GETs" if gets is not None and key == "samples_per_s" else ""
                rd = ratio(v, direct, higher) if direct else None
                lines.append(f"| **{r['target']}** | {flags} | {fmt(v) if v is not None else ''} | "
                             f"{'' if c is None else f'{c:.2f}'} | {'' if a is None else f'{a:.2f}'} | "
                             f"{'' if server is None else f'{server:.1f}'} | {'' if stolen is None else f'{stolen:.1f}'} | {'' if not rss else f'{rss:.0f}'} | "
                             f"{'' if rp is None else f'{rp:.2f}x'} | {'' if rl is None else f'{rl:.2f}x'} |"
                             + ((f" {rd:.2f}x |" if rd is not None else " |") if direct else ""))
            out.append("\n".join(lines) + "\n")
    return out


def rounds_section(rows, n, runs=()):
    """The epoch workloads run again in n rounds, each target in turn: one table per workload; runs: the
    rounds' own run records (their date, build and AOT cache)."""
    titles = {label: f"`{label}`: {title}" for label, (title, *_) in WORKLOADS.items()}
    return "\n".join([
        "## The DataLoader's epochs, in rounds <a id=\"rounds\"></a>", "",
        f"The later-epoch workloads again, {n} rounds after the run above, the local copy and os2g in turn in each round "
        "(the local copy first and last): this machine's speed drifts within a run by more than some goals' margins, "
        "and a round's ratios compare targets that ran minutes apart. Each cell is the mean over the rounds; each ratio "
        "the mean of the rounds' own ratios to the local copy, with the lowest and highest; GETs per epoch are os2g's."
        + (f" Run on {runs[-1].get('date')} at {runs[-1].get('commit', '?')}{aot_clause(runs[-1])}." if runs else ""),
        *rounds_summary.summary(rows, n, titles), ""])


def aot_line(meta):
    """The sentence on the launcher's AOT cache: built before the run, off, or nothing (older runs)."""
    caches = list((meta.get("aot_cache") or {}).values())
    if not caches:
        return ""
    if all(c == "off" for c in caches):
        return " os2g's mounts ran without the launcher's AOT cache (OS2G_AOT_CACHE=off)."
    return (" os2g's mounts start from the launcher's AOT cache of the build, as every mount but a machine's first"
            f" does (built by one unmeasured mount before the run: {'; '.join(caches)}).")


def aot_clause(run):
    """", os2g starting from ..." where the run's os2g mounts had the launcher's AOT cache, else nothing."""
    caches = [c for c in (run.get("aot_cache") or {}).values() if c.endswith(".aot")]
    return ", os2g's mounts starting from the launcher's AOT cache of the build (its default)" if caches else ""


def later_runs_line(meta):
    """A sentence per --resume (or --only) run appended to this one: its workloads, date and build."""
    return "".join(f" The rows of {', '.join(f'`{w}`' for w in run['workloads'].split(',')) if run.get('workloads') else 'the pairs it lacked'}"
                   f"{' (' + run['only'] + ')' if run.get('only') else ''}"
                   f" were run again on {run.get('date')} at {run.get('commit', '?')}{aot_clause(run)}."
                   for run in meta.get("later_runs", []))


def markdown(meta, rows, png="benchmarks.png", rounds=None):
    head = f"""# Benchmarks

Generated by `tests-integration/bench/run.sh{' --quick' if meta.get('quick') else ''}{' --workloads ' + meta['workloads'] if meta.get('workloads') else ''}{' --default-flags' if meta.get('default_flags') else ''}{' --warm-agent ' + str(meta['warm_agent']) if meta.get('warm_agent') else ''}` on {meta.get('date')}:
{meta.get('cpus')} CPUs, kernel {meta.get('kernel')}; {meta.get('os2g')}; s3fs: {meta.get('s3fs')}; rclone: {meta.get('rclone')}.
The S3 server is S3Proxy (filesystem backend) on the same machine with {meta.get('latency_ms')} ms of latency
injected on every GET, LIST and HEAD, run with C2 and warmed before anything is measured (passes of
the mounts' requests until its JIT compilers are quiet: {meta.get('server_warmed') or 'three passes'});
the dataset is seeded through the S3 API.{aot_line(meta)}{later_runs_line(meta)} Every (target, workload)
pair runs on a fresh mount after the page cache is dropped, with the same reader code
(`tests-integration/bench/workloads.py`). "gateway CPU" is the mount process's utime + stime from
/proc over the workload (for os2g-split: the shim's; the agent's, over the same interval, has its own
column); "S3 server CPU" the server's over the same interval (it shares this machine's cores with the
mount and the readers: the local copy's row shows it idle); "stolen" the CPU seconds the hypervisor took
from this machine meanwhile (/proc/stat steal: time neither the readers nor the mount got; rows with much of it
ran on a slower machine than their neighbours); "peak RSS" the mount's VmHWM (for os2g it includes the staging region's shared memory). Ratios: how many times better than the best peer (s3fs or rclone, any flags) and than the
local copy (below 1: slower; the local copy runs first and last, and "vs local" is against the mean of
the two, so the two local rows also show how much this machine's speed drifted during the run). What the numbers mean and where the time goes: [PERFORMANCE.md](PERFORMANCE.md).

## At a glance

Each workload's first (cold) epoch, each target at its default flags (os2g-split: the agent on one
core); every flag set and the warm epochs are in the sections below.

"""
    glance = summary_table(rows) + f"\n![throughput per workload: local copy, os2g, os2g split, s3fs, rclone]({png})\n\n"
    if any(r.get("label", "").endswith("-cache") for r in rows):
        glance += ("The larger-than-memory tables (`*-cache`, at the end) run on their own targets: os2g with a 256 MiB "
                   "staging region without and with `--cache-dir`, s3fs with `use_cache`, rclone with `--vfs-cache-mode full`, "
                   "each disk cache emptied before each workload.\n\n")
    if any(r.get("target", "").startswith(("os2g-split-off", "os2g-net", "os2g-https")) for r in rows):
        glance += ("The links' rows (os2g-split-off: the Unix link with `--agent-replies off`; os2g-net and os2g-net-plain: "
                   "the agent over TCP with mutual TLS, encrypted and authenticated only; os2g-net-veth: across a veth pair; "
                   "os2g-https and os2g-net-plain-https: the store over HTTPS) are in small-4, seq-4 and dataloader only; "
                   "os2g-shared (a second node of a cluster reading through a shared tier) in small-4 and dataloader. "
                   "The later epochs (`dataloader-epochs`, `dataloader-after-large`) run on the local copy and os2g at its "
                   "defaults.\n\n")
    if any(r.get("label", "").startswith("write-") for r in rows):
        glance += ("The write tables (`write-*`, at the end) run on their own targets: os2g with `--allow-writes` (in "
                   "process and split), s3fs at its defaults, rclone with `--vfs-cache-mode writes`, and `direct`: boto3's "
                   "multipart upload of the same bytes with no file system. Each is timed until every object is in the bucket "
                   "(rclone's close returns before its upload); \"gateway CPU\" is the shim's for os2g-split.\n\n")
    if any(r.get("target") == "direct" for r in rows):
        glance += ("`direct` is no file system: curl fetching the same object with 8 ranged GETs of 8 MiB in flight (the "
                   "sequential rows) or one 4 KiB ranged GET (time to first byte), the store's own speed from this machine; "
                   "\"vs direct GETs\" compares each target with it.\n\n")
    if rounds:
        glance += "The later epochs are also run in rounds, each target in turn: [their means](#rounds), after the tables.\n\n"
    return head + glance + "\n".join(tables(meta, rows)) + ("\n" + rounds_section(*rounds) if rounds else "")


# the chart's and the summary's targets, in this order: each at its default flags (the tables have every flag set)
SUMMARY_TARGETS = ("local", "direct", "os2g", "os2g-split", "s3fs", "rclone")
COLOURS = {"local": "#7f7f7f", "direct": "#bcbd22", "os2g": "#1f77b4", "os2g-split": "#17becf", "s3fs": "#ff7f0e", "rclone": "#2ca02c"}


def summary(rows):
    """{label: {target: value}} for the first (cold) epoch, each target at its default flags (local: the
    mean of its runs; tar-4's peers and local copy: their tarsrc-4)."""
    out = OrderedDict()
    for label, (title, key, unit, higher) in WORKLOADS.items():
        if label.endswith("-cache") or label.startswith("write-"):
            continue  # their targets have other flags than the defaults: the tables have them
        group = [r for r in rows if r.get("label") == label and "error" not in r]
        if not group:
            continue
        reference = [r for r in rows if r.get("label") == REFERENCE.get(label) and "error" not in r]
        got = {}
        for t in SUMMARY_TARGETS:
            source = reference if reference and not t.startswith("os2g") else group
            if t == "local":
                v = local_reference(source, key)
            else:
                picked = [r for r in source if r["target"] == t and (r["flags"] == "default" or t in ("os2g-split", "direct"))]
                v = value(picked[0], key) if picked else None
            if v is not None:
                got[t] = v
        out[label] = got
    return out


def summary_table(rows):
    lines = ["| workload | unit | " + " | ".join(SUMMARY_TARGETS) + " |", "|---|---|" + "---|" * len(SUMMARY_TARGETS)]
    for label, got in summary(rows).items():
        unit = WORKLOADS[label][2]
        fmt = (lambda x: f"{x:.3f}" if x < 0.1 else f"{x:.2f}") if unit == "s" else (lambda x: f"{x:,.0f}")
        lines.append(f"| [{label}](#{label}) | {unit}{'' if WORKLOADS[label][3] else ', lower is better'} | "
                     + " | ".join(fmt(got[t]) if t in got else "" for t in SUMMARY_TARGETS) + " |")
    return "\n".join(lines) + "\n"


def chart(meta, rows, path):
    """One panel per unit, linear axes: each workload's value for the local copy, os2g (in process and
    split) and the peers, side by side, with the value written on each bar. Times (walk, time to first
    byte) get a panel each, side by side, the first byte in milliseconds."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = summary(rows)
    rates, times = OrderedDict(), []
    for label in data:
        unit = WORKLOADS[label][2]
        if unit == "s":
            times.append(label)
        else:
            rates.setdefault(unit, []).append(label)
    if not rates and not times:
        return  # only the larger-than-memory workloads, which the chart leaves out
    fig = plt.figure(figsize=(12, 3.4 * (len(rates) + (1 if times else 0))))
    grid = fig.add_gridspec(len(rates) + (1 if times else 0), max(1, len(times)))
    panels = [(fig.add_subplot(grid[i, :]), unit, labels, 1) for i, (unit, labels) in enumerate(rates.items())]
    for j, label in enumerate(times):
        scale = 1000 if data[label] and max(data[label].values()) < 1 else 1
        panels.append((fig.add_subplot(grid[len(rates), j]), ("ms" if scale == 1000 else "s") + " (lower is better)", [label], scale))
    width = 0.8 / len(SUMMARY_TARGETS)
    for ax, unit, labels, scale in panels:
        for i, t in enumerate(SUMMARY_TARGETS):
            xs = [j + (i - (len(SUMMARY_TARGETS) - 1) / 2) * width for j in range(len(labels))]
            vals = [None if data[label].get(t) is None else data[label][t] * scale for label in labels]
            bars = ax.bar(xs, [v or 0 for v in vals], width, label=t, color=COLOURS[t])
            for bar, v in zip(bars, vals):
                if v is not None:
                    ax.annotate(f"{v:.2f}" if v < 10 else f"{v:,.0f}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                                ha="center", va="bottom", fontsize=6, rotation=90, xytext=(0, 2), textcoords="offset points")
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels)
        ax.set_ylabel(unit)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.15)  # room for the values written on the bars
    panels[0][0].legend(fontsize=8, ncol=len(SUMMARY_TARGETS), loc="upper right")
    panels[0][0].set_title(f"os2g, s3fs, rclone and a local copy, default flags, first epoch; S3 server with "
                           f"{meta.get('latency_ms')} ms latency; {meta.get('date')}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--markdown")
    ap.add_argument("--png")
    ap.add_argument("--rounds", nargs=2, metavar=("FILE", "N"))
    a = ap.parse_args()
    meta, rows = load(a.results)
    in_rounds = (rounds_summary.load(a.rounds[0]), int(a.rounds[1]), load(a.rounds[0])[0].get("later_runs", [])) if a.rounds else None
    print("\n".join(tables(meta, rows)))
    if in_rounds:
        print(rounds_section(*in_rounds))
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(meta, rows, os.path.basename(a.png) if a.png else "benchmarks.png", in_rounds))
    if a.png:
        chart(meta, rows, a.png)


if __name__ == "__main__":
    main()
