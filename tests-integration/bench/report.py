"""Prints the benchmark results file as a table."""

import json
import sys

GIB = 1 << 30


def main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    print(f"{'workload':<28}{'result':>22}{'gateway CPU s/GiB':>20}{'peak RSS MiB':>14}")
    for r in rows:
        rss = r["gateway_peak_rss_bytes"] / (1 << 20)
        if r["workload"] == "small":
            for e in r["epochs"]:
                name = f"shuffled small, {r['readers']} readers, epoch {e['epoch']}"
                per_gib = e["gateway_cpu_s"] / (e["bytes"] / GIB)
                print(f"{name:<28}{e['files_per_s']:>14.0f} files/s{per_gib:>20.2f}{rss:>14.0f}")
        elif r["workload"] == "sequential":
            name = f"sequential 256 MiB, {r['readers']} reader(s)"
            per_gib = r["gateway_cpu_s"] / (r["bytes"] / GIB)
            print(f"{name:<28}{r['mb_per_s']:>17.0f} MB/s{per_gib:>20.2f}{rss:>14.0f}")
        elif r["workload"] == "walk":
            print(f"{'walk+stat ' + str(r['objects']) + ' objects':<28}{r['seconds']:>20.2f} s{'':>20}{rss:>14.0f}")
        elif r["workload"] == "ttfb":
            print(f"{'time to first byte':<28}{r['seconds'] * 1000:>19.1f} ms{'':>20}{rss:>14.0f}")


if __name__ == "__main__":
    main(sys.argv[1])
