"""The disk cache below the staging region (--cache-dir): a dataset several times the staging region
reads its second epoch from disk with no GET, a remount (and another agent) reads from the warm cache
with no GET, a corrupted block is refetched and never served, and bad cache settings are refused with
one line."""

import json
import mmap
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (CREDENTIALS_ENV, Agent, Mount, Tally, forget_pages, payload, read_verified, run_os2g, sha256,
                      shuffled_epoch)

FILES = 24
SIZE = 1 << 20  # 24 MiB of data through an 8 MiB staging region
ARGS = ["--staging-size", "8M", "--chunk-size", "1M", "--max-readahead", "1M", "--dir-prefetch", "0"]


def shim_stats(m):
    return json.loads((m.path / ".os2g" / "stats").read_text())


def stats(m):
    return shim_stats(m)["agent"]


def epoch(m, hashes):
    for name, digest in hashes.items():
        forget_pages(m.path / name)
        read_verified(m.path / name, digest)


def flip_byte(block, from_end):
    """Flips one bit of the byte `from_end` bytes before the end of `block`, in place."""
    with open(block, "r+b") as f:
        f.seek(-from_end, os.SEEK_END)
        b = f.read(1)
        f.seek(-from_end, os.SEEK_END)
        f.write(bytes([b[0] ^ 0x01]))


def written_all(m, total, timeout=30):
    deadline = time.time() + timeout
    while stats(m)["disk_cache"]["bytes_written"] < total:
        assert time.time() < deadline, f"the cache wrote {stats(m)['disk_cache']} of {total} bytes"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def dataset(s3):
    bucket = s3.bucket("it-disk-cache")
    hashes = {}
    for i in range(FILES):
        body = payload(SIZE, 700 + i)
        s3.client.put_object(Bucket=bucket, Key=f"d/f{i:02d}.bin", Body=body)
        hashes[f"d/f{i:02d}.bin"] = sha256(body)
    return bucket, hashes


def test_epochs_after_the_first_and_a_remount_read_from_disk_with_no_get(s3, dataset, tmp_path):
    bucket, hashes = dataset
    cache = tmp_path / "cache"
    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache), "--cache-size", "1G"])
    try:
        epoch(m, hashes)
        first = stats(m)
        assert first["gets"] >= FILES
        written_all(m, FILES * SIZE)
        epoch(m, hashes)
        second = stats(m)
        assert second["gets"] == first["gets"], "the second epoch fetched nothing from the store"
        assert second["disk_cache"]["hits"] >= FILES - 8, second["disk_cache"]  # all but what staging kept
        assert second["staging"]["evictions"] > 0, "the set is larger than the staging region"
    finally:
        assert m.stop() == 0
    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache)])
    try:
        epoch(m, hashes)
        assert stats(m)["gets"] == 0, "a remount reads the warm cache"
        Tally.add("epochs read from the disk cache with no GET", 2)
    finally:
        assert m.stop() == 0

    r = run_os2g("cache", "stats", str(cache))
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["blocks"] == FILES and summary["bytes"] >= FILES * SIZE
    r = run_os2g("cache", "clear", str(cache))
    assert r.returncode == 0 and f"removed {FILES} blocks" in r.stdout, r.stdout + r.stderr
    assert json.loads(run_os2g("cache", "stats", str(cache)).stdout)["blocks"] == 0


def test_whole_files_on_disk_are_read_by_the_kernel_and_an_inode_is_read_one_way(s3, dataset, tmp_path):
    """A file whose whole object is in the cache is read by the kernel from the block file (FUSE
    passthrough): no READ reaches the shim. The kernel reads all opens of one inode one way, so an open
    while the file is open the other way must still read right (never EIO): through the page cache while
    a cached open lasts, and from the first open's file while a passthrough open lasts, even with the
    block deleted from the cache meanwhile."""
    bucket, hashes = dataset
    cache = tmp_path / "cache"
    names = list(hashes)[:4]
    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache)])
    try:
        held = open(m.path / names[0], "rb")  # opened before its block is on disk: read through the page cache
        assert sha256(held.read()) == hashes[names[0]]
        for name in names[1:]:
            read_verified(m.path / name, hashes[name])
        written_all(m, len(names) * SIZE)

        before = shim_stats(m)
        read_verified(m.path / names[0], hashes[names[0]])  # on disk now, but its inode has a cached open
        assert shim_stats(m)["passthrough_opens"] == before["passthrough_opens"]
        held.close()
        before = shim_stats(m)
        with open(m.path / names[1], "rb") as f:
            assert sha256(f.read()) == hashes[names[1]]
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                assert sha256(mapped[:]) == hashes[names[1]], "mapped by passthrough too"
        after = shim_stats(m)
        assert after["passthrough_opens"] == before["passthrough_opens"] + 1, after
        assert after["bytes_served"] == before["bytes_served"], "no READ reached the shim"

        with open(m.path / names[2], "rb") as by_kernel:
            r = run_os2g("cache", "clear", str(cache))
            assert r.returncode == 0, r.stderr
            forget_pages(m.path / names[2])
            read_verified(m.path / names[2], hashes[names[2]])  # the block deleted: the open file's still read
            assert sha256(by_kernel.read()) == hashes[names[2]], "the open kept its file"
        s = shim_stats(m)
        assert s["errors"] == 0, s["errors_by_errno"]
        Tally.add("whole files read by the kernel from the disk cache")
    finally:
        assert m.stop() == 0


def test_a_block_file_kept_for_the_next_open_is_let_go_once_it_changes_or_goes(s3, dataset, tmp_path):
    """The kernel keeps a file's block after its close for the next open (the next epoch); a block
    changed in place or deleted meanwhile is never read for it: the next open reads the right bytes."""
    bucket, hashes = dataset
    cache = tmp_path / "cache"
    names = list(hashes)[:3]
    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache)])
    try:
        for name in names:
            read_verified(m.path / name, hashes[name])
        written_all(m, len(names) * SIZE)
        before = shim_stats(m)
        for name in names:  # by the kernel from the block files, which stay registered after the close
            read_verified(m.path / name, hashes[name])
        kept = shim_stats(m)["passthrough_opens"]
        assert kept == before["passthrough_opens"] + len(names)
        # the kernel sends RELEASE after close returns; an open before it would join the file still open
        deadline = time.monotonic() + 10
        while shim_stats(m)["open_files"] and time.monotonic() < deadline:
            time.sleep(0.01)

        blocks = sorted((cache / "os2g-cache-v3" / "blocks").rglob("*.blk"))
        for block in blocks[:2]:
            flip_byte(block, 100)
        blocks[2].unlink()
        for name in names:
            forget_pages(m.path / name)
            read_verified(m.path / name, hashes[name])
        assert stats(m)["disk_cache"]["corrupt"] == 2
        after = shim_stats(m)
        assert after["passthrough_opens"] == kept, "read through the session, not from the kept files"
        assert after["errors"] == 0, after["errors_by_errno"]
        Tally.add("kept block files let go once changed or deleted", 3)
    finally:
        assert m.stop() == 0


def loader_epochs(m, hashes, epochs=2):
    """Runs the shuffled DataLoader over the mount `epochs` times, each sample's bytes checked, and
    returns the agent's GET count after each epoch (every block written before the count is read)."""
    gets = []
    for _ in range(epochs):
        shuffled_epoch(m.path, hashes)
        written_all(m, FILES * SIZE)
        gets.append(stats(m)["gets"])
    return gets


def test_a_dataloader_epoch_over_four_times_the_staging_region_fetches_nothing_the_second_time(s3, dataset, tmp_path):
    bucket, hashes = dataset
    m = Mount(s3, bucket, ["--staging-size", "6M", "--chunk-size", "1M", "--max-readahead", "1M", "--dir-prefetch", "0",
                           "--cache-dir", str(tmp_path / "cache")])
    try:
        gets = loader_epochs(m, hashes)
        assert gets[0] >= FILES and gets[1] == gets[0], f"GETs after each epoch: {gets}"
        assert stats(m)["staging"]["evictions"] > 0, "the set is larger than the staging region"
        Tally.add("epochs read from the disk cache with no GET")
    finally:
        assert m.stop() == 0


def test_a_shuffled_first_epoch_reads_most_files_from_disk_each_fetched_once(s3, dataset, tmp_path):
    """With the directory prefetcher on (the default), a directory being read through is filled into
    the disk cache ahead of its readers: a shuffled first epoch over a set larger than staging reads
    most files from disk (the kernel reads them there), fetches each file once, and the second epoch
    fetches nothing."""
    bucket, hashes = dataset
    m = Mount(s3, bucket, ["--staging-size", "6M", "--chunk-size", "1M", "--max-readahead", "1M",
                           "--cache-dir", str(tmp_path / "cache")])
    try:
        gets = loader_epochs(m, hashes)
        s = shim_stats(m)
        assert s["agent"]["disk_cache"]["files_filled"] > 0, s["agent"]["disk_cache"]
        assert FILES <= gets[0] <= FILES + 1, f"each file fetched once in the first epoch (a rare race may fetch one twice): {gets}"
        assert gets[1] == gets[0], f"nothing in the second: {gets}"
        assert s["passthrough_opens"] >= FILES, "the second epoch read by the kernel from disk at least"
        Tally.add("epochs read from the disk cache with no GET")
    finally:
        assert m.stop() == 0


def test_a_corrupted_or_truncated_block_is_refetched_never_served(s3, dataset, tmp_path):
    bucket, hashes = dataset
    cache = tmp_path / "cache"
    names = list(hashes)[:4]
    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache)])
    try:
        for name in names:
            read_verified(m.path / name, hashes[name])
        written_all(m, len(names) * SIZE)
    finally:
        assert m.stop() == 0
    blocks = sorted((cache / "os2g-cache-v3" / "blocks").rglob("*.blk"))
    assert len(blocks) == len(names)
    flip_byte(blocks[0], 5000)  # in the data
    os.truncate(blocks[1], blocks[1].stat().st_size - 10)  # a block cut short

    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache)])
    try:
        for name in names:
            read_verified(m.path / name, hashes[name])
        s = stats(m)
        assert s["disk_cache"]["corrupt"] == 2, s["disk_cache"]
        assert s["gets"] == 2, "the two bad blocks fetched again, the two good ones not"
        Tally.add("corrupt cache blocks refetched, never served", 2)
    finally:
        assert m.stop() == 0


def test_in_split_mode_the_agent_owns_the_cache_and_a_new_agent_finds_it_warm(s3, dataset, tmp_path):
    bucket, hashes = dataset
    cache = tmp_path / "cache"
    names = list(hashes)[:6]
    for round in range(2):
        agent = Agent(s3, tmp_path, ["--cache-dir", str(cache)])
        m = Mount(s3, bucket, [*ARGS, "--agent", f"unix:{agent.socket}"], credentials=False)
        try:
            for name in names:
                read_verified(m.path / name, hashes[name])
            s = stats(m)
            if round == 0:
                written_all(m, len(names) * SIZE)
            else:
                assert s["gets"] == 0 and s["disk_cache"]["hits"] == len(names), s
        finally:
            assert m.stop() == 0
            agent.stop()


@pytest.mark.parametrize("extra,message", [
    (["--cache-size", "1G"], "--cache-size needs --cache-dir"),
    (["--cache-dir", "/proc/version/cache"], "cache directory /proc/version/cache cannot be used"),
    (["--cache-dir", "CACHE", "--cache-min-free", "95"], "--cache-min-free must be a percentage from 0 to 90"),
    (["--cache-dir", "CACHE", "--cache-size", "1M"], "--cache-size must be at least 64M"),
    (["--cache-dir", "CACHE", "--agent", "unix:/nonexistent.sock"], "the disk cache is the agent's"),
])
def test_bad_cache_settings_are_refused_with_one_line(s3, dataset, tmp_path, extra, message):
    bucket, _ = dataset
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    extra = [str(tmp_path / "cache") if a == "CACHE" else a for a in extra]
    r = run_os2g("mount", bucket, str(mnt), "--endpoint", s3.endpoint, *extra, env=CREDENTIALS_ENV)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs")
def test_a_cache_file_system_without_room_is_refused_and_a_full_one_only_stops_admitting(s3, dataset, tmp_path):
    bucket, hashes = dataset
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(small)], check=True)
    try:
        mnt = tmp_path / "mnt"
        mnt.mkdir()
        r = run_os2g("mount", bucket, str(mnt), "--endpoint", s3.endpoint, "--cache-dir", str(small / "c"), env=CREDENTIALS_ENV)
        assert r.returncode == 2 and "needs at least 64 MiB" in r.stderr, r.stderr
    finally:
        subprocess.run(["umount", str(small)], check=False)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=72m", "tmpfs", str(small)], check=True)
    try:
        # 72 MiB, 5% kept free, 64 MiB above the floor at mount; 24 MiB of blocks then fill it past that
        (small / "filler").write_bytes(b"\0" * (6 << 20))
        m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(small / "c"), "--cache-min-free", "0"])
        try:
            (small / "more").write_bytes(b"\0" * (50 << 20))  # the disk fills under the running mount
            epoch(m, hashes)  # every read right; the cache stops taking blocks, with a warning
            s = stats(m)["disk_cache"]
            assert s["write_errors"] >= 1 or s["evictions"] >= 1 or s["not_admitted"] >= 1, s
        finally:
            assert m.stop() == 0
        assert "disk cache" in m.output()
    finally:
        subprocess.run(["umount", str(small)], check=False)


def test_a_block_forged_without_the_cache_secret_is_never_served(s3, dataset, tmp_path):
    """Whoever can write a block file but does not hold the cache's secret (mode 0600) cannot make it
    serve other bytes: a header in the right form, with a MAC made under another key, is refused."""
    import hashlib
    import hmac
    import struct
    bucket, hashes = dataset
    cache = tmp_path / "cache"
    name = list(hashes)[5]
    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache)])
    try:
        read_verified(m.path / name, hashes[name])
        written_all(m, SIZE)
    finally:
        assert m.stop() == 0
    root = cache / "os2g-cache-v3"
    assert oct(root.stat().st_mode & 0o777) == "0o700"
    assert oct((root / "secret").stat().st_mode & 0o777) == "0o600"
    [block] = root.rglob("*.blk")
    assert oct(block.stat().st_mode & 0o777) == "0o600"
    forged = payload(SIZE, 4242)
    key_hash = bytes.fromhex(block.name[:-len(".blk")])
    mac = hmac.new(os.urandom(32), key_hash + struct.pack("<q", SIZE) + forged, hashlib.sha256).digest()
    block.write_bytes(forged)
    os.setxattr(block, "user.os2g.block", b"os2gblk3" + struct.pack("<q", SIZE) + mac + key_hash)

    m = Mount(s3, bucket, [*ARGS, "--cache-dir", str(cache)])
    try:
        read_verified(m.path / name, hashes[name])
        s = stats(m)
        assert s["disk_cache"]["corrupt"] == 1 and s["gets"] == 1, s
        Tally.add("forged cache blocks refused", 1)
    finally:
        assert m.stop() == 0
