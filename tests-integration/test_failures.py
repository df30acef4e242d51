"""What the network or the server can do to a mount: a read fails with EIO within its deadline, never
hangs; a changed object is EIO for the open handle and visible to the next open after the TTL."""

import errno
import os
import subprocess
import time

import pytest

from conftest import CREDENTIALS_ENV, OS2G, Mount, S3Server, mounted, payload


def test_server_gone_means_eio_within_the_deadline():
    server = S3Server()
    try:
        server.bucket("it-gone", {"a.bin": payload(300_000, 1), "b.bin": payload(300_000, 2)})
        m = Mount(server, "it-gone", ["--request-timeout", "2", "--retries", "1"])
        try:
            assert (m.path / "a.bin").read_bytes() == payload(300_000, 1)
            server.stop()
            t0 = time.time()
            with pytest.raises(OSError) as e:
                (m.path / "b.bin").read_bytes()
            elapsed = time.time() - t0
            assert e.value.errno == errno.EIO
            assert elapsed < 15, f"the read took {elapsed:.1f} s"
            # what was staged before the server went stays readable
            assert (m.path / "a.bin").read_bytes() == payload(300_000, 1)
        finally:
            assert m.stop() == 0
    finally:
        if server.proc.poll() is None:
            server.stop()


def test_object_changed_while_open_is_eio_and_the_next_open_after_the_ttl_sees_it(s3):
    size = 24 << 20
    s3.bucket("it-change", {"obj": payload(size, 1)})
    m = Mount(s3, "it-change", ["--metadata-ttl", "1", "--chunk-size", "1M"])
    try:
        with open(m.path / "obj", "rb", buffering=0) as f:
            assert f.read(1 << 20) == payload(size, 1)[: 1 << 20]
            s3.client.put_object(Bucket="it-change", Key="obj", Body=payload(size, 2))
            # far past what readahead staged from the old version: a GET with If-Match, which fails
            with pytest.raises(OSError) as e:
                f.seek(20 << 20)
                f.read(1 << 20)
            assert e.value.errno == errno.EIO, "never a mix of old and new bytes"
        time.sleep(2)
        assert (m.path / "obj").read_bytes() == payload(size, 2)
    finally:
        assert m.stop() == 0


def test_object_deleted_while_open_is_eio_and_gone_after_the_ttl(s3):
    size = 24 << 20
    s3.bucket("it-delete", {"obj": payload(size, 3)})
    m = Mount(s3, "it-delete", ["--metadata-ttl", "1", "--chunk-size", "1M"])
    try:
        with open(m.path / "obj", "rb", buffering=0) as f:
            assert f.read(1 << 20) == payload(size, 3)[: 1 << 20]
            s3.client.delete_object(Bucket="it-delete", Key="obj")
            # past the TTL: the kernel refreshes the open file's attributes before the read, and the
            # handle's pinned version answers (the key itself is gone)
            time.sleep(1.5)
            with pytest.raises(OSError) as e:
                f.seek(20 << 20)
                f.read(1 << 20)
            assert e.value.errno == errno.EIO, "deleted under an open handle is EIO, as a changed object is"
        time.sleep(2)
        assert not (m.path / "obj").exists()
    finally:
        assert m.stop() == 0


def test_daemon_detaches_once_mounted(s3, tmp_path):
    s3.bucket("it-daemon", {"x": b"daemon"})
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run([OS2G, "mount", "it-daemon", str(mnt), "--endpoint", s3.endpoint, "--daemon",
                        "--staging-dir", str(tmp_path / "staging")],
                       capture_output=True, text=True, timeout=120, env={**os.environ, **CREDENTIALS_ENV})
    assert r.returncode == 0, r.stderr
    try:
        assert mounted(mnt)
        assert (mnt / "x").read_bytes() == b"daemon"
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
    deadline = time.time() + 30
    while (tmp_path / "staging").exists() and time.time() < deadline:
        time.sleep(0.1)
    assert not (tmp_path / "staging").exists(), "the detached mount cleaned up after fusermount -u"
