"""Writes through the mount (--allow-writes): checkpoints as PyTorch writes them, read back through the
mount and through boto3, bytes equal; what S3 cannot do refused with its errno; uploads retried, and
aborted (no object, no parts left) when they cannot finish or their writer is killed."""

import errno
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import Agent, Mount, S3Server, Tally, free_port, payload, scrape, sha256
from faultproxy import Fault, FaultProxy

torch = pytest.importorskip("torch")

STAGING = "64M"
MiB = 1 << 20


@pytest.fixture(scope="module")
def store():
    """A server of its own, on disk: a GiB checkpoint and its parts stay off the shared server's heap."""
    server = S3Server(directory=Path(tempfile.mkdtemp(prefix="os2g-writes-s3-")))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def rw(store):
    bucket = store.bucket("it-writes")
    port = free_port()
    m = Mount(store, bucket, ["--allow-writes", "--allow-overwrite", "--allow-delete", "--staging-size", STAGING,
                              "--metadata-ttl", "60", "--metrics-port", f"127.0.0.1:{port}"])
    m.metrics_port = port
    yield store, bucket, m
    assert m.stop() == 0


def keys(server, bucket, prefix):
    """The keys under prefix, without the directory markers the on-disk server lists for its folders."""
    listed = server.client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {o["Key"] for o in listed if not o["Key"].endswith("/")}


def stored(server, bucket, key):
    return server.client.get_object(Bucket=bucket, Key=key)["Body"].read()


def pending_uploads(server, bucket):
    return server.client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])


def stats(m):
    return json.loads((m.path / ".os2g/stats").read_text())


def test_torch_save_of_a_gib_state_dict_reads_back_through_the_mount_and_boto3(rw):
    server, bucket, m = rw
    gen = torch.Generator().manual_seed(7)
    state = {f"layer{i}.weight": torch.rand((64, MiB), generator=gen) for i in range(4)}  # 4 x 256 MiB
    state["step"] = torch.tensor(1234)
    path = m.path / "ckpt" / "model.pt"
    path.parent.mkdir()
    torch.save(state, path)
    loaded = torch.load(path)
    assert loaded.keys() == state.keys()
    assert all(torch.equal(loaded[k], state[k]) for k in state)
    assert sha256(stored(server, bucket, "ckpt/model.pt")) == sha256(path.read_bytes())
    assert os.stat(path).st_size > 1 << 30
    assert pending_uploads(server, bucket) == []
    Tally.add("checkpoints written and read back")


def test_a_distributed_checkpoint_directory_is_written_renamed_and_loaded(rw):
    """The steps of torch.distributed.checkpoint's FileSystemWriter (Debian's torch 1.13 cannot import its
    own on Python 3.11): the directory made with parents, one file per rank written at once and fsync'd,
    then .metadata written as .metadata.tmp, fsync'd and renamed."""
    server, bucket, m = rw
    gen = torch.Generator().manual_seed(3)
    ranks = {r: {"w": torch.rand((256, 1024), generator=gen), "step": torch.tensor(9)} for r in range(4)}
    directory = m.path / "dcp" / "step-9"
    directory.mkdir(parents=True, exist_ok=True)
    directory.mkdir(parents=True, exist_ok=True)

    def save_rank(rank):
        with open(directory / f"__{rank}_0.distcp", "wb") as stream:
            torch.save(ranks[rank], stream)
            stream.flush()
            os.fsync(stream.fileno())

    with ThreadPoolExecutor(len(ranks)) as pool:
        list(pool.map(save_rank, ranks))
    with (directory / ".metadata.tmp").open("wb") as metadata:
        torch.save({"ranks": sorted(ranks)}, metadata)
        os.fsync(metadata.fileno())
    (directory / ".metadata.tmp").rename(directory / ".metadata")

    names = sorted(os.listdir(directory))
    assert names == [".metadata"] + [f"__{r}_0.distcp" for r in ranks]
    assert torch.load(directory / ".metadata") == {"ranks": [0, 1, 2, 3]}
    for rank, state in ranks.items():
        loaded = torch.load(directory / f"__{rank}_0.distcp")
        assert all(torch.equal(loaded[k], state[k]) for k in state)
    assert keys(server, bucket, "dcp/") == {f"dcp/step-9/{n}" for n in names}


def test_several_writers_at_once_and_one_larger_than_staging(rw):
    server, bucket, m = rw
    (m.path / "many").mkdir()
    bodies = {f"many/part-{i}.bin": payload(9 * MiB + 4097 * i, 40 + i) for i in range(6)}
    bodies["many/huge.bin"] = payload(200 * MiB + 12345, 99)  # three times the staging region

    def write(key):
        with open(m.path / key, "wb") as f:
            body = memoryview(bodies[key])
            for at in range(0, len(body), 3 * MiB + 1):  # writes of odd sizes, across part boundaries
                f.write(body[at:at + 3 * MiB + 1])

    with ThreadPoolExecutor(len(bodies)) as pool:
        list(pool.map(write, bodies))
    for key, body in bodies.items():
        assert sha256((m.path / key).read_bytes()) == sha256(body), key
        assert sha256(stored(server, bucket, key)) == sha256(body), key
    assert sorted(os.listdir(m.path / "many")) == sorted(k.split("/")[1] for k in bodies)
    s = stats(m)
    assert s["agent"]["uploads"]["staged_bytes"] == 0 and s["writes"]["files_writing"] == 0
    Tally.add("files written", len(bodies))


def test_small_and_empty_files_and_a_shell_redirection(rw):
    server, bucket, m = rw
    subprocess.run(["sh", "-c", f"echo hello > {m.path}/small.txt"], check=True)
    (m.path / "empty.bin").touch()
    subprocess.run(["dd", "if=/dev/zero", f"of={m.path}/dd.bin", "bs=1M", "count=20", "status=none"], check=True)
    assert (m.path / "small.txt").read_bytes() == b"hello\n" == stored(server, bucket, "small.txt")
    assert stored(server, bucket, "empty.bin") == b""
    assert stored(server, bucket, "dd.bin") == bytes(20 * MiB)


def test_what_s3_cannot_do_is_refused_with_its_errno(rw):
    server, bucket, m = rw
    p = m.path / "refusals"
    p.mkdir()
    (p / "done.bin").write_bytes(b"0123456789")

    def refused(expected, action):
        with pytest.raises(OSError) as e:
            action()
        assert e.value.errno == expected, (expected, e.value)
        Tally.add("refused writes with their errno")

    refused(errno.EPERM, lambda: open(p / "done.bin", "ab"))  # append to an existing object
    refused(errno.EPERM, lambda: open(p / "done.bin", "r+b"))  # modify in place
    refused(errno.EPERM, lambda: os.symlink("done.bin", p / "link"))
    refused(errno.EPERM, lambda: os.link(p / "done.bin", p / "hard"))
    refused(errno.EPERM, lambda: os.chmod(p / "done.bin", 0o600))
    refused(errno.EPERM, lambda: os.truncate(p / "done.bin", 3))
    refused(errno.EOPNOTSUPP, lambda: os.setxattr(p / "done.bin", "user.x", b"1"))
    refused(errno.EOPNOTSUPP, lambda: os.rename(p, m.path / "moved"))  # a directory: every key under it

    with open(p / "writing.bin", "wb") as f:
        f.write(b"abc")
        f.flush()
        refused(errno.EBUSY, lambda: open(p / "writing.bin", "rb"))  # read while being written
        refused(errno.EBUSY, lambda: open(p / "writing.bin", "wb"))  # a second writer
        refused(errno.EBUSY, lambda: os.unlink(p / "writing.bin"))
    assert (p / "writing.bin").read_bytes() == b"abc"

    f = open(p / "random.bin", "wb", buffering=0)
    f.write(b"x" * 100)
    f.seek(10)
    refused(errno.EINVAL, lambda: f.write(b"y"))  # a write S3 cannot take: the file will not be published
    refused(errno.EIO, f.close)
    assert not (p / "random.bin").exists()
    assert keys(server, bucket, "refusals/random.bin") == set()


def test_overwrite_delete_rename_and_directories(rw):
    server, bucket, m = rw
    d = m.path / "edit"
    d.mkdir()
    assert sorted(os.listdir(m.path)).count("edit") == 1 and os.listdir(d) == []
    (d / "a.bin").write_bytes(b"first")
    (d / "a.bin").write_bytes(b"second, longer")  # O_TRUNC over an existing key
    assert stored(server, bucket, "edit/a.bin") == b"second, longer" == (d / "a.bin").read_bytes()
    os.rename(d / "a.bin", d / "b.bin")
    assert os.listdir(d) == ["b.bin"] and (d / "b.bin").read_bytes() == b"second, longer"
    assert stored(server, bucket, "edit/b.bin") == b"second, longer"
    with pytest.raises(OSError) as e:
        os.rmdir(d)
    assert e.value.errno == errno.ENOTEMPTY
    os.unlink(d / "b.bin")
    assert os.listdir(d) == []
    os.rmdir(d)
    assert not d.exists()
    assert keys(server, bucket, "edit/") == set()


def test_fsync_uploads_the_full_parts_and_the_object_appears_at_close(rw):
    server, bucket, m = rw
    body = payload(20 * MiB, 5)
    with open(m.path / "synced.bin", "wb") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
        uploads = [u for u in pending_uploads(server, bucket) if u["Key"] == "synced.bin"]
        assert len(uploads) == 1
        parts = server.client.list_parts(Bucket=bucket, Key="synced.bin", UploadId=uploads[0]["UploadId"])["Parts"]
        assert sum(p["Size"] for p in parts) == 16 * MiB  # two full parts; the rest waits for close
        assert keys(server, bucket, "synced.bin") == set()
    assert stored(server, bucket, "synced.bin") == body


WRITER = """
import os, sys, time
with open(sys.argv[1], "wb") as f:
    for i in range(1000):
        f.write(os.urandom(1 << 20))
        f.flush()
        if i == 20:
            print("written", flush=True)
        time.sleep(0.01)
"""


def test_a_writer_killed_mid_file_publishes_nothing_and_leaves_no_parts(rw):
    server, bucket, m = rw
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(m.path / "killed.bin")], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "written"
    writer.kill()
    writer.wait(30)
    deadline = time.time() + 20
    while pending_uploads(server, bucket) and time.time() < deadline:
        time.sleep(0.2)
    assert pending_uploads(server, bucket) == []
    assert not (m.path / "killed.bin").exists()
    assert keys(server, bucket, "killed.bin") == set()
    assert stats(m)["writes"]["aborted"] >= 1


def test_a_mount_stopped_mid_file_aborts_the_upload(store):
    bucket = store.bucket("it-writes-stopped")
    m = Mount(store, bucket, ["--allow-writes", "--staging-size", STAGING])
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(m.path / "cut.bin")], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "written"
        deadline = time.time() + 20
        while not pending_uploads(store, bucket) and time.time() < deadline:
            time.sleep(0.1)
        assert pending_uploads(store, bucket), "parts went up while it was written"
        assert m.stop() == 0  # SIGTERM with the file still open for writing
    finally:
        writer.kill()
        writer.wait(30)
    deadline = time.time() + 20
    while pending_uploads(store, bucket) and time.time() < deadline:
        time.sleep(0.2)
    assert pending_uploads(store, bucket) == [], "the unmount aborted the upload"
    assert keys(store, bucket, "") == set()


def test_uploads_are_counted_in_the_stats_and_the_metrics(rw):
    server, bucket, m = rw
    before = stats(m)
    (m.path / "counted.bin").write_bytes(payload(10 * MiB, 77))
    after = stats(m)
    assert after["writes"]["files_published"] == before["writes"]["files_published"] + 1
    assert after["writes"]["bytes_written"] - before["writes"]["bytes_written"] == 10 * MiB
    uploads = after["agent"]["uploads"]
    assert uploads["bytes_uploaded"] - before["agent"]["uploads"]["bytes_uploaded"] == 10 * MiB
    assert uploads["parts_uploaded"] - before["agent"]["uploads"]["parts_uploaded"] == 2
    metrics = scrape(m.metrics_port)
    assert metrics[("os2g_uploaded_bytes_total", ())] == uploads["bytes_uploaded"]
    assert metrics[("os2g_uploaded_parts_total", ())] == uploads["parts_uploaded"]
    assert metrics[("os2g_published_files_total", ())] == uploads["files_published"]
    assert metrics[("os2g_aborted_uploads_total", ())] == uploads["aborted"]
    assert metrics[("os2g_bytes_written_total", ())] == after["writes"]["bytes_written"]
    assert metrics[("os2g_files_writing", ())] == 0 and metrics[("os2g_staging_upload_bytes", ())] == 0


@pytest.fixture(scope="module")
def faulty(store):
    bucket = store.bucket("it-writes-faults")
    proxy = FaultProxy(store.endpoint)
    m = Mount(proxy, bucket, ["--allow-writes", "--staging-size", STAGING, "--request-timeout", "10", "--retries", "3"])
    yield store, bucket, proxy, m
    proxy.clear()
    assert m.stop() == 0
    proxy.close()


def test_a_part_that_fails_now_and_then_is_retried_and_the_bytes_are_right(faulty):
    server, bucket, proxy, m = faulty
    body = payload(30 * MiB + 3, 11)
    injected = proxy.injected
    proxy.arm(Fault("status", match="part", status=503, code="SlowDown", count=2))
    (m.path / "retried.bin").write_bytes(body)
    proxy.clear()
    assert proxy.injected - injected == 2
    assert stored(server, bucket, "retried.bin") == body
    Tally.add("upload faults retried")


def test_a_part_that_never_uploads_fails_the_close_with_eio_and_leaves_nothing(faulty):
    server, bucket, proxy, m = faulty
    proxy.arm(Fault("status", match="part", status=500, code="InternalError"))
    try:
        with pytest.raises(OSError) as e:
            with open(m.path / "lost.bin", "wb") as f:
                f.write(payload(20 * MiB, 12))
        assert e.value.errno == errno.EIO
    finally:
        proxy.clear()
    deadline = time.time() + 20
    while pending_uploads(server, bucket) and time.time() < deadline:
        time.sleep(0.2)
    assert pending_uploads(server, bucket) == []
    assert not (m.path / "lost.bin").exists()
    assert keys(server, bucket, "lost.bin") == set()
    Tally.add("persistent upload faults ending in EIO")


def test_a_store_that_takes_no_unsigned_payloads_gets_signed_uploads(store):
    """Parts and small files go as streamed PUTs with an unsigned payload; a store that refuses those gets
    the MinIO client's signed PUTs from the first refusal on, with the same bytes."""
    bucket = store.bucket("it-writes-signed")
    proxy = FaultProxy(store.endpoint)
    proxy.refuse_unsigned = True
    m = Mount(proxy, bucket, ["--allow-writes", "--staging-size", STAGING])
    try:
        body = payload(17 * MiB + 5, 31)
        (m.path / "big.bin").write_bytes(body)
        refused = proxy.refused_unsigned
        assert 1 <= refused <= 3, "refused by the parts in flight at first"
        (m.path / "small.bin").write_bytes(b"tiny")
        assert proxy.refused_unsigned == refused, "then signed"
        assert stored(store, bucket, "big.bin") == body and stored(store, bucket, "small.bin") == b"tiny"
        assert "signed whole from now on" in m.output()
    finally:
        assert m.stop() == 0
        proxy.close()


def test_split_mode_writes_through_the_agent_with_no_credentials_in_the_shim(store):
    bucket = store.bucket("it-writes-split")
    work = Path(tempfile.mkdtemp(prefix="os2g-writes-split-"))
    agent = Agent(store, work, ["--allow-writes"])
    m = Mount(store, bucket, ["--agent", f"unix:{agent.socket}", "--allow-writes"], credentials=False)
    try:
        assert not any(k.startswith("AWS_") for k in open(f"/proc/{m.proc.pid}/environ").read().split("\0"))
        body = payload(25 * MiB + 1, 21)
        (m.path / "out").mkdir()
        (m.path / "out" / "big.bin").write_bytes(body)
        (m.path / "out" / "small.txt").write_text("ok")
        assert stored(store, bucket, "out/big.bin") == body and stored(store, bucket, "out/small.txt") == b"ok"
        assert sha256((m.path / "out" / "big.bin").read_bytes()) == sha256(body)
        uploads = stats(m)["agent"]["uploads"]
        assert uploads["files_published"] == 2 and uploads["parts_uploaded"] == 4
    finally:
        m.stop()
        agent.stop()
