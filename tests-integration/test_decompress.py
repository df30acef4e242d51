"""--decompress: each NAME.gz and NAME.zst object also appears as NAME, with its decompressed bytes and its
exact decompressed size in stat; decoded in the agent, in split mode too."""

import errno
import gzip
import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import Mount, Tally, read_verified, run_os2g, sha256
from test_split import Agent


def text(n, seed):
    import random
    r = random.Random(seed)
    words = [bytes(r.choice(b"abcdefgh") for _ in range(r.randrange(2, 9))) for _ in range(500)]
    out = bytearray()
    while len(out) < n:
        out += r.choice(words) + b" "
    return bytes(out[:n])


def zstd(data, *flags):
    """As `zstd FILE` writes it: the content size in the frame header (told here, as the input is a pipe)."""
    size = [] if "--no-content-size" in flags else [f"--stream-size={len(data)}"]
    return subprocess.run(["zstd", "-q", "-c", *size, *flags], input=data, capture_output=True, check=True).stdout


PLAIN = {"logs/a.txt": text(3_000_000, 1), "arrays/b.npy": text(700_000, 2), "c.csv": text(5000, 3)}
CORRUPT = bytearray(gzip.compress(text(400_000, 4)))
for i in range(1000, 1400):
    CORRUPT[i] ^= 0x5A
OBJECTS = {
    "logs/a.txt.gz": gzip.compress(PLAIN["logs/a.txt"]),
    "arrays/b.npy.zst": zstd(PLAIN["arrays/b.npy"]),  # with its size in the frame and a checksum
    "c.csv.zst": zstd(PLAIN["c.csv"]),
    "streamed.zst": zstd(text(1000, 5), "--no-content-size"),  # cannot be sized: not shown decompressed
    "bad/corrupt.gz": bytes(CORRUPT),
}


@pytest.fixture(scope="module")
def bucket(s3):
    name = s3.bucket("it-decompress", OBJECTS)
    yield name
    s3.drop(name)


def stats(m):
    return json.loads((m.path / ".os2g/stats").read_text())


def check(root):
    for key, body in PLAIN.items():
        assert os.stat(root / key).st_size == len(body), key
        read_verified(root / key, sha256(body))
    Tally.add("decompressed files verified", len(PLAIN))


def test_compressed_objects_also_appear_decompressed_with_exact_sizes(s3, bucket):
    m = Mount(s3, bucket, ["--decompress", "--chunk-size", "1M"])
    try:
        check(m.path)
        assert sorted(os.listdir(m.path / "logs")) == ["a.txt", "a.txt.gz"]
        assert "streamed" not in os.listdir(m.path), "a stream that states no size is not shown"
        with open(m.path / "logs/a.txt", "rb") as f:  # a seek back into the file decodes again from the start
            f.seek(2_500_000)
            tail = f.read(100)
            f.seek(10)
            head = f.read(100)
        assert tail == PLAIN["logs/a.txt"][2_500_000:2_500_100] and head == PLAIN["logs/a.txt"][10:110]
        with pytest.raises(OSError) as e:
            (m.path / "bad/corrupt").read_bytes()
        assert e.value.errno == errno.EIO
        d = stats(m)["agent"]["decompress"]
        assert d["sized"] == 4 and d["unsized"] == 1 and d["corrupt"] >= 1
    finally:
        m.stop()


def test_without_the_option_nothing_is_decompressed(s3, bucket):
    m = Mount(s3, bucket)
    try:
        assert sorted(os.listdir(m.path / "logs")) == ["a.txt.gz"]
    finally:
        m.stop()


def test_decompressed_files_travel_through_split_mode_and_warm(s3, bucket):
    work = Path(tempfile.mkdtemp(prefix="os2g-decompress-split-"))
    agent = Agent(s3, work)
    m = Mount(s3, bucket, ["--agent", f"unix:{agent.socket}", "--decompress"], credentials=False)
    try:
        r = run_os2g("warm", str(m.path / "logs" / "a.txt"))  # staged by decoding, through the agent
        assert r.returncode == 0 and r.stdout.startswith("warmed 1 files"), r.stdout + r.stderr
        gets = stats(m)["agent"]["gets"]
        read_verified(m.path / "logs/a.txt", sha256(PLAIN["logs/a.txt"]))
        assert stats(m)["agent"]["gets"] == gets, "a warmed decompressed file reads without a GET"
        check(m.path)
    finally:
        m.stop()
        agent.stop()
