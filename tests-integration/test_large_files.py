"""Large files read the ways loaders read them: torch.load of a checkpoint, a safetensors file mapped,
np.load(mmap_mode='r') scanned and sampled, a tar shard streamed by DataLoader workers, cp and dd. Every
file is larger than the staging region and no multiple of the chunk or the page; the bytes are equal
every time. A changed object is EIO, never mixed bytes; a reader that stops half way leaves nothing
pinned and nothing in flight."""

import errno
import io
import json
import mmap
import random
import shutil
import struct
import subprocess
import tarfile
import time

import numpy as np
import pytest
import torch

from conftest import Mount, forget_pages, payload, sha256

STAGING = "32M"  # every file here is larger: chunks are evicted while the file is still being read


def shim_stats(m):
    return json.loads((m.path / ".os2g" / "stats").read_text())


def checkpoint():
    """A state dict of odd-sized tensors, ~50 MB: torch.load seeks about its zip and reads in many sizes."""
    g = torch.Generator().manual_seed(34)
    return {f"layer{i}.weight": torch.randn(1000 + 37 * i, 1200 + i, generator=g) for i in range(10)}


def safetensors_bytes(tensors):
    """The safetensors layout: an 8-byte little-endian header length, a JSON header, then the tensors' bytes."""
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def tar_shard():
    """A WebDataset-style shard, ~60 MB: samples of several files each, of sizes from bytes to megabytes."""
    r = random.Random(7)
    out, members = io.BytesIO(), {}
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for i in range(120):
            for ext, size in (("jpg", r.randrange(50_000, 900_000)), ("cls", r.randrange(1, 8)), ("json", r.randrange(100, 3000))):
                name = f"sample{i:05d}.{ext}"
                body = payload(size, 1000 + 3 * i + len(ext))
                info = tarfile.TarInfo(name)
                info.size = size
                tar.addfile(info, io.BytesIO(body))
                members[name] = sha256(body)
    return out.getvalue(), members


@pytest.fixture(scope="module")
def large(s3):
    tensors = checkpoint()
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    array = np.random.default_rng(3).standard_normal((9_001, 1_333), dtype=np.float32)
    npy = io.BytesIO()
    np.save(npy, array)
    shard, members = tar_shard()
    objects = {
        "models/ckpt.pt": buffer.getvalue(),
        "models/weights.safetensors": safetensors_bytes(tensors),
        "arrays/x.npy": npy.getvalue(),
        "shards/train-000.tar": shard,
        "blobs/odd.bin": payload(77 * (1 << 20) + 4097, 34),
    }
    s3.bucket("it-large", objects)
    m = Mount(s3, "it-large", ["--staging-size", STAGING])
    yield m, tensors, array, members, objects
    assert m.stop() == 0
    s3.drop("it-large")


def test_torch_load_of_a_checkpoint(large):
    m, tensors, _, _, objects = large
    forget_pages(m.path / "models/ckpt.pt")
    loaded = torch.load(m.path / "models/ckpt.pt")
    assert loaded.keys() == tensors.keys()
    for name, t in tensors.items():
        assert torch.equal(loaded[name], t), name


def test_safetensors_file_mapped_as_the_library_maps_it(large):
    m, tensors, _, _, objects = large
    path = m.path / "models/weights.safetensors"
    forget_pages(path)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
        (n,) = struct.unpack("<Q", mm[:8])
        header = json.loads(mm[8:8 + n])
        for name in reversed(list(header)):  # not in file order: the mapping faults in where it is touched
            start, end = header[name]["data_offsets"]
            t = torch.frombuffer(mm, dtype=torch.float32, count=(end - start) // 4, offset=8 + n + start)
            assert torch.equal(t.reshape(header[name]["shape"]), tensors[name]), name
            del t
        body = objects["models/weights.safetensors"]
        r = random.Random(5)
        for _ in range(200):
            at = r.randrange(len(body))
            length = r.randrange(1, 300_000)
            assert mm[at:at + length] == body[at:at + length]


def test_numpy_memmap_scanned_in_order_then_sampled(large):
    m, _, array, _, _ = large
    forget_pages(m.path / "arrays/x.npy")
    mapped = np.load(m.path / "arrays/x.npy", mmap_mode="r")
    assert mapped.shape == array.shape
    for row in range(0, array.shape[0], 997):
        assert np.array_equal(mapped[row:row + 997], array[row:row + 997]), row
    r = random.Random(9)
    for _ in range(100):
        row = r.randrange(array.shape[0])
        assert np.array_equal(mapped[row], array[row])


class ShardMembers(torch.utils.data.IterableDataset):
    """Each DataLoader worker streams the whole shard (`r|`: no seeking) and yields its share of the members."""

    def __init__(self, path):
        self.path = path

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        with tarfile.open(self.path, mode="r|") as tar:
            for i, member in enumerate(tar):
                if i % info.num_workers == info.id:
                    yield member.name, sha256(tar.extractfile(member).read())


@pytest.mark.parametrize("workers", [2, 4])
def test_tar_shard_streamed_by_dataloader_workers(large, workers):
    m, _, _, members, _ = large
    forget_pages(m.path / "shards/train-000.tar")
    loader = torch.utils.data.DataLoader(ShardMembers(str(m.path / "shards/train-000.tar")), batch_size=None,
                                         num_workers=workers)
    assert dict(loader) == members


@pytest.mark.parametrize("tool", ["cp", "dd"])
def test_cp_and_dd_copy_the_bytes(large, tool, tmp_path):
    m, _, _, _, objects = large
    src = m.path / "blobs/odd.bin"
    forget_pages(src)
    dst = tmp_path / "odd.bin"
    if tool == "cp":
        shutil.copyfile(src, dst)  # copy_file_range, falling back to reads
        subprocess.run(["cp", str(src), str(tmp_path / "odd-cp.bin")], check=True)
        assert sha256((tmp_path / "odd-cp.bin").read_bytes()) == sha256(objects["blobs/odd.bin"])
    else:
        subprocess.run(["dd", f"if={src}", f"of={dst}", "bs=4M", "status=none"], check=True)
    assert sha256(dst.read_bytes()) == sha256(objects["blobs/odd.bin"])


def test_a_reader_that_stops_half_way_leaves_nothing_pinned_or_in_flight(large):
    m, _, _, _, objects = large
    path = m.path / "blobs/odd.bin"
    forget_pages(path)
    with open(path, "rb", buffering=0) as f:
        assert f.read(20 << 20) == objects["blobs/odd.bin"][: 20 << 20]
    deadline = time.time() + 10
    while True:
        staging = shim_stats(m)["agent"]["staging"]
        if staging["pinned_chunks"] == 0 and staging["in_flight_bytes"] == 0:
            break
        assert staging["in_flight_bytes"] <= 32 << 20, staging
        assert time.time() < deadline, f"still held 10 s after the reader stopped: {staging}"
        time.sleep(0.1)


def test_an_object_changed_mid_read_is_eio_never_mixed_bytes(s3):
    size = 64 * (1 << 20) + 123
    old, new = payload(size, 40), payload(size, 41)
    s3.bucket("it-large-changed", {"obj.bin": old})
    m = Mount(s3, "it-large-changed", ["--staging-size", STAGING, "--metadata-ttl", "1"])
    try:
        read = bytearray()
        with open(m.path / "obj.bin", "rb", buffering=0) as f:
            read += f.read(8 << 20)
            s3.client.put_object(Bucket="it-large-changed", Key="obj.bin", Body=new)
            with pytest.raises(OSError) as e:
                while chunk := f.read(1 << 20):
                    read += chunk
            assert e.value.errno == errno.EIO
        assert bytes(read) == old[: len(read)], "only the old object's bytes, up to the EIO"
        time.sleep(1.5)
        forget_pages(m.path / "obj.bin")
        assert sha256((m.path / "obj.bin").read_bytes()) == sha256(new), "a new open reads the new object"
    finally:
        assert m.stop() == 0
        s3.drop("it-large-changed")
