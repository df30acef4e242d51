"""Load, a staging region under pressure, and the mount's lifecycle: many readers get the right bytes
with memory bounded by heap + staging and nothing leaked; a full region slows readers, never
deadlocks them; signals unmount cleanly; a killed mount is cleared with fusermount -u and its
staging dir is reclaimed by the next mount."""

import errno
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import CREDENTIALS_ENV, OS2G, Mount, Tally, mounted, payload, read_verified, run_os2g, sha256

# the launcher's -Xmx: the mount's heap bound
HEAP = 512 << 20
LOAD_SECONDS = int(os.environ.get("OS2G_LOAD_SECONDS", "20"))


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def uncache(f):
    """Drops the file's pages from the kernel page cache, so that the next read reaches the mount."""
    os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def threads_and_fds(pid):
    return len(os.listdir(f"/proc/{pid}/task")), len(os.listdir(f"/proc/{pid}/fd"))


def unmount_report(m):
    found = re.search(r"staging at unmount: (\d+) chunks staged, (\d+) pinned, (\d+) bytes in flight", m.output())
    assert found, m.output()[-2000:]
    return int(found.group(2)), int(found.group(3))


def test_64_readers_over_mixed_files_for_a_sustained_run(s3):
    rng = random.Random(64)
    small = {f"small/{i:04d}.jpg": payload(rng.randrange(20_000, 300_000), 10_000 + i) for i in range(300)}
    large = {f"large/{i}.bin": payload(20 << 20, 20_000 + i) for i in range(6)}
    s3.bucket("it-load", {**small, **large})
    small_hashes = {k: sha256(v) for k, v in small.items()}
    staging = 96 << 20  # smaller than the data: eviction runs all along
    m = Mount(s3, "it-load", ["--staging-size", "96M", "--max-readahead", "16M", "--metadata-ttl", "forever"])
    stop = threading.Event()
    counts = {"reads": 0, "bytes": 0}
    lock = threading.Lock()

    def reader(seed):
        r = random.Random(seed)
        reads = nbytes = 0
        while not stop.is_set():
            if r.random() < 0.8:
                key = r.choice(list(small))
                with open(m.path / key, "rb") as f:
                    got = f.read()
                    uncache(f)
                assert sha256(got) == small_hashes[key], f"wrong bytes from {key}"
                Tally.add("reads verified (sha256)")
            else:
                key = r.choice(list(large))
                body = large[key]
                offset = r.randrange(len(body))
                length = r.randrange(1, 4 << 20)
                with open(m.path / key, "rb") as f:
                    f.seek(offset)
                    got = f.read(length)
                    uncache(f)
                assert got == body[offset:offset + length], f"wrong bytes from {key} at {offset}"
                Tally.add("reads verified (bytes equal)")
            nbytes += len(got)
            Tally.add("bytes verified", len(got))
            reads += 1
        with lock:
            counts["reads"] += reads
            counts["bytes"] += nbytes

    def run(seconds, seed):
        stop.clear()
        threads = [threading.Thread(target=reader, args=(seed + i,)) for i in range(64)]
        for t in threads:
            t.start()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join(120)
            assert not t.is_alive(), "a reader hung"

    try:
        pid = m.proc.pid
        run(5, 0)  # warm-up: FUSE worker threads and pooled connections reach their working numbers
        time.sleep(2)
        threads_before, fds_before = threads_and_fds(pid)
        counts.update(reads=0, bytes=0)
        run(LOAD_SECONDS, 1000)
        time.sleep(2)
        threads_after, fds_after = threads_and_fds(pid)
        peak = proc_status(pid, "VmHWM")
        print(f"64 readers, {LOAD_SECONDS} s: {counts['reads']} reads, {counts['bytes'] / 2**20:.0f} MiB, "
              f"threads {threads_before} -> {threads_after}, fds {fds_before} -> {fds_after}, peak RSS {peak / 2**20:.0f} MiB")
        Tally.add("load: reads by 64 readers", counts["reads"])
        Tally.add("load: peak RSS MiB", peak >> 20)
        assert counts["reads"] > 64
        # thousands of opens went by: a leak per open or per fetch would show in the thousands
        assert threads_after <= threads_before + 8, (threads_before, threads_after)
        assert fds_after <= fds_before + 40, (fds_before, fds_after)
        # heap + staging + the JVM's own (code, metaspace, thread stacks, libfuse buffers)
        assert peak < HEAP + staging + (384 << 20), f"peak RSS {peak >> 20} MiB"
    finally:
        stop.set()
        assert m.stop() == 0
    assert unmount_report(m) == (0, 0), "every staging page is free once the readers are done"
    assert not m.staging.exists()
    s3.drop("it-load")


def test_full_staging_region_slows_readers_but_never_deadlocks_them(s3):
    """Two chunks of staging for 16 readers of 8 MiB files: each waits its turn, none fails."""
    files = {f"f{i}.bin": payload(8 << 20, 300 + i) for i in range(6)}
    files.update({f"s{i}.bin": payload(200_000, 400 + i) for i in range(20)})
    s3.bucket("it-tiny", files)
    hashes = {k: sha256(v) for k, v in files.items()}
    m = Mount(s3, "it-tiny", ["--staging-size", "2M", "--chunk-size", "1M", "--max-readahead", "4M"])
    try:
        names = [n for n in files] * 2
        random.Random(2).shuffle(names)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(lambda n: read_verified(m.path / n, hashes[n]), names, timeout=300))
    finally:
        assert m.stop() == 0
    assert unmount_report(m) == (0, 0)
    s3.drop("it-tiny")


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "disk-cache"])
def test_a_staging_region_too_small_for_its_readers_never_fails_a_read(s3, tmp_path, cache):
    """32 readers of random ranges up to 4 MiB of four 32 MiB files through 16 MiB of staging (two
    chunks): chunks are evicted before their readers pin them, again and again; readers wait their turn
    (or read from the disk cache) and none fails. O_DIRECT: every read reaches the mount."""
    import mmap
    size = 32 << 20
    files = {f"r{i}.bin": payload(size, 800 + i) for i in range(4)}
    s3.bucket("it-squeeze", files)
    extra = ["--staging-size", "16M", "--cache-dir", str(tmp_path / "cache")] if cache else ["--staging-size", "16M"]
    m = Mount(s3, "it-squeeze", extra)
    stop = time.monotonic() + 6
    checked = []

    def reader(seed):
        rng = random.Random(seed)
        buf = mmap.mmap(-1, 4 << 20)
        n = 0
        while time.monotonic() < stop:
            name = rng.choice(list(files))
            length = rng.randrange(1, 1025) * 4096
            offset = rng.randrange(0, size - length) // 4096 * 4096
            fd = os.open(m.path / name, os.O_RDONLY | os.O_DIRECT)
            try:
                got = os.preadv(fd, [memoryview(buf)[:length]], offset)
            finally:
                os.close(fd)
            assert got == length and buf[:length] == files[name][offset:offset + length], (name, offset, length)
            n += 1
        checked.append(n)

    try:
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(reader, range(32), timeout=300))
        stats = json.loads((m.path / ".os2g" / "stats").read_text())
        assert stats["errors"] == 0, stats["errors_by_errno"]
        assert stats["agent"]["staging"]["evictions"] > 0
        Tally.add("reads through a squeezed staging region, none failed", sum(checked))
    finally:
        assert m.stop() == 0
    s3.drop("it-squeeze")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_during_heavy_reads_unmounts_cleanly(s3, sig):
    bucket = f"it-sig-{sig.name.lower()}"
    s3.bucket(bucket, {f"f{i}.bin": payload(6 << 20, 500 + i) for i in range(8)})
    m = Mount(s3, bucket, ["--chunk-size", "1M"])
    outcomes = []

    def reader(i):
        try:
            while True:
                data = (m.path / f"f{i}.bin").read_bytes()
                assert data == payload(6 << 20, 500 + i)
                outcomes.append("ok")
        except OSError as e:
            outcomes.append(errno.errorcode.get(e.errno, e.errno))

    threads = [threading.Thread(target=reader, args=(i,), daemon=True) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(2)
    assert m.stop(sig) == 0, m.output()
    for t in threads:
        t.join(30)
        assert not t.is_alive(), "a reader hung after the unmount"
    assert not mounted(m.path)
    assert not m.staging.exists()
    assert "ok" in outcomes
    assert unmount_report(m)[1] == 0, "no fetch left holding pages"
    Tally.add("lifecycle cases")
    s3.drop(bucket)


def test_kill_9_then_fusermount_u_and_the_next_mount_reclaims_the_staging_dir(s3):
    s3.bucket("it-kill", {"a.bin": payload(3 << 20, 7)})
    m = Mount(s3, "it-kill")
    assert (m.path / "a.bin").read_bytes() == payload(3 << 20, 7)
    m.proc.kill()
    m.proc.wait(30)
    assert mounted(m.path), "a killed FUSE server leaves its mount behind"
    with pytest.raises(OSError) as e:
        os.listdir(m.path)
    assert e.value.errno == errno.ENOTCONN
    assert list(m.staging.glob("segment-*")), "the killed mount's segments are still there"
    subprocess.run(["fusermount3", "-u", str(m.path)], check=True, timeout=30)
    assert not mounted(m.path)

    again = subprocess.Popen([OS2G, "mount", "it-kill", str(m.path), "--endpoint", s3.endpoint,
                              "--staging-dir", str(m.staging)], stdout=m.log, stderr=subprocess.STDOUT,
                             env={**os.environ, **CREDENTIALS_ENV})
    m.proc = again
    deadline = time.time() + 90
    while not (mounted(m.path) and m.output().count(" mounted ") >= 2):
        assert again.poll() is None and time.time() < deadline, m.output()
        time.sleep(0.05)
    try:
        assert "reclaiming staging dir" in m.output()
        assert (m.path / "a.bin").read_bytes() == payload(3 << 20, 7)
    finally:
        assert m.stop() == 0
    assert not m.staging.exists()
    Tally.add("lifecycle cases")


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs")


@pytest.fixture
def small_tmpfs():
    d = Path(tempfile.mkdtemp(prefix="os2g-tmpfs-"))
    mounted_here = []

    def make(size, *options):
        subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join([f"size={size}", "mode=0755", *options]), "tmpfs", str(d)],
                       check=True)
        mounted_here.append(d)
        return d

    yield make
    for p in mounted_here:
        subprocess.run(["umount", "-l", str(p)], check=False)
    shutil.rmtree(d, ignore_errors=True)


def refused(result, *words):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Exception" not in result.stderr, result.stderr
    for w in words:
        assert w in lines[0], lines[0]
    Tally.add("bad inputs refused")


@needs_root
def test_staging_dir_on_a_read_only_file_system_is_refused(s3, small_tmpfs, tmp_path):
    s3.bucket("it-stage-ro", {"a": b"1"})
    fs = small_tmpfs("8M", "ro")
    (tmp_path / "mnt").mkdir()
    r = run_os2g("mount", "it-stage-ro", str(tmp_path / "mnt"), "--endpoint", s3.endpoint,
                 "--staging-dir", str(fs / "stage"), env=CREDENTIALS_ENV)
    refused(r, "read-only")


@needs_root
def test_staging_dir_on_a_full_file_system_is_refused(s3, small_tmpfs, tmp_path):
    s3.bucket("it-stage-full", {"a": b"1"})
    fs = small_tmpfs("8M")
    subprocess.run(["dd", "if=/dev/zero", f"of={fs}/filler", "bs=1M", "count=8"], capture_output=True)
    (tmp_path / "mnt").mkdir()
    r = run_os2g("mount", "it-stage-full", str(tmp_path / "mnt"), "--endpoint", s3.endpoint,
                 "--staging-dir", str(fs / "stage"), "--staging-size", "4M", "--chunk-size", "1M", env=CREDENTIALS_ENV)
    refused(r, "free", "--staging-size")


@needs_root
def test_staging_file_system_filled_after_mount_is_eio_then_recovers(s3, small_tmpfs):
    s3.bucket("it-stage-later", {"big.bin": payload(4 << 20, 8)})
    fs = small_tmpfs("40M")
    m = Mount(s3, "it-stage-later", ["--staging-size", "32M", "--chunk-size", "1M"], staging=fs / "stage")
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={fs}/filler", "bs=1M", "count=40"], capture_output=True)
        with pytest.raises(OSError) as e:
            (m.path / "big.bin").read_bytes()
        assert e.value.errno == errno.EIO
        assert m.proc.poll() is None, "the mount survived"
        os.unlink(fs / "filler")
        time.sleep(1.2)
        assert (m.path / "big.bin").read_bytes() == payload(4 << 20, 8)
        Tally.add("lifecycle cases")
    finally:
        assert m.stop() == 0
