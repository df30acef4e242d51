"""Server faults, injected by a proxy between the mount and the S3 server: a transient fault is
retried and the read returns the right bytes; a fault that does not go away is EIO within the read
deadline. Every successful read is checked against the sha256 of what was put; nothing hangs."""

import errno
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import Mount, S3Server, Tally, free_port, payload, read_verified, sha256
from faultproxy import Fault, FaultProxy

REQUEST_TIMEOUT = 2
RETRIES = 4
# 5 attempts of 2 s, backoffs of at most 0.1 + 0.2 + 0.4 + 0.8 s, then the shim's own margin of one
# request timeout: the longest a read may take before EIO
READ_DEADLINE = 5 * REQUEST_TIMEOUT + 1.5 + REQUEST_TIMEOUT
# how long the agent answers a chunk whose fetch failed with the same failure
FAILURE_MEMORY = 1.2
SMALL = 150_000
LARGE = 3 << 20


class Files:
    """Fresh objects for each case, so that nothing it reads is staged already."""

    def __init__(self, s3, bucket):
        self.s3 = s3
        self.bucket = bucket
        self.hashes = {}
        self.seed = 0

    def make(self, prefix, sizes):
        names = []
        for size in sizes:
            self.seed += 1
            name = f"{prefix}/f{self.seed:04d}.bin"
            body = payload(size, self.seed)
            self.s3.client.put_object(Bucket=self.bucket, Key=name, Body=body)
            self.hashes[name] = sha256(body)
            names.append(name)
        return names


@pytest.fixture(scope="module")
def rig(s3):
    bucket = s3.bucket("it-faults")
    proxy = FaultProxy(s3.endpoint)
    # every directory is listed at its first lookup; a short TTL so each case's new prefix is seen
    m = Mount(proxy, bucket, ["--request-timeout", str(REQUEST_TIMEOUT), "--retries", str(RETRIES),
                              "--chunk-size", "1M", "--max-readahead", "2M", "--dir-prefetch", "0",
                              "--metadata-ttl", "0"])
    yield proxy, m, Files(s3, bucket)
    proxy.clear()
    assert m.stop() == 0
    proxy.close()


def slug(case):
    return re.sub(r"\W+", "-", case)


def read_all(m, files, names):
    for name in names:
        read_verified(m.path / name, files.hashes[name])


def expect_eio(path):
    t0 = time.time()
    with pytest.raises(OSError) as e:
        Path(path).read_bytes()
    elapsed = time.time() - t0
    assert e.value.errno == errno.EIO, e.value
    assert elapsed < READ_DEADLINE + 3, f"EIO came after {elapsed:.1f} s"
    Tally.add("persistent faults ending in EIO within the deadline")
    return elapsed


TRANSIENT = {
    "500 InternalError": lambda: Fault("status", status=500, code="InternalError", count=RETRIES - 1),
    "503 SlowDown storm": lambda: Fault("status", status=503, code="SlowDown", count=RETRIES),
    "502 HTML page from a load balancer": lambda: Fault("status", status=502, html=True, count=RETRIES - 1),
    "stall past the deadline": lambda: Fault("stall", seconds=REQUEST_TIMEOUT + 1.5, count=1),
    "reset mid-body": lambda: Fault("reset", after=40_000, count=RETRIES - 1),
    "truncated body": lambda: Fault("truncate", after=70_000, count=RETRIES - 1),
}


@pytest.mark.parametrize("case", TRANSIENT)
def test_transient_fault_is_retried_and_the_bytes_are_right(rig, case):
    proxy, m, files = rig
    names = files.make("transient-" + slug(case), [SMALL, LARGE])
    fault = proxy.arm(TRANSIENT[case]())
    try:
        read_all(m, files, names)
    finally:
        proxy.clear()
    assert fault.count == 0, f"the fault was not met: {fault}"
    Tally.add("transient faults survived")


PERSISTENT = {
    "500 storm": lambda: Fault("status", status=500, code="InternalError"),
    "503 SlowDown storm": lambda: Fault("status", status=503, code="SlowDown"),
    "503 HTML page from a load balancer": lambda: Fault("status", status=503, html=True),
    "stall": lambda: Fault("stall", seconds=REQUEST_TIMEOUT + 1.5),
    "reset mid-body": lambda: Fault("reset", after=40_000),
    "truncated body": lambda: Fault("truncate", after=70_000),
}


@pytest.mark.parametrize("case", PERSISTENT)
def test_persistent_fault_is_eio_within_the_deadline_and_the_file_reads_once_it_clears(rig, case):
    proxy, m, files = rig
    [small, large] = files.make("persistent-" + slug(case), [SMALL, LARGE])
    proxy.arm(PERSISTENT[case]())
    try:
        os.listdir(m.path / small.split("/")[0])  # listings are not faulted here
        expect_eio(m.path / small)
        expect_eio(m.path / large)
    finally:
        proxy.clear()
    # a failed chunk fails at once for a second (the kernel asks again right away), then is fetched again
    time.sleep(FAILURE_MEMORY)
    read_all(m, files, [small, large])


def test_connection_refused_briefly_is_ridden_out_and_for_good_is_eio(rig):
    proxy, m, files = rig
    names = files.make("refused", [SMALL, LARGE])
    proxy.refuse()
    threading.Timer(0.4, proxy.accept).start()
    read_all(m, files, names)
    Tally.add("transient faults survived")

    [gone] = files.make("refused-for-good", [SMALL])
    os.listdir(m.path / "refused-for-good")
    proxy.refuse()
    try:
        expect_eio(m.path / gone)
    finally:
        proxy.accept()
    time.sleep(FAILURE_MEMORY)
    read_all(m, files, [gone])


def test_listing_faults_are_retried_or_eio(rig):
    proxy, m, files = rig
    files.make("listed", [10, 20])
    fault = proxy.arm(Fault("status", match="list", status=503, code="SlowDown", count=RETRIES - 1))
    try:
        assert len(os.listdir(m.path / "listed")) == 2
    finally:
        proxy.clear()
    assert fault.count == 0
    Tally.add("transient faults survived")

    files.make("listed-never", [10])
    proxy.arm(Fault("status", match="list", status=500, code="InternalError"))
    t0 = time.time()
    try:
        with pytest.raises(OSError) as e:
            os.listdir(m.path / "listed-never")
        assert e.value.errno == errno.EIO
        assert time.time() - t0 < READ_DEADLINE + 3
        Tally.add("persistent faults ending in EIO within the deadline")
    finally:
        proxy.clear()


def test_random_faults_under_concurrent_readers_never_give_wrong_bytes(rig):
    """About a quarter of all data requests fail one way or another; readers see right bytes or EIO."""
    proxy, m, files = rig
    names = files.make("chaos", [SMALL] * 40 + [LARGE] * 6)
    for fault in (Fault("status", status=503, code="SlowDown", probability=0.10),
                  Fault("status", status=500, code="InternalError", probability=0.06),
                  Fault("reset", after=30_000, probability=0.06),
                  Fault("truncate", after=50_000, probability=0.06),
                  Fault("stall", seconds=REQUEST_TIMEOUT + 0.5, probability=0.03)):
        proxy.arm(fault)
    injected = proxy.injected
    outcomes = {"ok": 0, "eio": 0}
    lock = threading.Lock()

    def read(name):
        try:
            read_verified(m.path / name, files.hashes[name])
            result = "ok"
        except OSError as e:
            assert e.errno == errno.EIO, e
            result = "eio"
        with lock:
            outcomes[result] += 1

    t0 = time.time()
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(read, names))
    finally:
        proxy.clear()
    Tally.add("random faults injected under 8 readers", proxy.injected - injected)
    assert proxy.injected > injected
    assert outcomes["ok"] >= 0.9 * len(names), outcomes
    assert time.time() - t0 < 120
    # whatever failed reads fine now
    time.sleep(FAILURE_MEMORY)
    read_all(m, files, names)


def test_server_stopped_and_restarted_mid_read(tmp_path):
    port = free_port()
    data_dir = tmp_path / "objects"
    server = S3Server(directory=data_dir, port=port)
    size = 40 << 20
    body = payload(size, 77)
    server.bucket("it-restart", {"big.bin": body})
    m = Mount(server, "it-restart", ["--request-timeout", "2", "--retries", "10", "--chunk-size", "1M",
                                     "--max-readahead", "2M"])
    try:
        got = bytearray()
        restarted = []

        def restart():
            time.sleep(1.0)
            restarted.append(S3Server(directory=data_dir, port=port))

        with open(m.path / "big.bin", "rb", buffering=0) as f:
            got += f.read(8 << 20)
            server.stop()
            stopped = time.time()
            starter = threading.Thread(target=restart)
            starter.start()
            while chunk := f.read(1 << 20):
                got += chunk
        outage_seen = time.time() - stopped
        starter.join(60)
        server = restarted[0]
        assert outage_seen > 1.0, "the read finished before the server came back: it did not see the outage"
        assert sha256(bytes(got)) == sha256(body)
        Tally.add("reads verified (sha256)")
        Tally.add("bytes verified", size)
        Tally.add("transient faults survived")
    finally:
        assert m.stop() == 0
        server.stop()
