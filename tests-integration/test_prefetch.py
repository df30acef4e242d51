"""Prefetch hints: paths written to MNT/.os2g/prefetch are staged in order, a bounded window ahead of
the readers; `os2g warm` stages a subtree with progress; the Python client's Os2gSampler hints each
epoch's order to a DataLoader with workers."""

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import OS2G, Mount, Tally, payload, read_verified, run_os2g, sha256

HERE = Path(__file__).resolve().parent
CLIENT = HERE.parent / "clients" / "python"
sys.path.insert(0, str(CLIENT))
import os2g  # noqa: E402  (the client under test, from the repository)

FILES = {f"train/c{c}/{i:03d}.jpg": payload(90_000 + 331 * i, 1000 * c + i) for c in range(4) for i in range(50)}
FILES[".os2g/shadowed.txt"] = b"a bucket key the control directory hides"
HASHES = {k: sha256(v) for k, v in FILES.items()}
TRAIN = sorted(k for k in FILES if k.startswith("train/"))


@pytest.fixture(scope="module")
def bucket(s3):
    s3.bucket("it-prefetch", FILES)
    return "it-prefetch"


@pytest.fixture
def small_mount(s3, bucket):
    # 8 MiB of staging: hints may hold half, 32 files of two 64 KiB pages each
    m = Mount(s3, bucket, ["--staging-size", "8M", "--chunk-size", "1M", "--dir-prefetch", "0"])
    yield m
    m.stop()


def stats(mount):
    return json.loads((mount.path / ".os2g" / "stats").read_text())


def settle(mount, counter="files_staged", section="prefetch"):
    """Waits until the agent stops staging hinted files; returns the stats."""
    last, s = None, stats(mount)
    while s["agent"][section][counter] != last:
        last = s["agent"][section][counter]
        time.sleep(0.3)
        s = stats(mount)
    return s


def test_hints_are_staged_in_order_and_bounded_by_the_staging_size(small_mount):
    order = list(TRAIN)
    random.Random(7).shuffle(order)
    (small_mount.path / ".os2g" / "prefetch").write_text("\n".join(order) + "\n")
    s = settle(small_mount)
    staged = s["agent"]["prefetch"]["files_staged"]
    assert staged == 32, s  # half the region, and not one file more, though 200 were hinted
    assert s["agent"]["staging"]["pinned_chunks"] == 32
    assert s["agent"]["prefetch"]["files"] == 200
    gets = s["agent"]["gets"]

    # read in the hinted order, 5 ms of "training" per file (a reader that does nothing else outran a
    # cold S3 server's GETs now and then on a loaded CI machine): the window moves along, each file
    # staged before its open
    for k in order:
        read_verified(small_mount.path / k, HASHES[k])
        time.sleep(0.005)
    s = settle(small_mount)
    p = s["agent"]["prefetch"]
    assert p["files_staged"] == 200, p
    assert p["staged_before_open"] >= 190, p  # the first few race the readers' start
    assert s["agent"]["staging"]["pinned_chunks"] == 0, "read and closed: nothing held"
    assert s["agent"]["gets"] - gets == 200 - 32, "one GET per file, no file fetched twice"
    Tally.add("hinted files read", len(order))


def test_a_new_list_replaces_the_old_one_and_bad_lines_are_skipped_and_counted(small_mount):
    prefetch = small_mount.path / ".os2g" / "prefetch"
    prefetch.write_text("\n".join(TRAIN[:100]) + "\n")
    settle(small_mount)
    bad = ["train/c0/missing.jpg", "train/c0", "train/../train/c0/000.jpg", "..", "/etc/passwd",
           "x" * 5000, ".os2g/stats", "\x00\x01\xff garbage", "train/c0/000.jpg/x"]
    with open(prefetch, "wb") as f:  # "w": replaces; lines may arrive split across writes
        text = ("\n".join(bad + TRAIN[150:160]) + "\n").encode("utf-8", "surrogateescape")
        for i in range(0, len(text), 7):
            f.write(text[i:i + 7])
            f.flush()
    s = settle(small_mount)
    assert s["hint_lines"]["rejected"] == len(bad), s["hint_lines"]
    assert s["agent"]["staging"]["pinned_chunks"] == 10, "the first list's files are let go"
    with open(prefetch, "a") as f:  # "a": adds after the files hinted before
        f.write(str(small_mount.path / TRAIN[160]))  # absolute, no final newline
    s = settle(small_mount)
    assert s["agent"]["staging"]["pinned_chunks"] == 11
    for k in TRAIN[150:161]:
        read_verified(small_mount.path / k, HASHES[k])
    assert "skipped 9 line(s)" in small_mount.output()
    Tally.add("bad hint lines skipped", len(bad))


def test_the_control_directory_is_hidden_and_a_key_under_it_is_reported_shadowed(small_mount):
    assert ".os2g" not in os.listdir(small_mount.path)
    assert sorted(os.listdir(small_mount.path / ".os2g")) == ["extents", "prefetch", "stats", "warm"]
    os.listdir(small_mount.path)
    assert small_mount.output().count("shadowed") == 1
    with pytest.raises(PermissionError):
        (small_mount.path / ".os2g" / "prefetch").read_text()
    with pytest.raises(OSError):
        (small_mount.path / "train" / "new.jpg").write_bytes(b"x")


def test_warm_refuses_more_than_the_staging_region_then_stages_with_progress(small_mount):
    r = run_os2g("warm", "--help")
    assert r.returncode == 0 and "--partial" in r.stdout, r.stdout + r.stderr
    r = run_os2g("warm", str(small_mount.path / "train"))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "--partial" in r.stderr, r.stderr
    assert "200 files" in r.stderr

    r = run_os2g("warm", "--partial", str(small_mount.path / "train"))
    assert r.returncode == 0, r.stderr
    assert "[" in r.stderr and "files" in r.stderr and "ETA" in r.stderr, r.stderr  # the progress line
    assert r.stdout.startswith("warmed 64 files"), r.stdout  # 8 MiB of two-page files
    s = stats(small_mount)
    assert s["agent"]["warm"]["files_staged"] == 64
    assert s["agent"]["staging"]["pinned_chunks"] == 0, "warmed files are not held"
    gets = s["agent"]["gets"]
    for k in TRAIN[:64]:
        read_verified(small_mount.path / k, HASHES[k])
    assert stats(small_mount)["agent"]["gets"] == gets, "warmed files read without a GET"

    r = run_os2g("warm", str(small_mount.path / "train" / "c3" / "000.jpg"), "/tmp")
    assert r.returncode == 2 and "not on an os2g mount" in r.stderr, r.stderr
    Tally.add("warm runs", 2)


SAMPLER_SCRIPT = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import torch
from torch.utils.data import DataLoader, Dataset, RandomSampler
from os2g import Os2gSampler

root, files = sys.argv[2], json.loads(sys.argv[3])

class Files(Dataset):
    def __init__(self, paths):
        self.paths = paths
    def __len__(self):
        return len(self.paths)
    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            return i, hashlib.sha256(f.read()).hexdigest()

paths = [root + "/" + k for k in files]
dataset = Files(paths)
sampler = Os2gSampler(RandomSampler(dataset, generator=torch.Generator().manual_seed(1)), paths)
loader = DataLoader(dataset, batch_size=8, num_workers=2, sampler=sampler)
for epoch in range(2):
    seen = []
    for indices, hashes in loader:
        seen += [(int(i), h) for i, h in zip(indices, hashes)]
    stats = json.load(open(root + "/.os2g/stats"))
    print(json.dumps({"epoch": epoch, "seen": seen, "prefetch": stats["agent"]["prefetch"]}), flush=True)
"""


def test_the_sampler_hints_each_epoch_to_a_dataloader_with_workers(s3, bucket):
    m = Mount(s3, bucket, ["--chunk-size", "1M", "--dir-prefetch", "0"])
    try:
        r = subprocess.run(["/usr/bin/python3", "-c", SAMPLER_SCRIPT, str(CLIENT), str(m.path), json.dumps(TRAIN)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        epochs = [json.loads(line) for line in r.stdout.splitlines()]
        assert len(epochs) == 2
        for e in epochs:
            indices = sorted(i for i, _ in e["seen"])
            assert indices == list(range(len(TRAIN))), "every file exactly once per epoch"
            for i, h in e["seen"]:
                assert h == HASHES[TRAIN[i]], f"wrong bytes from {TRAIN[i]}"
        first = epochs[0]["prefetch"]
        assert first["files"] == len(TRAIN)
        # the first epoch is cold: the agent stages hinted files before the workers open them
        assert first["staged_before_open"] >= 0.8 * len(TRAIN), first
        Tally.add("sampler epochs verified", len(epochs))
        Tally.add("reads verified (sha256)", sum(len(e["seen"]) for e in epochs))
    finally:
        m.stop()


def test_prefetch_skips_paths_on_no_os2g_mount(tmp_path):
    local = tmp_path / "a.bin"
    local.write_bytes(b"x")
    assert os2g.prefetch([local]) == 0
    assert os2g.mount_root(local) is None


def test_the_client_is_pip_installable(tmp_path):
    source = tmp_path / "src"
    subprocess.run(["cp", "-r", str(CLIENT), str(source)], check=True)
    r = subprocess.run(["/usr/bin/python3", "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--no-index", "--target", str(tmp_path / "site"), str(source)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["/usr/bin/python3", "-c", "import os2g; print(os2g.__version__, os2g.Os2gSampler.__name__)"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(tmp_path / "site")}, cwd=tmp_path)
    assert r.stdout.split() == ["0.1.0", "Os2gSampler"], r.stderr


def test_the_sampler_hints_a_long_epoch_in_windows(monkeypatch):
    sent = []
    monkeypatch.setattr(os2g, "prefetch", lambda paths, replace=True: sent.append((list(paths), replace)))
    sampler = os2g.Os2gSampler(list(reversed(range(10))), [f"f{i}" for i in range(10)])
    monkeypatch.setattr(sampler, "WINDOW", 4)
    assert list(sampler) == list(reversed(range(10)))
    # the first window replaces the old epoch's; each next one goes out half a window before it is needed
    assert sent == [(["f9", "f8", "f7", "f6"], True), (["f5", "f4", "f3", "f2"], False), (["f1", "f0"], False)]

