"""The measuring half of gpu/check.sh: every file of MOUNT to the GPU both ways, bytes compared on the
GPU, GB/s and host CPU seconds per GiB (this process + the mount process MOUNT_PID) for each.
    check.py MOUNT MOUNT_PID"""

import os
import sys
import time

import torch

from os2g.torch import collate_to_gpu

GIB = 1 << 30


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drop_page_cache():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        print("   (not root: the page cache is not dropped between the two ways)")


def read_and_cuda(batch):
    out = []
    for p in batch:
        with open(p, "rb") as f:
            data = bytearray(f.read())
        out.append(torch.frombuffer(data, dtype=torch.uint8).cuda(non_blocking=False))
    return out


def measure(label, paths, load, mount_pid, batch=32):
    drop_page_cache()
    torch.cuda.synchronize()
    start, own, gateway = time.perf_counter(), time.process_time(), cpu_seconds(mount_pid)
    tensors = []
    for i in range(0, len(paths), batch):
        tensors += load(paths[i:i + batch])
    torch.cuda.synchronize()
    wall = time.perf_counter() - start
    cpu = (time.process_time() - own) + (cpu_seconds(mount_pid) - gateway)
    size = sum(t.numel() for t in tensors)
    print(f"   {label:<34} {size / wall / 1e9:7.2f} GB/s   {cpu / (size / GIB):6.2f} host CPU s/GiB   ({size / 1e9:.2f} GB, {wall:.1f} s)")
    return tensors, size / wall / 1e9, cpu / (size / GIB)


def main():
    mount, mount_pid = sys.argv[1], int(sys.argv[2])
    groups = {"small files (JPEGs, batches of 32)": [], "large files": []}
    for d, _, names in os.walk(mount):
        for n in sorted(names):
            p = os.path.join(d, n)
            groups["large files" if "/large/" in p else "small files (JPEGs, batches of 32)"].append(p)
    print(f"== {torch.cuda.get_device_name(0)}; host CPU = this process + the mount process")
    worst = True
    for label, paths in groups.items():
        if not paths:
            continue
        print(f"-- {label}: {len(paths)} files")
        plain, plain_gbs, plain_cpu = measure("read() + .cuda()", paths, read_and_cuda, mount_pid)
        staged, staged_gbs, staged_cpu = measure("os2g.torch (staged, DMA)", paths, lambda b: collate_to_gpu(b, "cuda"), mount_pid)
        for a, b, p in zip(plain, staged, paths):
            if not torch.equal(a, b):
                print(f"BYTES DIFFER: {p}")
                sys.exit(1)
        ok = staged_gbs >= 2 * plain_gbs and staged_cpu <= plain_cpu / 4
        worst = worst and ok
        print(f"   bytes equal on the GPU; staged / read(): {staged_gbs / plain_gbs:.2f}x GB/s, "
              f"{staged_cpu / plain_cpu:.2f}x CPU per GiB (goal: >= 2x, <= 0.25x: {'met' if ok else 'not met'})")
        del plain, staged
        torch.cuda.empty_cache()
    print("== goal " + ("met" if worst else "not met") + " (reported, not asserted)")


if __name__ == "__main__":
    main()
