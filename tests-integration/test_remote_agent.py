"""The agent on another machine: `os2g agent --listen tcp://` in a network namespace and a mount
namespace of its own (a veth pair from 198.18.0.0/15 between it and the host, a private /dev/shm), the
S3 server listening only inside that namespace and the credentials only there. The host's mount
(`--agent tcp://`, mutual TLS) has its own staging region that the agent posts chunks into: nothing is
shared but the link."""

import errno
import hashlib
import io
import os
import signal
import socket
import subprocess
import tarfile
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from conftest import CREDENTIALS_ENV, OS2G, Os2gProcess, forget_pages, mounted, payload, sha256

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

HOST_IP, AGENT_IP, PORT = "198.18.0.1", "198.18.0.2", 7070
BUCKET = "remote"


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def openssl(work, *args):
    subprocess.run(["openssl", *args], cwd=work, check=True, capture_output=True)


def issue(work, ca, name):
    """`name`.pem and `name`.key signed by `ca` (made when missing), in `work`."""
    if not (work / f"{ca}.pem").exists():
        openssl(work, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", f"{ca}.key", "-out", f"{ca}.pem", "-days", "2", "-subj", f"/CN={ca}")
    openssl(work, "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f"{name}.key",
            "-out", f"{name}.csr", "-subj", f"/CN={name}")
    openssl(work, "x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
            "-out", f"{name}.pem", "-days", "2")
    return ["--link-cert", str(work / f"{name}.pem"), "--link-key", str(work / f"{name}.key"), "--link-ca", str(work / f"{ca}.pem")]


class Dpu:
    """The other machine: a network namespace, a veth pair to the host, and in it, each with a private
    /dev/shm, the S3 server (on its own loopback only) and the agent."""

    def __init__(self, work):
        self.work = work
        tag = os.getpid() % 100000
        self.ns, self.veth = f"os2g-dpu-{tag}", f"os2gh{tag}"
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.veth, "type", "veth", "peer", "name", "eth0", "netns", self.ns)
        sh("ip", "addr", "add", f"{HOST_IP}/30", "dev", self.veth)
        sh("ip", "link", "set", self.veth, "up")
        for command in (["ip", "addr", "add", f"{AGENT_IP}/30", "dev", "eth0"], ["ip", "link", "set", "eth0", "up"],
                        ["ip", "link", "set", "lo", "up"]):
            sh("ip", "netns", "exec", self.ns, *command)
        self.agent_certs = issue(work, "link-ca", "agent")
        self.shim_certs = issue(work, "link-ca", "shim")
        (work / "s3" / BUCKET).mkdir(parents=True)
        self.s3 = self.spawn("s3", ["s3-server", "--dir", str(work / "s3"), "--port", "9000"], "endpoint ")
        self.agent = None
        self.start_agent()

    def spawn(self, name, args, ready, env=None):
        """Runs `os2g args` in the namespace with a private /dev/shm; waits for `ready` in its output."""
        log = open(self.work / f"{name}-{time.time_ns()}.log", "w+")
        inner = 'mount -t tmpfs -o size=2g os2g-dpu-shm /dev/shm && exec "$0" "$@"'
        proc = Os2gProcess()
        proc.log = log
        proc.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, "sh", "-c", inner, OS2G, *args], stdout=log,
                                     stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        deadline = time.time() + 90
        while ready not in proc.output():
            assert proc.proc.poll() is None, proc.output()
            assert time.time() < deadline, proc.output()
            time.sleep(0.05)
        return proc

    def start_agent(self):
        self.agent = self.spawn("agent", ["agent", "--listen", f"tcp://{AGENT_IP}:{PORT}", *self.agent_certs,
                                          "--endpoint", "http://127.0.0.1:9000", "--staging-dir", "/dev/shm/agent",
                                          "--request-timeout", "3", "--retries", "1", "--allow-writes"],
                                "agent listening", env=CREDENTIALS_ENV)

    def kill_agent(self):
        self.agent.proc.send_signal(signal.SIGKILL)
        self.agent.proc.wait(30)

    def link(self, up):
        sh("ip", "link", "set", self.veth, "up" if up else "down")

    def close(self):
        for p in (self.agent, self.s3):
            if p and p.proc.poll() is None:
                p.proc.terminate()
                p.proc.wait(30)
        sh("ip", "link", "del", self.veth, check=False)
        sh("ip", "netns", "del", self.ns, check=False)


class RemoteMount(Os2gProcess):
    """`os2g mount --agent tcp://` on the host, with no credentials in its environment."""

    def __init__(self, dpu, extra=(), certs=None):
        self.dir = Path(tempfile.mkdtemp(prefix="os2g-remote-"))
        self.path = self.dir / "mnt"
        self.path.mkdir()
        self.log = open(self.dir / "mount.log", "w+")
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        self.command = [OS2G, "mount", BUCKET, str(self.path), "--agent", f"tcp://{AGENT_IP}:{PORT}",
                        *(certs or dpu.shim_certs), "--staging-dir", str(self.dir / "staging"), "--staging-size", "256M",
                        "--request-timeout", "2", "--retries", "1", *extra]
        self.proc = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 90
        while not (mounted(self.path) and " mounted " in self.output()):
            assert self.proc.poll() is None, self.output()
            assert time.time() < deadline, self.output()
            time.sleep(0.05)

    def stop(self):
        self.signal_and_wait(signal.SIGTERM, 30)


SMALL = {f"train/class{c}/img{i:03d}.jpg": payload(20_000 + 997 * i, 100 * c + i) for c in range(4) for i in range(40)}
LARGE = payload(40 * 1024 * 1024 + 123, 7)


def tar_bytes():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for i in range(20):
            body = payload(30_000 + i, 500 + i)
            info = tarfile.TarInfo(f"sample{i:02d}.bin")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


@pytest.fixture(scope="module")
def dpu(tmp_path_factory):
    d = Dpu(tmp_path_factory.mktemp("dpu"))
    try:
        m = RemoteMount(d, ["--allow-writes"])
        try:  # the dataset goes in through the link too: the host cannot reach the store
            for key, body in SMALL.items():
                (m.path / key).parent.mkdir(parents=True, exist_ok=True)
                (m.path / key).write_bytes(body)
            (m.path / "large.bin").write_bytes(LARGE)
            (m.path / "shards").mkdir()
            (m.path / "shards/train-0.tar").write_bytes(tar_bytes())
        finally:
            m.stop()
        yield d
    finally:
        d.close()


def test_the_host_reaches_neither_the_store_nor_any_credential(dpu):
    with pytest.raises(OSError):
        socket.create_connection((AGENT_IP, 9000), timeout=2).close()
    m = RemoteMount(dpu)
    try:
        environ = Path(f"/proc/{m.proc.pid}/environ").read_bytes()
        assert b"AWS_SECRET_ACCESS_KEY" not in environ and CREDENTIALS_ENV["AWS_SECRET_ACCESS_KEY"].encode() not in environ
        connections = Path(f"/proc/{m.proc.pid}/net/tcp").read_text()
        assert f"{9000:04X}" not in [line.split()[2].split(":")[1] for line in connections.splitlines()[1:]], \
            "no connection of the mount's to the store's port"
    finally:
        m.stop()


def test_small_and_large_files_and_tar_members_read_back_equal(dpu):
    m = RemoteMount(dpu, ["--expand-tar"])
    try:
        for key, body in SMALL.items():
            assert sha256((m.path / key).read_bytes()) == sha256(body), key
        assert sha256((m.path / "large.bin").read_bytes()) == sha256(LARGE)
        with tarfile.open(fileobj=io.BytesIO(tar_bytes())) as tar:
            for member in tar.getmembers():
                assert (m.path / "shards/train-0.tar.d" / member.name).read_bytes() == tar.extractfile(member).read()
        segments = list((m.dir / "staging").rglob("segment-*"))
        assert segments, "the host's own staging region holds the chunks"
    finally:
        m.stop()


def test_a_dataloader_epoch_and_a_checkpoint_round_trip(dpu):
    m = RemoteMount(dpu, ["--allow-writes"])
    try:
        script = textwrap.dedent(f"""
            import hashlib, os, sys, torch
            from torch.utils.data import DataLoader, Dataset
            root = {str(m.path)!r}
            names = sorted(os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "train")) for f in fs)
            class Files(Dataset):
                def __len__(self): return len(names)
                def __getitem__(self, i):
                    with open(names[i], "rb") as f:
                        return os.path.relpath(names[i], root), hashlib.sha256(f.read()).hexdigest()
            seen = dict(x for batch in DataLoader(Files(), batch_size=8, shuffle=True, num_workers=2, collate_fn=lambda b: b) for x in batch)
            for k, v in seen.items(): print(k, v)
            state = {{"w": torch.arange(3_000_000, dtype=torch.float32)}}
            torch.save(state, os.path.join(root, "ckpt/step-1.pt"))
            back = torch.load(os.path.join(root, "ckpt/step-1.pt"))
            assert torch.equal(back["w"], state["w"])
            print("checkpoint ok")
        """)
        (m.path / "ckpt").mkdir(exist_ok=True)
        out = subprocess.run(["/usr/bin/python3", "-c", script], capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        lines = out.stdout.split("\n")
        seen = dict(line.split() for line in lines if line.startswith("train/"))
        assert seen == {k: sha256(v) for k, v in SMALL.items()}
        assert "checkpoint ok" in lines
    finally:
        m.stop()


def read_errno(path):
    try:
        Path(path).read_bytes()
        return 0
    except OSError as e:
        return e.errno


def until_readable(path, expected, seconds):
    deadline = time.time() + seconds
    while True:
        try:
            if sha256(Path(path).read_bytes()) == sha256(expected):
                return
        except OSError:
            pass
        assert time.time() < deadline, f"{path} did not come back"
        time.sleep(0.5)


def test_agent_killed_staged_files_serve_others_fail_then_recover(dpu):
    m = RemoteMount(dpu)
    try:
        staged, other = "train/class0/img000.jpg", "train/class1/img000.jpg"
        assert (m.path / staged).read_bytes() == SMALL[staged]
        dpu.kill_agent()
        forget_pages(m.path / staged)
        assert (m.path / staged).read_bytes() == SMALL[staged], "served from the host's region with the agent gone"
        t0 = time.time()
        assert read_errno(m.path / other) == errno.EIO
        assert time.time() - t0 < 30, "EIO within the read deadline"
        dpu.start_agent()
        until_readable(m.path / other, SMALL[other], 30)
        forget_pages(m.path / staged)
        assert (m.path / staged).read_bytes() == SMALL[staged], "the new agent took over what the host held"
    finally:
        m.stop()


def test_a_file_written_across_an_agent_restart_is_eio_and_not_published(dpu):
    m = RemoteMount(dpu, ["--allow-writes"])
    try:
        (m.path / "ckpt").mkdir(exist_ok=True)
        racing, after = m.path / "ckpt/racing.bin", m.path / "ckpt/after.bin"
        part = payload(9 * 1024 * 1024, 11)  # more than one 8 MiB part: one is uploaded before the kill
        failed = None
        f = open(racing, "wb", buffering=0)
        try:
            f.write(part)
            dpu.kill_agent()
            dpu.start_agent()
            f.write(part)
            os.fsync(f.fileno())
        except OSError as e:
            failed = e.errno
        finally:
            try:
                f.close()
            except OSError as e:
                failed = failed or e.errno
        assert failed == errno.EIO, "the upload was the killed agent's: the writer is told"
        body = payload(3 * 1024 * 1024 + 5, 12)
        deadline = time.time() + 30
        while True:  # the shim reconnects; then writes publish again
            try:
                after.write_bytes(body)
                break
            except OSError:
                assert time.time() < deadline, m.output()
                time.sleep(0.5)
        assert after.read_bytes() == body
        stored = dpu.work / "s3" / BUCKET / "ckpt"
        assert (stored / "after.bin").exists() and not (stored / "racing.bin").exists(), "nothing of the racing file published"
        assert read_errno(racing) == errno.ENOENT
    finally:
        m.stop()


def test_link_cut_staged_files_serve_others_fail_then_recover(dpu):
    m = RemoteMount(dpu)
    try:
        staged, other = "train/class2/img001.jpg", "train/class3/img001.jpg"
        assert (m.path / staged).read_bytes() == SMALL[staged]
        dpu.link(up=False)
        try:
            forget_pages(m.path / staged)
            assert (m.path / staged).read_bytes() == SMALL[staged]
            t0 = time.time()
            assert read_errno(m.path / other) == errno.EIO
            assert time.time() - t0 < 30, "EIO within the read deadline"
        finally:
            dpu.link(up=True)
        until_readable(m.path / other, SMALL[other], 60)
    finally:
        m.stop()


def test_a_peer_of_another_ca_and_a_plain_tcp_client_are_refused(dpu, tmp_path):
    stranger = issue(tmp_path, "other-ca", "stranger")
    r = subprocess.run([OS2G, "mount", BUCKET, str(tmp_path), "--agent", f"tcp://{AGENT_IP}:{PORT}", *stranger[:4],
                        "--link-ca", dpu.shim_certs[5]], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    with socket.create_connection((AGENT_IP, PORT), timeout=10) as s:
        s.sendall(b"\x00\x00\x00\x15\x01" + b"\x00" * 8 + b"OS2G" + b"\x00\x00\x00\x09")
        s.settimeout(10)
        try:
            assert s.recv(1) == b"", "closed without an answer"
        except ConnectionResetError:
            pass
    time.sleep(0.5)
    log = dpu.agent.output()
    assert log.count("refused a link from") >= 2, log
