"""Seeds the benchmark bucket through the S3 API, deterministically; skips it when a manifest object
says the same dataset is already there. Then warms the server (a JVM): passes of the requests the mounts
make of the small and the large files until its JIT compilers are quiet, and prints how many passes
that took.

    seed.py ENDPOINT BUCKET SMALL_FILES LARGE_FILES LARGE_MIB TREE_OBJECTS [SERVER_PID]
"""

import hashlib
import json
import os
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
from botocore.config import Config


ZST_KEY = "zst/text-1g.jsonl.zst"
LARGE_RANGE = 8 << 20  # the ranged GET size os2g reads large files in
# ~1 GB of ~125 KB JPEGs, as separate objects (tarsrc/) and as 8 tar shards of the same files (shards/)
TAR_FILES = 8000
SHARDS = 8


def jpeg(seed):
    from io import BytesIO
    from PIL import Image
    r = random.Random(seed)
    side = 360 + r.randrange(80)  # random pixels at quality 85: ~100-150 KB, a typical ImageNet JPEG size
    image = Image.frombytes("RGB", (side, side), r.randbytes(side * side * 3))
    out = BytesIO()
    image.save(out, format="JPEG", quality=85)
    return out.getvalue()


def tar_path(i):
    return f"class_{i % 10:02d}/img_{i:05d}.jpg"


def seed_tar_files(s3, bucket):
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: s3.put_object(Bucket=bucket, Key="tarsrc/" + tar_path(i), Body=jpeg(200_000 + i)),
                      range(TAR_FILES)))
    print(f"seeded {TAR_FILES} JPEGs under tarsrc/", file=sys.stderr)


def seed_shards(s3, bucket):
    """The tarsrc/ JPEGs, read back from the bucket, packed into tar shards (GNU format, file i in shard
    i % SHARDS) with their own paths."""
    import io
    import tarfile
    for k in range(SHARDS):
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for i in range(k, TAR_FILES, SHARDS):
                body = s3.get_object(Bucket=bucket, Key="tarsrc/" + tar_path(i))["Body"].read()
                info = tarfile.TarInfo(tar_path(i))
                info.size = len(body)
                info.mtime = 1_700_000_000
                tar.addfile(info, io.BytesIO(body))
        out.seek(0)
        s3.upload_fileobj(out, bucket, f"shards/train-{k:03d}.tar")
        s3.delete_object(Bucket=bucket, Key=f"shards/train-{k:03d}.tar.idx")  # stale: run.sh indexes again
    print(f"seeded {SHARDS} tar shards of the {TAR_FILES} tarsrc/ JPEGs", file=sys.stderr)


def seed_zst(s3, bucket):
    """1 GiB of text (64 MiB of random words, 16 times: zstd's window does not reach back 64 MiB, so it
    compresses like the words do, about 3:1) as one .zst with its size in the frame, as `zstd FILE` writes."""
    import io
    import subprocess
    r = random.Random(5)
    words = [bytes(r.choice(b"abcdefghijklmnop") for _ in range(r.randrange(3, 10))) for _ in range(20_000)]
    block = b" ".join(r.choices(words, k=11_000_000))[: 64 << 20]
    zst = subprocess.run(["zstd", "-q", "-3", "-T0", "-c", f"--stream-size={16 * len(block)}"],
                         input=block * 16, capture_output=True, check=True).stdout
    s3.upload_fileobj(io.BytesIO(zst), bucket, ZST_KEY)
    print(f"seeded {ZST_KEY}: {16 * len(block) >> 20} MiB in {len(zst) >> 20} MiB", file=sys.stderr)


MODEL_GIB = 2  # torch.save checkpoint; the safetensors file and the .npy are 1 GiB, the huge file 4 GiB


def seed_large_paths(s3, bucket):
    """The large files of the large-file workloads, each written to a local file first and uploaded in
    parts: a torch.save checkpoint (MODEL_GIB GiB of float32 tensors of several shapes), the same kind of
    weights as a safetensors file (its layout: 8-byte header length, JSON header, tensor bytes), a
    float32 .npy, and one 4 GiB file of bytes."""
    import tempfile
    import numpy as np
    import torch
    from boto3.s3.transfer import TransferConfig
    transfer = TransferConfig(multipart_chunksize=64 << 20, max_concurrency=8)
    g = torch.Generator().manual_seed(34)

    def upload(key, write):
        with tempfile.NamedTemporaryFile(dir=os.environ.get("TMPDIR", "/var/tmp")) as f:
            write(f)
            f.flush()
            s3.upload_file(f.name, bucket, key, Config=transfer)
        print(f"seeded {key}", file=sys.stderr)

    def tensors(gib):
        out, total, i = {}, 0, 0
        while total < gib << 30:
            rows = min(4096 + 512 * (i % 5), ((gib << 30) - total) // (4 * 8192) or 1)
            out[f"layers.{i}.weight"] = torch.randn(rows, 8192, generator=g)
            total += rows * 8192 * 4
            i += 1
        return out

    upload("models/ckpt-2g.pt", lambda f: torch.save(tensors(MODEL_GIB), f))

    def safetensors(f):
        header, at, weights = {}, 0, tensors(1)
        for name, t in weights.items():
            n = t.numel() * 4
            header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + n]}
            at += n
        text = json.dumps(header).encode()
        f.write(len(text).to_bytes(8, "little") + text)
        for t in weights.values():
            f.write(t.numpy().tobytes())
    upload("models/weights.safetensors", safetensors)
    upload("arrays/x-1g.npy", lambda f: np.save(f, np.random.default_rng(3).standard_normal(1 << 28, dtype=np.float32).reshape(-1, 1024)))

    def huge(f):
        block = np.random.default_rng(4).integers(0, 256, 64 << 20, dtype=np.uint8).tobytes()
        for _ in range(64):
            f.write(block)
    upload("huge/file-4g.bin", huge)


# parts added after the base dataset, each seeded when the manifest lacks it (or what it is built from
# was seeded again): name -> (manifest value, seeder, the part it is built from)
EXTRAS = {"tar_files": (TAR_FILES, seed_tar_files, None), "shards": (f"{SHARDS} of tarsrc", seed_shards, "tar_files"),
          "zst": (ZST_KEY, seed_zst, None), "large_paths": (f"ckpt {MODEL_GIB} GiB, safetensors, npy, 4 GiB", seed_large_paths, None)}


def main():
    endpoint, bucket = sys.argv[1], sys.argv[2]
    small, large, large_mib, tree = map(int, sys.argv[3:7])
    # version 2: the small files are real JPEGs (random pixels, ~125 KB), so loaders can decode them
    spec = {"small": small, "large": large, "large_mib": large_mib, "tree": tree, "version": 3}
    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="os2g-demo",
                      aws_secret_access_key="os2g-demo-secret", region_name="us-east-1",
                      config=Config(max_pool_connections=32, retries={"max_attempts": 5}))
    manifest = None
    try:
        s3.head_bucket(Bucket=bucket)
        manifest = json.loads(s3.get_object(Bucket=bucket, Key="manifest.json")["Body"].read())
    except Exception:
        pass
    if manifest is None or any(manifest.get(k) != v for k, v in spec.items()):
        seed_base(s3, bucket, small, large, large_mib, tree)
        manifest = dict(spec)
    seeded = set()
    for name, (value, seed, source) in EXTRAS.items():
        if manifest.get(name) != value or source in seeded:
            seed(s3, bucket)
            manifest[name] = value
            seeded.add(name)
            s3.put_object(Bucket=bucket, Key="manifest.json", Body=json.dumps(manifest).encode())
    if not seeded:
        print("dataset already seeded", file=sys.stderr)
    warm_server(s3, bucket, int(sys.argv[7]) if len(sys.argv) > 7 else None)


def compiler_cpu_seconds(pid):
    """CPU seconds the JVM `pid` has spent in its JIT compiler threads (C1 and C2)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if "Compiler" in (task / "comm").read_text():
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
        except OSError:  # the thread ended
            pass
    return total / os.sysconf("SC_CLK_TCK")


def warm_server(s3, bucket, server_pid=None, quiet_s=0.2, max_passes=10):
    """The server is a JVM (S3Proxy) started for this run. Cold, it spent 11.9 CPU s on one os2g epoch of
    5,000 files, warm 6.7 with C1 and 4.4 once C2 has compiled its request path; its compilers still took
    2.2 and 1.0 CPU s in the third and fourth pass of plain ranged GETs, and 2.3 more in the first os2g
    epoch after six. Without this the first target measured, os2g, paid for the server's warm-up on the
    same two cores; a real object store is warm, and not on the reader's machine at all. A pass makes the
    requests the mounts make: a delimited listing of each directory, per small file a HEAD and a ranged
    GET with If-Match, and each large file in 8 MiB ranged GETs (streaming a large body is a path of its
    own: unwarmed, the server spent 2.7, then 1.5, then 1.0 CPU s on three split reads of the same GiB,
    and the first target's sequential rows paid for it). Passes go on until one costs the compilers
    under `quiet_s` (3 passes without a pid)."""
    def listed(prefix):
        return [(o["Key"], o["Size"], o["ETag"])
                for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
                for o in page.get("Contents", []) if not o["Key"].endswith("/")]  # the filesystem backend lists directories
    objects = listed("small/")
    directories = sorted({key.rsplit("/", 1)[0] + "/" for key, _, _ in objects})
    ranges = [(key, start, min(start + LARGE_RANGE, size) - 1, etag)
              for key, size, etag in listed("large/") for start in range(0, size, LARGE_RANGE)]

    def request(o):
        key, size, etag = o
        s3.head_object(Bucket=bucket, Key=key)
        s3.get_object(Bucket=bucket, Key=key, Range=f"bytes=0-{size - 1}", IfMatch=etag)["Body"].read()

    def ranged(r):
        key, first, last, etag = r
        body = s3.get_object(Bucket=bucket, Key=key, Range=f"bytes={first}-{last}", IfMatch=etag)["Body"]
        while body.read(1 << 20):
            pass

    compiled = []
    with ThreadPoolExecutor(16) as pool:
        for _ in range(max_passes if server_pid else 3):
            before = compiler_cpu_seconds(server_pid) if server_pid else 0
            for d in directories:
                for _ in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=d, Delimiter="/"):
                    pass
            list(pool.map(request, objects))
            list(pool.map(ranged, ranges))
            if server_pid:
                compiled.append(compiler_cpu_seconds(server_pid) - before)
                if compiled[-1] < quiet_s:
                    break
    spent = f"; its JIT compilers took {', '.join(f'{c:.1f}' for c in compiled)} CPU s" if compiled else ""
    print(f"{len(compiled) or 3} passes over {len(objects)} files and {len(ranges)} ranges of large ones{spent}")


def seed_base(s3, bucket, small, large, large_mib, tree):
    try:
        s3.create_bucket(Bucket=bucket)
    except Exception:
        pass
    rng = random.Random(42)
    objects = []
    for i in range(small):
        objects.append((f"small/class_{i % 10:02d}/img_{i:05d}.jpg", 80_000 + rng.randrange(90_000), i))
    for i in range(tree):
        objects.append((f"tree/d{i // 1000:02d}/s{(i // 100) % 10}/f{i:05d}.bin", 64, 10**6 + i))

    def body(size, seed):
        block = hashlib.sha256(str(seed).encode()).digest() * 2048  # 64 KiB
        return (block * (size // len(block) + 1))[:size]

    def put(item):
        key, size, seed = item
        data = jpeg(seed) if key.startswith("small/") else body(size, seed)
        s3.put_object(Bucket=bucket, Key=key, Body=data)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, objects))
    chunk = body(1 << 20, 7)
    for i in range(large):
        import io
        data = io.BytesIO(chunk * large_mib)
        s3.upload_fileobj(data, bucket, f"large/shard-{i}.bin")
    print(f"seeded {small} small, {large} x {large_mib} MiB, {tree} tree objects", file=sys.stderr)


if __name__ == "__main__":
    main()
