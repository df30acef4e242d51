"""A reader waiting on a store that stopped answering is killed (a DataLoader worker on Ctrl-C or its
timeout): it is gone within 2 s, where it used to stay until the read deadline, and the mount goes on
serving the other readers. Once the store answers again, the same file reads whole.

The kernel sends INTERRUPT for a READ its reader waits for (an O_DIRECT or page-fault read, and the
first read of a page with readahead off); os2g answers it EINTR. A buffered reader waiting on the
kernel's own readahead is ended by a fatal signal without one (the READ itself goes on)."""

import signal
import subprocess
import sys
import time

import pytest

from conftest import Mount, Tally, payload, read_verified, sha256
from faultproxy import Fault, FaultProxy

REQUEST_TIMEOUT = 5
RETRIES = 3  # a stalled store keeps a read waiting ~25 s: far past the 2 s a killed reader has
SIZE = 3 << 20

READER = r"""
import mmap, os, sys
path, mode = sys.argv[1], sys.argv[2]
if mode == "direct":
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    buffer = mmap.mmap(-1, 1 << 20)  # page-aligned, as O_DIRECT wants
    print("reading", flush=True)
    os.readv(fd, [buffer])
else:
    with open(path, "rb") as f:
        print("reading", flush=True)
        f.read()
print("read", flush=True)
"""


@pytest.fixture(scope="module")
def rig(s3):
    bucket = s3.bucket("it-interrupts")
    hashes = {}
    for i in range(8):
        body = payload(SIZE, 900 + i)
        s3.client.put_object(Bucket=bucket, Key=f"f{i}.bin", Body=body)
        hashes[f"f{i}.bin"] = sha256(body)
    proxy = FaultProxy(s3.endpoint)
    m = Mount(proxy, bucket, ["--request-timeout", str(REQUEST_TIMEOUT), "--retries", str(RETRIES),
                              "--chunk-size", "1M", "--max-readahead", "1M", "--dir-prefetch", "0"])
    read_verified(m.path / "f0.bin", hashes["f0.bin"])  # staged before the store stalls
    yield proxy, m, hashes
    proxy.clear()
    assert m.stop() == 0
    proxy.close()


@pytest.mark.parametrize("mode,sig", [("direct", signal.SIGINT), ("direct", signal.SIGKILL),
                                      ("buffered", signal.SIGKILL)],
                         ids=["O_DIRECT-SIGINT", "O_DIRECT-SIGKILL", "buffered-SIGKILL"])
def test_a_reader_blocked_on_a_stalled_store_is_gone_within_2s_when_killed(rig, mode, sig):
    proxy, m, hashes = rig
    name = {("direct", signal.SIGINT): "f1.bin", ("direct", signal.SIGKILL): "f2.bin"}.get((mode, sig), "f3.bin")
    proxy.arm(Fault("stall", seconds=REQUEST_TIMEOUT + 2))
    try:
        reader = subprocess.Popen([sys.executable, "-c", READER, str(m.path / name), mode],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert reader.stdout.readline().strip() == "reading"
        time.sleep(1.5)
        assert reader.poll() is None, "the read waits for the stalled store"

        killed = time.monotonic()
        reader.send_signal(sig)
        try:
            reader.wait(timeout=2)
        except subprocess.TimeoutExpired:
            reader.kill()
            pytest.fail(f"the reader outlived {sig.name} by 2 s")
        gone = time.monotonic() - killed
        assert reader.returncode != 0 and "read" not in reader.stdout.read()
        Tally.add("killed readers gone within 2 s")

        # the mount serves the others meanwhile: names, and bytes already staged
        assert sorted(p.name for p in m.path.iterdir())[:2] == ["f0.bin", "f1.bin"]
        read_verified(m.path / "f0.bin", hashes["f0.bin"])
    finally:
        proxy.clear()
    # and, the store back, the file the killed reader wanted reads whole (its fetch may still be retrying)
    deadline = time.monotonic() + 3 * REQUEST_TIMEOUT + 10
    while True:
        try:
            read_verified(m.path / name, hashes[name])
            break
        except OSError:
            assert time.monotonic() < deadline, "the file did not read once the store was back"
            time.sleep(1)
    print(f"{mode} reader gone {gone:.2f} s after {sig.name}")
