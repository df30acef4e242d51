"""--expand-tar: each NAME.tar object is also a directory NAME.tar.d/ of its members, read with ranged GETs
of their bytes in the tar; ImageFolder works on it unchanged; `os2g index` writes the sidecar index."""

import errno
import io
import json
import os
import tarfile
import tempfile
from pathlib import Path

import pytest

from conftest import Mount, Tally, payload, read_verified, run_os2g, sha256
from test_split import Agent

LONG = "deep/" + "d" * 120 + "/" + "f" * 130 + ".bin"


def jpeg(seed):
    from PIL import Image
    image = Image.new("RGB", (40, 32), ((seed * 37) % 256, (seed * 91) % 256, 90))
    out = io.BytesIO()
    image.save(out, format="JPEG")
    return out.getvalue()


def make_tar(members, fmt, directories=(), symlink=False):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=fmt) as tar:
        for d in directories:
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        if symlink:
            info = tarfile.TarInfo("link.jpg")
            info.type = tarfile.SYMTYPE
            info.linkname = "cls_a/000.jpg"
            tar.addfile(info)
        for path, body in members.items():
            info = tarfile.TarInfo(path)
            info.size = len(body)
            info.mtime = 1_700_000_000
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


IMAGES = {f"cls_{c}/{i:03d}.jpg": jpeg(10 * i + ord(c)) for c in "ab" for i in range(12)}
MIXED = {"top.txt": payload(1000, 1), "empty.txt": b"", LONG: payload(300_000, 2), "a/b/c/nested.bin": payload(70_000, 3)}
SHARDS = {
    "shards/train-000.tar": make_tar(IMAGES, tarfile.GNU_FORMAT, symlink=True),
    "shards/train-001.tar": make_tar(MIXED, tarfile.PAX_FORMAT, directories=["empty-dir/"]),
}
CUT = make_tar({"first.bin": payload(5000, 4), "second.bin": payload(50_000, 5)}, tarfile.GNU_FORMAT)
OBJECTS = {**SHARDS, "bad/cut.tar": CUT[:512 + 5120 + 512 + 20_000], "plain.txt": b"plain"}


@pytest.fixture(scope="module")
def bucket(s3):
    name = s3.bucket("it-tar", OBJECTS)
    yield name
    s3.drop(name)


@pytest.fixture(scope="module")
def mnt(s3, bucket):
    m = Mount(s3, bucket, ["--expand-tar", "--chunk-size", "1M"])
    yield m
    m.stop()


def stats(m):
    return json.loads((m.path / ".os2g/stats").read_text())


def members_of(tar_bytes):
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def check_tree(root, tar_bytes):
    expected = members_of(tar_bytes)
    found = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}
    assert found == set(expected)
    for name, body in expected.items():
        assert os.stat(root / name).st_size == len(body)
        read_verified(root / name, sha256(body))
    return len(expected)


def test_each_tar_is_also_a_directory_of_its_members_with_their_exact_bytes(mnt):
    assert sorted(os.listdir(mnt.path / "shards")) == ["train-000.tar", "train-000.tar.d", "train-001.tar", "train-001.tar.d"]
    n = 0
    for key, body in SHARDS.items():
        n += check_tree(mnt.path / (key + ".d"), body)
        read_verified(mnt.path / key, sha256(body))  # the tar itself is still a file
    assert os.path.isdir(mnt.path / "shards/train-001.tar.d/empty-dir")
    assert os.listdir(mnt.path / "shards/train-001.tar.d/empty-dir") == []
    assert os.stat(mnt.path / "shards/train-001.tar.d/top.txt").st_mtime == 1_700_000_000
    assert not os.path.exists(mnt.path / "shards/train-000.tar.d/link.jpg"), "links are skipped"
    tar = stats(mnt)["agent"]["tar"]
    assert tar["indexed_from_headers"] >= 2 and tar["members_skipped"] >= 1
    Tally.add("tar members verified", n)


def test_imagefolder_reads_a_shard_unchanged_with_workers(mnt):
    import torch
    from torchvision import datasets, transforms
    data = datasets.ImageFolder(str(mnt.path / "shards/train-000.tar.d"), transform=transforms.ToTensor())
    assert data.classes == ["cls_a", "cls_b"] and len(data) == 24
    loader = torch.utils.data.DataLoader(data, batch_size=4, shuffle=True, num_workers=2)
    labels = torch.cat([y for _, y in loader])
    assert sorted(labels.tolist()) == [0] * 12 + [1] * 12


def test_a_truncated_tar_fails_only_its_cut_member_with_eio(mnt):
    cut = mnt.path / "bad/cut.tar.d"
    read_verified(cut / "first.bin", sha256(payload(5000, 4)))
    with pytest.raises(OSError) as e:
        (cut / "second.bin").read_bytes()
    assert e.value.errno == errno.EIO
    read_verified(mnt.path / "plain.txt", sha256(b"plain"))


def test_without_the_option_no_tar_is_expanded(s3, bucket):
    m = Mount(s3, bucket)
    try:
        assert sorted(os.listdir(m.path / "shards")) == ["train-000.tar", "train-001.tar"]
        assert "tar" not in stats(m)["agent"]
    finally:
        m.stop()


def test_os2g_index_writes_a_sidecar_that_a_mount_uses_instead_of_the_headers(s3, bucket):
    r = run_os2g("index", f"{bucket}/shards/train-001.tar", "--endpoint", s3.endpoint,
                 env={"AWS_ACCESS_KEY_ID": "os2g-demo", "AWS_SECRET_ACCESS_KEY": "os2g-demo-secret"})
    assert r.returncode == 0, r.stderr
    assert r.stderr.startswith("indexed 4 files"), r.stderr
    sidecar = s3.client.get_object(Bucket=bucket, Key="shards/train-001.tar.idx")["Body"].read().decode()
    assert json.loads(sidecar.splitlines()[0])["format"] == "os2g-tar-index"
    r = run_os2g("index", f"{bucket}/plain.txt", "--endpoint", s3.endpoint)
    assert r.returncode == 2 and "BUCKET/KEY.tar" in r.stderr

    m = Mount(s3, bucket, ["--expand-tar"])
    try:
        check_tree(m.path / "shards/train-001.tar.d", SHARDS["shards/train-001.tar"])
        tar = stats(m)["agent"]["tar"]
        assert tar["indexed_from_sidecar"] == 1 and tar["indexed_from_headers"] == 0
    finally:
        m.stop()
        s3.client.delete_object(Bucket=bucket, Key="shards/train-001.tar.idx")


def test_members_travel_through_split_mode_and_warm(s3, bucket):
    work = Path(tempfile.mkdtemp(prefix="os2g-tar-split-"))
    agent = Agent(s3, work)
    m = Mount(s3, bucket, ["--agent", f"unix:{agent.socket}", "--expand-tar"], credentials=False)
    try:
        r = run_os2g("warm", str(m.path / "shards/train-000.tar.d"))
        assert r.returncode == 0 and r.stdout.startswith("warmed 24 files"), r.stdout + r.stderr
        gets = stats(m)["agent"]["gets"]
        check_tree(m.path / "shards/train-000.tar.d", SHARDS["shards/train-000.tar"])
        assert stats(m)["agent"]["gets"] == gets, "warmed members read without a GET"
        check_tree(m.path / "shards/train-001.tar.d", SHARDS["shards/train-001.tar"])
    finally:
        m.stop()
        agent.stop()
