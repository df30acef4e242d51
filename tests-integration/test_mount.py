"""A real mount of a real S3 server, read the way training code reads: bytes, preads, mmap, walks."""

import errno
import json
import mmap
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import CREDENTIALS_ENV, ROOT, Mount, mounted, payload, sha256

CHUNK = 1 << 20  # the suite mounts with --chunk-size 1M so that chunk edges are cheap to cross

FILES = {
    "train/empty.bin": b"",
    "train/one.bin": b"x",
    "train/small.bin": payload(125_000, 1),
    "train/exact-chunk.bin": payload(CHUNK, 2),
    "train/crossing.bin": payload(CHUNK + 1, 3),
    "train/multi.bin": payload(5 * CHUNK + 12_345, 4),
    "odd/with space.txt": payload(10, 5),
    "odd/ünïcødé/ファイル.txt": payload(20, 6),
    "odd/clash": payload(30, 7),           # hidden by the directory odd/clash/
    "odd/clash/inside.txt": payload(40, 8),
    "odd/../escape.txt": payload(50, 9),   # never reachable: `..` is not a name
    "odd/./dot.txt": payload(60, 10),
    "odd//double.txt": payload(70, 11),
    "marker/": b"",
}


@pytest.fixture(scope="module")
def mount(s3):
    array = np.arange(300_000, dtype=np.float32).reshape(1000, 300)
    import io
    buffer = io.BytesIO()
    np.save(buffer, array)
    objects = dict(FILES)
    objects["arrays/a.npy"] = buffer.getvalue()
    s3.bucket("it-data", objects)
    m = Mount(s3, "it-data", ["--chunk-size", "1M", "--staging-size", "16M", "--max-readahead", "4M"])
    yield m
    assert m.stop() == 0


def readable(key):
    return key in FILES and not key.endswith("/") and key not in (
        "odd/clash", "odd/../escape.txt", "odd/./dot.txt", "odd//double.txt")


def test_bytes_equal_the_objects(mount):
    for key, body in FILES.items():
        if readable(key):
            with open(mount.path / key, "rb") as f:
                assert sha256(f.read()) == sha256(body), key
            assert os.stat(mount.path / key).st_size == len(body)


def test_a_small_file_read_by_python_takes_one_read_request(mount):
    """st_blksize is 128 KiB: Python's buffered reader (what PIL reads through) asks that much first,
    the kernel reads ahead from it, and a 125 KB file comes in one READ (with st_blksize 4 KiB: three,
    16 KiB, 64 KiB, then the rest)."""
    path = mount.path / "train/small.bin"
    assert os.stat(path).st_blksize == 128 * 1024
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # what earlier tests left in the page cache
    os.close(fd)
    reads = json.loads((mount.path / ".os2g/stats").read_text())["reads"]
    with open(path, "rb") as f:
        data = f.read(16)  # the magic bytes first, as PIL reads an image
        while chunk := f.read(65536):
            data += chunk
    assert data == FILES["train/small.bin"]
    assert json.loads((mount.path / ".os2g/stats").read_text())["reads"] - reads == 1


def test_random_preads(mount):
    body = FILES["train/multi.bin"]
    rng = random.Random(5)
    fd = os.open(mount.path / "train/multi.bin", os.O_RDONLY)
    try:
        for _ in range(300):
            offset = rng.randrange(len(body) + 10)
            length = rng.randrange(1, 3 * CHUNK)
            assert os.pread(fd, length, offset) == body[offset:offset + length]
    finally:
        os.close(fd)


def test_mmap_from_python(mount):
    body = FILES["train/multi.bin"]
    with open(mount.path / "train/multi.bin", "rb") as f:
        with mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as m:
            assert len(m) == len(body)
            assert m[CHUNK - 5:CHUNK + 5] == body[CHUNK - 5:CHUNK + 5]
            assert sha256(m[:]) == sha256(body)


def test_numpy_memmap_load(mount):
    a = np.load(mount.path / "arrays/a.npy", mmap_mode="r")
    assert a.shape == (1000, 300)
    assert float(a[999, 299]) == 299_999.0
    assert np.array_equal(np.asarray(a[::7]), np.arange(300_000, dtype=np.float32).reshape(1000, 300)[::7])


def test_directory_tree_and_odd_keys(mount):
    assert sorted(os.listdir(mount.path)) == ["arrays", "marker", "odd", "train"]
    assert os.listdir(mount.path / "marker") == []
    # readdir(3) itself (Python's listdir hides them): "." and ".." are there, as on any directory
    listed = subprocess.run(["ls", "-a", str(mount.path / "train")], capture_output=True, text=True).stdout.split()
    assert listed[:2] == [".", ".."], listed
    odd = sorted(os.listdir(mount.path / "odd"))
    assert odd == ["clash", "with space.txt", "ünïcødé"]
    assert os.path.isdir(mount.path / "odd/clash"), "the directory wins over the key of the same name"
    assert os.listdir(mount.path / "odd/clash") == ["inside.txt"]
    assert not os.path.exists(mount.path / "escape.txt")
    st = os.stat(mount.path / "train")
    assert st.st_mode & 0o777 == 0o555
    assert os.stat(mount.path / "train/small.bin").st_mode & 0o777 == 0o444
    assert os.stat(mount.path / "train/small.bin").st_blocks == (125_000 + 511) // 512
    vfs = os.statvfs(mount.path)
    assert vfs.f_namemax == 255


def test_missing_is_enoent(mount):
    with pytest.raises(FileNotFoundError):
        open(mount.path / "train/nope.bin", "rb")
    with pytest.raises(FileNotFoundError):
        os.stat(mount.path / "nope/deeper")


@pytest.mark.parametrize("action", [
    lambda p: open(p / "new.txt", "wb"),
    lambda p: open(p / "train/small.bin", "r+b"),
    lambda p: os.mkdir(p / "newdir"),
    lambda p: os.unlink(p / "train/small.bin"),
    lambda p: os.rename(p / "train/small.bin", p / "train/moved.bin"),
    lambda p: os.truncate(p / "train/small.bin", 0),
    lambda p: os.chmod(p / "train/small.bin", 0o777),
    lambda p: os.rmdir(p / "marker"),
], ids=["create", "open-rw", "mkdir", "unlink", "rename", "truncate", "chmod", "rmdir"])
def test_writes_are_erofs(mount, action):
    with pytest.raises(OSError) as e:
        action(mount.path)
    assert e.value.errno == errno.EROFS


def test_walk_and_stat_of_5000_objects(s3):
    objects = {f"tree/d{i // 1000:02d}/s{(i // 100) % 10}/f{i:05d}.bin": b"w" * (i % 13) for i in range(5_000)}
    s3.bucket("it-walk", objects, threads=32)
    m = Mount(s3, "it-walk")
    try:
        t0 = time.time()
        seen = {}
        for root, _, files in os.walk(m.path):
            for name in files:
                path = os.path.join(root, name)
                seen[os.path.relpath(path, m.path)] = os.stat(path).st_size
        elapsed = time.time() - t0
        assert seen == {k: len(v) for k, v in objects.items()}
        print(f"walk+stat of 5,000 objects: {elapsed:.2f} s")
    finally:
        assert m.stop() == 0


def test_sigterm_during_reads_unmounts_cleanly(s3):
    s3.bucket("it-term", {f"f{i}": payload(200_000, i) for i in range(20)})
    m = Mount(s3, "it-term")
    for i in range(10):
        assert (m.path / f"f{i}").read_bytes() == payload(200_000, i)
    assert m.staging.is_dir()
    assert m.stop(signal.SIGTERM) == 0
    assert not mounted(m.path)
    assert not m.staging.exists(), "the staging dir is removed at unmount"
    shutil.rmtree(m.dir, ignore_errors=True)


def test_fusermount_u_ends_the_mount_process(s3):
    s3.bucket("it-umount", {"a": b"1"})
    m = Mount(s3, "it-umount")
    os.system(f"fusermount3 -u {m.path}")
    assert m.proc.wait(30) == 0
    assert not m.staging.exists()


def test_a_mount_passed_as_a_descriptor(s3, tmp_path):
    """As a CSI plugin does: a privileged process mounts with fd=N and hands /dev/fd/N to os2g."""
    import ctypes
    files = {f"d/f{i}": payload(300_000 + i, 40 + i) for i in range(4)}
    s3.bucket("it-fd", files)
    target = tmp_path / "mnt"
    target.mkdir()
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR)
    data = f"fd={fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
    assert libc.mount(b"it-fd", str(target).encode(), b"fuse.os2g", 6, data) == 0, os.strerror(ctypes.get_errno())
    log = open(tmp_path / "mount.log", "w+")
    proc = subprocess.Popen([str(ROOT / "os2g"), "mount", "it-fd", f"/dev/fd/{fd}", "--endpoint", s3.endpoint,
                             "--staging-size", "16M"], pass_fds=[fd], stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, **CREDENTIALS_ENV})
    os.close(fd)  # the mount is os2g's now
    try:
        deadline = time.time() + 90
        while " mounted " not in (tmp_path / "mount.log").read_text():
            assert proc.poll() is None and time.time() < deadline, (tmp_path / "mount.log").read_text()
            time.sleep(0.05)
        staging = [p for p in Path(f"/dev/shm/os2g-{os.geteuid()}").iterdir() if p.name == f"fd-{proc.pid}"]
        assert staging, "the staging dir is named after the process"
        for key, data in files.items():
            assert sha256((target / key).read_bytes()) == sha256(data)
        assert sorted(os.listdir(target / "d")) == ["f0", "f1", "f2", "f3"]
    finally:
        subprocess.run(["umount", str(target)], check=True)  # the mounter unmounts
    assert proc.wait(30) == 0, (tmp_path / "mount.log").read_text()
    assert not staging[0].exists(), "the staging dir is removed when the session ends"
