"""Benchmark workloads, run against a mounted directory. Each prints one JSON line with its numbers, the
gateway process's CPU seconds (utime + stime from /proc) and peak RSS (VmHWM), and over the same
interval the split-mode agent's CPU seconds, the S3 server's (it shares this machine's cores), the
CPU seconds the hypervisor stole from this machine (/proc/stat: a noisy neighbour, not the workload)
and each CPU's idle seconds (a target whose CPUs sat idle waited on something other than CPU).

    workloads.py MOUNT GATEWAY_PID WORKLOAD [--readers N] [--server-pid PID] [--agent-pid PID]
"""

import argparse
import glob
import json
import os
import random
import subprocess
import sys
import time
from multiprocessing import Pool

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
import os2g  # noqa: E402  (--hint: tells an os2g mount the order; a no-op anywhere else)

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    if pid <= 0:
        return 0.0  # the local-copy target has no gateway
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def steal_and_idle_seconds():
    """What the hypervisor stole from all CPUs, then each CPU's idle (with iowait), from /proc/stat."""
    with open("/proc/stat") as f:
        steal = int(f.readline().split()[8]) / CLOCK_TICKS
        idle = [(int(fields[4]) + int(fields[5])) / CLOCK_TICKS
                for fields in (line.split() for line in f) if fields[0].startswith("cpu")]
    return steal, idle


class Meter:
    """CPU over one measured interval: the gateway's, the agent's (split mode), the S3 server's, what the
    hypervisor stole, and each CPU's idle time."""

    def __init__(self, a):
        self.pid, self.server_pid, self.agent_pid, self.mount = a.pid, a.server_pid, a.agent_pid, a.mount
        self.gets = os2g_gets(self.mount)
        self.start = self._now()

    def _now(self):
        steal, idle = steal_and_idle_seconds()
        return cpu_seconds(self.pid), cpu_seconds(self.server_pid), steal, cpu_seconds(self.agent_pid), idle

    def done(self):
        now = self._now()
        gateway, server, steal, agent = (b - a for a, b in zip(self.start[:4], now[:4]))
        gets = os2g_gets(self.mount)
        return {"gateway_cpu_s": gateway, "server_cpu_s": server, "steal_s": steal,
                "idle_by_cpu_s": [round(b - a, 2) for a, b in zip(self.start[4], now[4])],
                **({"agent_cpu_s": agent} if self.agent_pid else {}),
                **({"gets": gets - self.gets} if gets is not None and self.gets is not None else {})}


def os2g_gets(mount):
    """The GETs an os2g mount has sent so far (its /.os2g/stats), or None for any other file system."""
    try:
        with open(os.path.join(mount, ".os2g", "stats")) as f:
            stats = json.load(f)
    except (OSError, ValueError):
        return None
    return stats.get("agent", stats).get("gets")


def peak_rss_bytes(pid):
    if pid <= 0:
        return 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def read_whole(paths):
    total = 0
    for p in paths:
        with open(p, "rb", buffering=0) as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                total += len(b)
    return total


def files_under(root):
    out = []
    for d, _, names in os.walk(root):
        out.extend(os.path.join(d, n) for n in names)
    return sorted(out)


def parallel_read(paths, readers):
    shards = [paths[i::readers] for i in range(readers)]
    with Pool(readers) as pool:
        t0 = time.perf_counter()
        total = sum(pool.map(read_whole, shards))
        return total, time.perf_counter() - t0


def drop_page_cache():
    """Drops the kernel's page cache: the next epoch's reads reach the mount (its staging, its disk cache)."""
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as drop:
        drop.write("3\n")


def dataloader(a):
    """The PyTorch loader of an ImageFolder training job: PIL decode, resize 224, batch 32, 2 workers, shuffled."""
    import torch
    from torch.utils.data import DataLoader, Subset, SubsetRandomSampler
    from torchvision import datasets, transforms

    torch.manual_seed(0)
    tf = transforms.Compose([transforms.Resize(224), transforms.CenterCrop(224), transforms.ToTensor()])
    dataset = datasets.ImageFolder(os.path.join(a.mount, "small"), transform=tf)
    chosen = random.Random(3).sample(range(len(dataset)), min(a.limit, len(dataset))) if a.limit else range(len(dataset))
    read_bytes = sum(os.path.getsize(dataset.samples[i][0]) for i in chosen)
    if a.hint:
        # the loader's own shuffled order, told to the mount each epoch by the os2g client's sampler
        sampler = os2g.Os2gSampler(SubsetRandomSampler(chosen), [p for p, _ in dataset.samples])
        loader = DataLoader(dataset, batch_size=32, num_workers=2, sampler=sampler)
    else:
        loader = DataLoader(Subset(dataset, chosen) if a.limit else dataset, batch_size=32, num_workers=2, shuffle=True)
    epochs = []
    for epoch in range(a.epochs):
        if epoch == 1 and a.large_between:
            read_large(a.mount, a.large_between)  # other work on the mount between the epochs, unmeasured
        if epoch > 0 and a.drop_between:
            drop_page_cache()
        meter = Meter(a)
        t0 = time.perf_counter()
        samples = 0
        for images, _ in loader:
            samples += images.shape[0]
        seconds = time.perf_counter() - t0
        epochs.append({"epoch": epoch + 1, "samples": samples, "bytes": read_bytes, "seconds": seconds,
                       "samples_per_s": samples / seconds, **meter.done()})
    if a.epochs == 1:
        return epochs[0]
    return {"epochs": epochs}


def read_large(mount, total):
    """Reads {total} bytes of MOUNT/large's files in order, a whole file at a time (shards, a checkpoint)."""
    left = total
    for path in sorted(glob.glob(os.path.join(mount, "large", "*"))):
        with open(path, "rb", buffering=0) as f:
            while left > 0:
                b = f.read(min(1 << 20, left))
                if not b:
                    break
                left -= len(b)
        if left <= 0:
            return


def large_file(a):
    """One way loaders read a large file; returns (bytes read, what was done)."""
    root = a.mount
    if a.workload == "torch-load":
        import torch
        path = os.path.join(root, "models", "ckpt-2g.pt")
        state = torch.load(path, map_location="cpu")
        assert sum(t.numel() * t.element_size() for t in state.values()) > 0
        return os.path.getsize(path), "torch.load of a torch.save checkpoint"
    if a.workload == "safetensors":
        import mmap
        import torch
        path = os.path.join(root, "models", "weights.safetensors")
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
            n = int.from_bytes(mm[:8], "little")
            header = json.loads(mm[8:8 + n])
            # as safetensors' load_file: the file mapped, each tensor copied out of the mapping
            tensors = {name: torch.frombuffer(mm, dtype=torch.float32, count=(h["data_offsets"][1] - h["data_offsets"][0]) // 4,
                                              offset=8 + n + h["data_offsets"][0]).clone()
                       for name, h in header.items() if name != "__metadata__"}
            del tensors
        return os.path.getsize(path), "the file mapped, its header parsed, each tensor copied out (as safetensors.torch.load_file)"
    if a.workload == "npy-mmap":
        import numpy as np
        path = os.path.join(root, "arrays", "x-1g.npy")
        x = np.load(path, mmap_mode="r")
        rows = (64 << 20) // (x.shape[1] * x.itemsize)
        for start in range(0, x.shape[0], rows):
            np.add.reduce(x[start:start + rows], axis=None)
        return os.path.getsize(path), "np.load(mmap_mode='r') summed 64 MiB at a time, in order"
    if a.workload == "tar-stream":
        import tarfile
        import torch

        class ShardStream(torch.utils.data.IterableDataset):
            """WebDataset-style: each worker streams its share of the shards (`r|`: no seeking), yielding member sizes."""

            def __iter__(self):
                info = torch.utils.data.get_worker_info()
                for shard in shards[info.id::info.num_workers]:
                    with tarfile.open(shard, mode="r|") as tar:
                        for member in tar:
                            yield len(tar.extractfile(member).read())

        shards = sorted(glob.glob(os.path.join(root, "shards", "*.tar")))
        loader = torch.utils.data.DataLoader(ShardStream(), batch_size=None, num_workers=a.readers)
        sum(loader)
        return sum(os.path.getsize(s) for s in shards), f"{len(shards)} tar shards streamed (tarfile r|) by {a.readers} DataLoader workers"
    if a.workload in ("cp", "dd"):
        path = os.path.join(root, "models", "ckpt-2g.pt")
        command = ["cp", path, "/dev/null"] if a.workload == "cp" else ["dd", f"if={path}", "of=/dev/null", "bs=4M", "status=none"]
        subprocess.run(command, check=True)
        return os.path.getsize(path), " ".join(command[:1] + (["FILE /dev/null"] if a.workload == "cp" else ["bs=4M"]))
    raise ValueError(a.workload)


def curl_config(endpoint, key, ranges):
    """A curl config that GETs `ranges` of `key`, each to /dev/null, signed with SigV4 by curl itself."""
    entries = [f'url = "{endpoint}/bench/{key}"\nrange = {first}-{last}\noutput = "/dev/null"\n'
               f'header = "x-amz-content-sha256: UNSIGNED-PAYLOAD"\naws-sigv4 = "aws:amz:us-east-1:s3"\n'
               f'user = "os2g-demo:os2g-demo-secret"\n' for first, last in ranges]
    return "next\n".join(entries)


def direct(a, key, size):
    """The store's own speed from this machine, no file system: curl GETs `key` in 8 MiB ranges,
    `--direct-streams` at a time (the parallel ranged GETs of a download tool); returns seconds."""
    ranges = [(start, min(start + (8 << 20), size) - 1) for start in range(0, size, 8 << 20)]
    t0 = time.perf_counter()
    subprocess.run(["curl", "-s", "-f", "--parallel", "--parallel-max", str(a.direct_streams), "-K", "-"],
                   input=curl_config(a.direct, key, ranges), text=True, check=True)
    return time.perf_counter() - t0


def direct_first_byte(a, key):
    """Seconds to the first byte of a 4 KiB ranged GET, as curl measures it (a fresh connection)."""
    out = subprocess.run(["curl", "-s", "-f", "-o", "/dev/null", "-w", "%{time_starttransfer}", "-K", "-"],
                         input=curl_config(a.direct, key, [(0, 4095)]), text=True, capture_output=True, check=True)
    return float(out.stdout)


class Repeating:
    """A file object of `size` bytes that repeats `block`: what boto3 uploads, with no copy of it all in memory."""

    def __init__(self, block, size):
        self.block, self.size, self.at = block, size, 0

    def read(self, n=-1):
        n = self.size - self.at if n is None or n < 0 else min(n, self.size - self.at)
        out = bytearray()
        while len(out) < n:
            start = (self.at + len(out)) % len(self.block)
            out += self.block[start:start + n - len(out)]
        self.at += n
        return bytes(out)


def write(a):
    """Writes `--files` files of `--size` bytes, `--writers` at once, under MOUNT/writes/ (or uploads them
    with boto3 for --direct), and times it until every object is in the bucket at its size: a mount whose
    close returns before its upload (a write cache) is timed to the upload's end. The objects are deleted
    afterwards, untimed."""
    import boto3
    from concurrent.futures import ThreadPoolExecutor
    client = boto3.client("s3", endpoint_url=a.endpoint, aws_access_key_id="os2g-demo",
                          aws_secret_access_key="os2g-demo-secret", region_name="us-east-1")
    block = os.urandom(64 << 20)
    prefix = f"writes/{os.getpid()}-{time.time_ns()}"
    keys = [f"{prefix}/shard-{i:03d}.bin" for i in range(a.files)]

    if a.direct:
        from boto3.s3.transfer import TransferConfig
        config = TransferConfig(multipart_threshold=8 << 20, multipart_chunksize=8 << 20, max_concurrency=8)

        def put(key):
            client.upload_fileobj(Repeating(block, a.size), "bench", key, Config=config)
        how = "boto3 upload_fileobj, 8 MiB parts, 8 threads per file"
    else:
        def put(key):
            view = memoryview(block)
            with open(os.path.join(a.mount, key), "wb", buffering=0) as f:
                written = 0
                while written < a.size:
                    start = written % len(block)
                    n = min(1 << 20, a.size - written, len(block) - start)
                    written += f.write(view[start:start + n])
        how = "write() of 1 MiB at a time"
    meter = Meter(a)
    t0 = time.perf_counter()
    if not a.direct:
        os.makedirs(os.path.join(a.mount, prefix))
    with ThreadPoolExecutor(a.writers) as pool:
        list(pool.map(put, keys))
    closed = time.perf_counter() - t0
    deadline = time.time() + 600
    while True:  # one LIST per look (the server delays each request by its latency)
        listed = client.list_objects_v2(Bucket="bench", Prefix=prefix + "/").get("Contents", [])
        if sum(1 for o in listed if o["Key"] in keys and o["Size"] == a.size) == len(keys):
            break
        if time.time() > deadline:
            raise RuntimeError(f"the objects under {prefix} did not reach the bucket within 600 s")
        time.sleep(0.05)
    seconds = time.perf_counter() - t0
    total = a.files * a.size
    result = dict(files=a.files, bytes=total, seconds=seconds, close_seconds=closed, mb_per_s=total / 1e6 / seconds,
                  how=how, **meter.done())
    listed = client.list_objects_v2(Bucket="bench", Prefix=prefix).get("Contents", [])
    gone = [{"Key": o["Key"]} for o in listed] + [{"Key": prefix + "/"}, {"Key": "writes/"}]
    client.delete_objects(Bucket="bench", Delete={"Objects": gone})
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mount")
    ap.add_argument("pid", type=int)
    ap.add_argument("workload", choices=["small", "sequential", "walk", "ttfb", "dataloader", "zstd", "torch-load", "safetensors",
                                         "npy-mmap", "tar-stream", "cp", "dd", "write"])
    ap.add_argument("--readers", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="read only this many files (small, dataloader)")
    ap.add_argument("--tree", default="tree", help="directory to walk")
    ap.add_argument("--warm-first", action="store_true",
                    help="sequential: read another large file first, unmeasured, and drop the page cache (a mount past its start-up)")
    ap.add_argument("--root", default="small", help="small: the directory whose files are read (default: small)")
    ap.add_argument("--tar", action="store_true",
                    help="small: read the members of MOUNT/shards/*.tar.d (an os2g --expand-tar mount) instead of MOUNT/small")
    ap.add_argument("--server-pid", type=int, default=0, help="the S3 server's process, when it runs on this machine")
    ap.add_argument("--agent-pid", type=int, default=0, help="the agent's process of a split-mode mount")
    ap.add_argument("--drop-between", action="store_true",
                    help="drop the page cache before each epoch after the first (what a disk cache serves, not the page cache)")
    ap.add_argument("--large-between", type=int, default=0, metavar="BYTES",
                    help="dataloader: read this many bytes of MOUNT/large's files in order after the first epoch (other work)")
    ap.add_argument("--hint", action="store_true",
                    help="tell the mount the read order first (MOUNT/.os2g/prefetch; nothing on other file systems)")
    ap.add_argument("--file", help="sequential: read this file (relative to MOUNT) instead of the first of MOUNT/large")
    ap.add_argument("--direct", metavar="ENDPOINT",
                    help="sequential, ttfb: no mount; GET the objects from ENDPOINT with curl (the store's own speed)")
    ap.add_argument("--direct-streams", type=int, default=8, help="--direct: ranged GETs in flight at once")
    ap.add_argument("--files", type=int, default=1, help="write: how many files")
    ap.add_argument("--size", type=int, default=1 << 30, help="write: bytes per file")
    ap.add_argument("--writers", type=int, default=1, help="write: files written at once")
    ap.add_argument("--endpoint", help="write: the S3 endpoint, to see the objects arrive (and upload to, with --direct)")
    a = ap.parse_args()

    result = {"workload": a.workload, "readers": a.readers}
    if a.workload == "small":
        t0 = time.perf_counter()
        if a.tar:  # listing the shards' members indexes them (from their sidecars when present): timed apart
            paths = [p for d in sorted(glob.glob(os.path.join(a.mount, "shards", "*.tar.d"))) for p in files_under(d)]
            result["list_seconds"] = time.perf_counter() - t0
        else:
            paths = files_under(os.path.join(a.mount, a.root))
        random.Random(1).shuffle(paths)
        if a.limit:
            paths = paths[: a.limit]
        epochs = []
        for epoch in range(a.epochs):
            if epoch > 0 and a.drop_between:
                drop_page_cache()
            meter = Meter(a)
            hint_seconds = 0.0
            if a.hint:  # counted in the epoch's time
                t0 = time.perf_counter()
                os2g.prefetch(paths)  # reader r reads paths[r::readers]: together, about this order
                hint_seconds = time.perf_counter() - t0
            total, seconds = parallel_read(paths, a.readers)
            seconds += hint_seconds
            epochs.append({"epoch": epoch + 1, "files": len(paths), "bytes": total, "seconds": seconds,
                           "files_per_s": len(paths) / seconds, "mb_per_s": total / 1e6 / seconds,
                           **meter.done()})
            random.Random(epoch + 2).shuffle(paths)
        result["epochs"] = epochs
    elif a.workload == "sequential" and a.direct:
        paths = [a.file] if a.file else [os.path.relpath(p, a.mount) for p in files_under(os.path.join(a.mount, "large"))[: a.readers]]
        meter = Meter(a)
        total = sum(os.path.getsize(os.path.join(a.mount, p)) for p in paths)
        seconds = sum(direct(a, p, os.path.getsize(os.path.join(a.mount, p))) for p in paths)
        result.update(files=len(paths), bytes=total, seconds=seconds, mb_per_s=total / 1e6 / seconds,
                      how=f"curl, {a.direct_streams} ranged GETs of 8 MiB in flight", **meter.done())
    elif a.workload == "sequential":
        large = [os.path.join(a.mount, a.file)] if a.file else files_under(os.path.join(a.mount, "large"))
        paths = large[: a.readers]
        if a.warm_first:
            read_whole([large[-1]])  # a file none of the readers reads: the gateway's read path runs once
            with open("/proc/sys/vm/drop_caches", "w") as drop:
                drop.write("3\n")
        meter = Meter(a)
        total, seconds = parallel_read(paths, a.readers)
        result.update(files=len(paths), bytes=total, seconds=seconds, mb_per_s=total / 1e6 / seconds, **meter.done())
    elif a.workload == "walk":
        meter = Meter(a)
        t0 = time.perf_counter()
        count = 0
        for d, _, names in os.walk(os.path.join(a.mount, a.tree)):
            for n in names:
                os.stat(os.path.join(d, n))
                count += 1
        result.update(objects=count, seconds=time.perf_counter() - t0, **meter.done())
    elif a.workload == "dataloader":
        result.update(dataloader(a))
    elif a.workload == "zstd":
        # the decompressed view where the mount has one (os2g --decompress), else `zstd -dc` of the object
        compressed = os.path.join(a.mount, "zst", "text-1g.jsonl.zst")
        plain = compressed[: -len(".zst")]
        meter = Meter(a)
        t0 = time.perf_counter()
        if os.path.exists(plain):
            total = read_whole([plain])
            how = "read of the decompressed view"
        else:
            out = subprocess.run(f"zstd -dc '{compressed}' | wc -c", shell=True, capture_output=True, text=True, check=True)
            total = int(out.stdout.split()[0])
            how = "zstd -dc of the .zst"
        seconds = time.perf_counter() - t0
        result.update(files=1, bytes=total, seconds=seconds, mb_per_s=total / 1e6 / seconds, how=how, **meter.done())
    elif a.workload == "ttfb":
        # the first file a fresh mount reads, then another (the mount past its first read)
        first, then = files_under(os.path.join(a.mount, "large"))[-1:-3:-1]
        if a.direct:
            result.update(seconds=direct_first_byte(a, os.path.relpath(first, a.mount)),
                          seconds_next=direct_first_byte(a, os.path.relpath(then, a.mount)), how="curl, 4 KiB ranged GET")
        else:
            timed = []
            for path in (first, then):
                t0 = time.perf_counter()
                with open(path, "rb", buffering=0) as f:
                    f.read(4096)
                timed.append(time.perf_counter() - t0)
            result.update(seconds=timed[0], seconds_next=timed[1])
    elif a.workload == "write":
        result.update(write(a))
    elif a.workload in ("torch-load", "safetensors", "npy-mmap", "tar-stream", "cp", "dd"):
        meter = Meter(a)
        t0 = time.perf_counter()
        total, how = large_file(a)
        seconds = time.perf_counter() - t0
        result.update(bytes=total, seconds=seconds, mb_per_s=total / 1e6 / seconds, how=how, **meter.done())
    result["gateway_peak_rss_bytes"] = peak_rss_bytes(a.pid)
    print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
