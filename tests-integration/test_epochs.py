"""Every epoch of a shuffled DataLoader over an ImageFolder-like tree is staged ahead, not only the
first: on a fresh mount, after large files read in between, and through a staging region smaller than
the dataset, with and without a disk cache. Each case runs two epochs and checks every sample's bytes
and the GETs of the second epoch."""

import json
import time

import pytest

from conftest import Mount, Tally, payload, sha256, shuffled_epoch

CLASSES, PER_CLASS = 8, 40
# ~50 KB files (one 64 KiB staging page each): 320 of them take 20 MiB of staging
FILES = {f"train/c{c}/{i:03d}.jpg": payload(45_000 + 97 * i, 5000 + 100 * c + i) for c in range(CLASSES) for i in range(PER_CLASS)}
HASHES = {k: sha256(v) for k, v in FILES.items()}
LARGE = 64 << 20
BASE = ["--chunk-size", "1M"]


@pytest.fixture(scope="module")
def bucket(s3):
    s3.bucket("it-epochs", {**FILES, "shards/big.bin": payload(LARGE, 77)})
    return "it-epochs"


def agent(m):
    return json.loads((m.path / ".os2g" / "stats").read_text())["agent"]


def epochs_gets(m, between=None):
    """Two shuffled epochs; `between` runs after the first. Returns the GETs of each epoch."""
    gets = []
    for e in range(2):
        before = agent(m)["gets"]
        shuffled_epoch(m.path, HASHES)
        gets.append(agent(m)["gets"] - before)
        if e == 0 and between:
            between()
    return gets


def read_large(m):
    with open(m.path / "shards" / "big.bin", "rb", buffering=0) as f:
        while f.read(1 << 20):
            pass


def test_a_fresh_mount_sweeps_the_tree_and_fetches_nothing_the_second_epoch(s3, bucket):
    m = Mount(s3, bucket, [*BASE, "--staging-size", "64M"])
    try:
        gets = epochs_gets(m)
        d = agent(m)["directory_prefetch"]
        assert gets[0] <= len(FILES) + 2 and gets[1] == 0, f"GETs per epoch: {gets}"
        assert d["sweeps"] >= 1, d
        assert d["staged_then_opened"] >= len(FILES) // 2, f"most files staged before their open: {d}"
        assert d["dropped_unopened"] == 0, d
        Tally.add("DataLoader epochs checked for GETs", 2)
    finally:
        assert m.stop() == 0


def test_large_files_read_between_epochs_do_not_push_the_dataset_out(s3, bucket):
    """64 MiB read in order through a 40 MiB region that also holds the 20 MiB of images: the scan
    recycles its own chunks, so the second epoch finds the images staged."""
    m = Mount(s3, bucket, [*BASE, "--staging-size", "40M"])
    try:
        gets = epochs_gets(m, between=lambda: read_large(m))
        assert agent(m)["staging"]["evictions"] > 0, "the large file did not fit beside the images"
        assert gets[1] <= len(FILES) // 20, f"GETs per epoch: {gets}: the scan evicted the dataset"
        Tally.add("DataLoader epochs checked for GETs", 2)
    finally:
        assert m.stop() == 0


def test_a_region_smaller_than_the_dataset_stages_each_epoch_ahead_again(s3, bucket):
    """20 MiB of images through 8 MiB: each epoch fetches each file about once, and what is staged
    ahead is held until opened (none let go unread)."""
    m = Mount(s3, bucket, [*BASE, "--staging-size", "8M"])
    try:
        gets = epochs_gets(m)
        d = agent(m)["directory_prefetch"]
        # about one per file: a few more where a directory's next pass begins (files read at the end of
        # one epoch and again before the reader is seen to start over), or where a region this full lets
        # a chunk go between its fetch and its reader
        assert all(0 < g <= len(FILES) * 21 // 20 for g in gets), f"GETs per epoch: {gets}"
        assert d["passes"] > CLASSES, f"the second epoch started new passes: {d}"
        assert d["dropped_unopened"] == 0, d
        assert agent(m)["staging"]["pinned_chunks"] <= CLASSES, "every file read: little held for the next pass"
        Tally.add("DataLoader epochs checked for GETs", 2)
    finally:
        assert m.stop() == 0


def test_with_a_disk_cache_the_second_epoch_through_a_small_region_costs_no_get(s3, bucket, tmp_path):
    m = Mount(s3, bucket, [*BASE, "--staging-size", "8M", "--cache-dir", str(tmp_path / "cache"), "--cache-size", "1G"])
    try:
        total = sum(len(v) for v in FILES.values())

        def written():
            deadline = time.time() + 30
            while agent(m)["disk_cache"]["bytes_written"] < total:
                assert time.time() < deadline, agent(m)["disk_cache"]
                time.sleep(0.2)

        gets = epochs_gets(m, between=written)
        assert gets[1] == 0, f"GETs per epoch: {gets}"
        Tally.add("DataLoader epochs checked for GETs", 2)
    finally:
        assert m.stop() == 0
