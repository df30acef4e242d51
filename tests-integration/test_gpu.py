"""GPU staging without a GPU: `--gpu` through a stand-in CUDA driver (src/test/c/fake_libcuda.c, built
with gcc) and without any driver; the Python client's staged path (leases, mapped segments) and its
read() fallback return the file's bytes. On a machine with a GPU, tests-integration/gpu/check.sh runs
the real thing."""

import errno
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import CREDENTIALS_ENV, OS2G, ROOT, Mount, free_port, payload, run_os2g, sha256

sys.path.insert(0, str(ROOT / "clients/python"))
import torch  # noqa: E402
import os2g.torch as os2g_torch  # noqa: E402

FILES = {"img/a.jpg": payload(120_000, 1), "img/b.jpg": payload(5_000, 2), "shard/big.bin": payload(3 << 20, 3),
         "img/empty.bin": b""}


@pytest.fixture(scope="module")
def fake_cuda(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda") / "libcuda.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-o", str(out), str(ROOT / "src/test/c/fake_libcuda.c")], check=True)
    return out


@pytest.fixture(scope="module")
def bucket(s3):
    return s3.bucket("it-gpu", FILES)


def stats(mount):
    return json.loads((mount.path / ".os2g/stats").read_text())


def pinned_once_released(mount, expected=0, seconds=10):
    """Pinned chunks once the kernel has sent its RELEASEs: close() returns before FUSE delivers them."""
    deadline = time.monotonic() + seconds
    while True:
        pinned = stats(mount)["agent"]["staging"]["pinned_chunks"]
        if pinned == expected or time.monotonic() > deadline:
            return pinned
        time.sleep(0.02)


def test_gpu_without_a_driver_or_device_is_refused_with_one_line(s3, bucket, fake_cuda, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    base = ["mount", bucket, str(mnt), "--endpoint", s3.endpoint, "--staging-dir", str(tmp_path / "staging")]
    r = run_os2g(*base, "--gpu", "0", env={**CREDENTIALS_ENV, "OS2G_CUDA_LIBRARY": str(tmp_path / "none/libcuda.so.1")})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"os2g: --gpu 0: no CUDA driver: cannot load {tmp_path}/none/libcuda.so.1 "
                                             "(install the NVIDIA driver, or set OS2G_CUDA_LIBRARY to its libcuda.so.1)"]
    r = run_os2g(*base, "--gpu", "3", env={**CREDENTIALS_ENV, "OS2G_CUDA_LIBRARY": str(fake_cuda)})
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["os2g: --gpu 3: no CUDA device 3 (this machine has 1)"]
    r = run_os2g("agent", "--listen", f"unix:{tmp_path}/a.sock", "--endpoint", s3.endpoint, "--gpu", "0",
                 env={**CREDENTIALS_ENV, "OS2G_CUDA_LIBRARY": str(tmp_path / "none.so")})
    assert r.returncode == 2 and "no CUDA driver" in r.stderr


def test_gpu_registers_the_whole_region_in_process_and_through_an_agent(s3, bucket, fake_cuda, tmp_path):
    env = {"OS2G_CUDA_LIBRARY": str(fake_cuda)}
    m = Mount(s3, bucket, ["--gpu", "0", "--staging-size", "64M"], env=env)
    try:
        gpu = stats(m)["agent"]["gpu"]
        assert gpu == {"device": 0, "name": "os2g fake GPU", "registered_segments": 1, "registered_bytes": 64 << 20}
        assert sha256((m.path / "img/a.jpg").read_bytes()) == sha256(FILES["img/a.jpg"])
        assert "registered with GPU 0 (os2g fake GPU)" in m.output()
        assert stats(m)["bytes_spliced"] > 0, "a registered region's reads are spliced like any other's"
    finally:
        assert m.stop() == 0

    sock = tmp_path / "agent.sock"
    agent = subprocess.Popen([OS2G, "agent", "--listen", f"unix:{sock}", "--endpoint", s3.endpoint, "--gpu", "0",
                              "--staging-dir", str(tmp_path / "agent-staging")],
                             env={**os.environ, **CREDENTIALS_ENV, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(900):
            if sock.exists():
                break
            assert agent.poll() is None
            __import__("time").sleep(0.1)
        m = Mount(s3, bucket, ["--agent", f"unix:{sock}", "--staging-size", "32M"], credentials=False)
        try:
            assert stats(m)["agent"]["gpu"]["registered_bytes"] == 32 << 20
            assert sha256((m.path / "img/b.jpg").read_bytes()) == sha256(FILES["img/b.jpg"])
            assert stats(m)["bytes_answered_by_agent"] > 0, "and the agent answers the reads from it by splice"
        finally:
            m.stop()
        refused = run_os2g("mount", bucket, str(tmp_path), "--agent", f"unix:{sock}", "--gpu", "5")
        assert refused.returncode == 2 and "no CUDA device 5 (this machine has 1)" in refused.stderr
    finally:
        agent.terminate()
        agent.wait(30)


def test_gpu_with_an_agent_on_another_machine_registers_the_hosts_own_region(s3, bucket, fake_cuda, tmp_path):
    """Over tcp:// the host owns its region (the agent posts into it): the mount registers it with its GPU."""
    port = free_port()
    agent = subprocess.Popen([OS2G, "agent", "--listen", f"tcp://127.0.0.1:{port}", "--endpoint", s3.endpoint,
                              "--staging-dir", str(tmp_path / "agent-staging")],
                             env={**os.environ, **CREDENTIALS_ENV}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in agent.stdout:
            if "agent listening" in line:
                break
        m = Mount(s3, bucket, ["--agent", f"tcp://127.0.0.1:{port}", "--gpu", "0", "--staging-size", "32M"],
                  env={"OS2G_CUDA_LIBRARY": str(fake_cuda)}, credentials=False)
        try:
            assert stats(m)["agent"]["gpu"]["registered_bytes"] == 32 << 20
            assert sha256((m.path / "img/a.jpg").read_bytes()) == sha256(FILES["img/a.jpg"])
            assert "staging registered with GPU 0 (os2g fake GPU)" in m.output()
        finally:
            assert m.stop() == 0
    finally:
        agent.terminate()
        agent.wait(30)


@pytest.fixture(scope="module")
def mount(s3, bucket):
    m = Mount(s3, bucket, ["--staging-size", "16M", "--chunk-size", "1M"])
    yield m
    m.stop()


def test_a_lease_names_the_files_bytes_in_the_segments_and_pins_them_until_closed(mount):
    with os2g_torch.Lease(mount.path / "shard/big.bin") as lease:
        assert lease.size == len(FILES["shard/big.bin"])
        assert sha256((mount.path / "shard/big.bin").read_bytes()) == sha256(FILES["shard/big.bin"])
        assert stats(mount)["bytes_spliced"] > 0, "and reads are spliced"
        data = b""
        for segment, offset, length in lease.extents:
            with open(segment, "rb") as f:
                f.seek(offset)
                data += f.read(length)
        assert sha256(data) == sha256(FILES["shard/big.bin"])
        assert stats(mount)["agent"]["staging"]["pinned_chunks"] == 3
    assert pinned_once_released(mount) == 0


def test_load_to_gpu_and_collate_return_the_files_bytes_staged_or_read(mount, tmp_path):
    assert not torch.cuda.is_available(), "this suite runs without a GPU; gpu/check.sh is for one"
    for key, body in FILES.items():
        staged = os2g_torch.load_to_gpu(mount.path / key, "cpu")  # through the lease and the mapped segments
        assert staged.dtype == torch.uint8 and bytes(staged.numpy()) == body
        fallback = os2g_torch.load_to_gpu(mount.path / key, "cuda")  # no CUDA: read(), on the CPU
        assert fallback.device.type == "cpu" and bytes(fallback.numpy()) == body
    local = tmp_path / "local.bin"
    local.write_bytes(b"not on os2g")
    batch = os2g_torch.collate_to_gpu([mount.path / "img/a.jpg", local, mount.path / "img/b.jpg"], "cpu")
    assert [bytes(t.numpy()) for t in batch] == [FILES["img/a.jpg"], b"not on os2g", FILES["img/b.jpg"]]
    assert pinned_once_released(mount) == 0, "every lease ended"


def test_a_file_with_too_many_extents_for_an_xattr_is_leased_through_the_control_file(mount, monkeypatch):
    real = os.getxattr

    def too_big(target, name, *args, **kwargs):
        if name == os2g_torch.EXTENTS_XATTR:
            raise OSError(errno.E2BIG, "Argument list too long")
        return real(target, name, *args, **kwargs)

    monkeypatch.setattr(os2g_torch.os, "getxattr", too_big)
    with os2g_torch.Lease(mount.path / "shard/big.bin") as lease:
        assert lease._query is not None
        assert stats(mount)["agent"]["staging"]["pinned_chunks"] == 3
    assert bytes(os2g_torch.load_to_gpu(mount.path / "shard/big.bin", "cpu").numpy()) == FILES["shard/big.bin"]
    assert pinned_once_released(mount) == 0
