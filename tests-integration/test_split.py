"""Split mode: `os2g agent` holds the credentials, the S3 client and the staging region; `os2g mount
--agent` is a shim that holds no secret and opens no network connection. Every test runs both ways a
READ can be answered: by the agent on the /dev/fuse the shim lends it (`--agent-replies on`, where
both share a kernel), and by the shim from the agent's shared region (`off`, as with an agent on a
DPU). Killing either side is survived."""

import errno
import json
import os
import signal
import stat
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import (CREDENTIALS_ENV, OS2G, SECRET_KEY, Agent, tree_sizes, Mount, Tally, mounted, payload, read_verified,
                      run_os2g, sha256)

FILES = {f"train/c{c}/{i:03d}.jpg": payload(20_000 + 997 * i, 100 * c + i) for c in range(3) for i in range(30)}
FILES["big/shard-0.tar"] = payload(40 << 20, 9)
HASHES = {k: sha256(v) for k, v in FILES.items()}


REPLIES = pytest.mark.parametrize("replies", ["on", "off"], ids=["agent-replies", "shim-replies"])


@pytest.fixture(scope="module", params=["on", "off"], ids=["agent-replies", "shim-replies"])
def split(s3, request):
    """An agent and a mount of bucket it-split through it; m.replies says who answers READs."""
    s3.bucket(f"it-split-{request.param}", FILES)
    work = Path(tempfile.mkdtemp(prefix="os2g-split-"))
    agent = Agent(s3, work)
    m = Mount(s3, f"it-split-{request.param}", ["--agent", f"unix:{agent.socket}", "--chunk-size", "1M",
                                                 "--agent-replies", request.param], credentials=False)
    m.replies = request.param
    yield agent, m
    m.stop()
    agent.stop()


def test_split_mode_returns_the_same_bytes_and_tree(split):
    agent, m = split
    assert tree_sizes(m.path) == {k: len(v) for k, v in FILES.items()}
    for key, digest in HASHES.items():
        read_verified(m.path / key, digest)
    Tally.add("split mode: files verified", len(FILES))


def test_hints_and_warm_travel_through_the_link(split):
    agent, m = split
    keys = sorted(k for k in FILES if k.startswith("train/"))

    def counters():
        return json.loads((m.path / ".os2g/stats").read_text())["agent"]

    before = counters()
    (m.path / ".os2g/prefetch").write_text("\n".join(keys) + "\nno/such/file\n")
    deadline = time.time() + 30
    while counters()["prefetch"]["files_staged"] - before["prefetch"]["files_staged"] < len(keys):
        assert time.time() < deadline, counters()
        time.sleep(0.1)
    for key in keys:
        read_verified(m.path / key, HASHES[key])
    after = counters()
    assert after["prefetch"]["staged_before_open"] - before["prefetch"]["staged_before_open"] == len(keys)
    assert json.loads((m.path / ".os2g/stats").read_text())["hint_lines"]["rejected"] >= 1

    r = run_os2g("warm", str(m.path / "big"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("warmed 1 files"), r.stdout
    assert counters()["warm"]["bytes_staged"] - before["warm"]["bytes_staged"] == len(FILES["big/shard-0.tar"])
    Tally.add("split mode: hinted files verified", len(keys))


def test_stats_show_shim_and_agent_apart_and_no_secret(split):
    agent, m = split
    (m.path / "train/c0/000.jpg").read_bytes()
    text = (m.path / ".os2g/stats").read_text()
    assert SECRET_KEY not in text and "os2g-demo" not in text
    doc = json.loads(text)
    assert doc["mode"] == "split"
    assert doc["bytes_served"] > 0
    if m.replies == "on":  # the agent holds the mount's /dev/fuse too and answers every READ: the shim moves no bytes
        assert doc["bytes_answered_by_agent"] == doc["bytes_served"], doc
        assert "does not reply to READs itself" not in m.output()
    else:  # the shim answered every READ from the staging region, with no message for a staged chunk
        assert doc["bytes_answered_by_agent"] == 0, doc
    assert doc["shim"]["cpu_seconds"] > 0 and doc["agent"]["cpu_seconds"] > 0
    assert doc["agent"]["gets"] > 0
    assert ".os2g" not in os.listdir(m.path), "the control directory is hidden"
    r = run_os2g("stats", str(m.path))
    assert r.returncode == 0 and json.loads(r.stdout)["mode"] == "split"


def test_the_shim_holds_no_secret_and_no_network_connection(split):
    agent, m = split
    pid = m.proc.pid
    for f in ("environ", "cmdline"):
        with open(f"/proc/{pid}/{f}", "rb") as fh:
            assert SECRET_KEY.encode() not in fh.read(), f
    sockets = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            sockets.add(target[8:-1])
    assert sockets, "it holds at least its socket to the agent"
    tcp = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            next(fh)
            tcp.update(line.split()[9] for line in fh)
    assert not sockets & tcp, "the shim has a TCP connection"
    assert stat.S_IMODE(os.stat(agent.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(agent.staging).st_mode) == 0o700
    Tally.add("secret leak checks")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_an_idle_mount_and_an_idle_agent_use_no_cpu(split):
    """No polling on either side of the link: both block on the socket or the FUSE device."""
    agent, m = split
    (m.path / "train/c1/001.jpg").read_bytes()
    time.sleep(3)  # let the JIT and GC finish what the reads started
    before = (cpu_seconds(m.proc.pid), cpu_seconds(agent.proc.pid))
    time.sleep(5)
    used = (cpu_seconds(m.proc.pid) - before[0], cpu_seconds(agent.proc.pid) - before[1])
    print(f"idle for 5 s: shim {used[0]:.2f} s CPU, agent {used[1]:.2f} s CPU")
    assert used[0] < 0.25 and used[1] < 0.25, used


def test_refusals_through_the_agent(s3, split, tmp_path):
    agent, _ = split
    (tmp_path / "mnt").mkdir()
    r = run_os2g("mount", f"it-split-{split[1].replies}", str(tmp_path / "mnt"), "--agent", f"unix:{tmp_path}/none.sock")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no agent" in r.stderr, r.stderr
    r = run_os2g("mount", "no-such-bucket", str(tmp_path / "mnt"), "--agent", f"unix:{agent.socket}")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "refused the mount" in r.stderr and "does not exist" in r.stderr, r.stderr
    Tally.add("bad inputs refused", 2)


@REPLIES
def test_agent_killed_mid_read_is_eio_in_bounded_time_and_a_restart_recovers(s3, tmp_path, replies):
    s3.bucket(f"it-split-kill-{replies}", {"big.bin": FILES["big/shard-0.tar"], "small.bin": payload(50_000, 3)})
    agent = Agent(s3, tmp_path)
    m = Mount(s3, f"it-split-kill-{replies}", ["--agent", f"unix:{agent.socket}", "--chunk-size", "1M", "--max-readahead", "2M",
                                              "--agent-replies", replies], credentials=False)
    try:
        outcome = {}

        def reader():
            got = 0
            try:
                with open(m.path / "big.bin", "rb", buffering=0) as f:
                    while chunk := f.read(1 << 20):
                        got += len(chunk)
                        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
                        time.sleep(0.02)
                outcome["result"] = "finished"
            except OSError as e:
                outcome["result"] = e.errno
                outcome["at"] = time.time()

        t = threading.Thread(target=reader)
        t.start()
        time.sleep(0.3)
        agent.proc.kill()
        killed = time.time()
        t.join(30)
        assert not t.is_alive(), "the reader hung"
        if outcome["result"] != "finished":
            assert outcome["result"] == errno.EIO
            assert outcome["at"] - killed < 15
        # new reads fail fast while the agent is away
        t0 = time.time()
        with pytest.raises(OSError) as e:
            (m.path / "small.bin").read_bytes()
        assert e.value.errno == errno.EIO and time.time() - t0 < 2
        agent = Agent(s3, tmp_path)
        deadline = time.time() + 20
        while True:
            try:
                assert (m.path / "small.bin").read_bytes() == payload(50_000, 3)
                break
            except OSError:
                assert time.time() < deadline, m.output()
                time.sleep(0.2)
        read_verified(m.path / "big.bin", HASHES["big/shard-0.tar"])
        assert "reconnected to the agent" in m.output()
        Tally.add("lifecycle cases")
    finally:
        assert m.stop() == 0
        agent.stop()


@REPLIES
def test_a_killed_shim_has_its_staging_freed_by_the_agent(s3, tmp_path, replies):
    s3.bucket(f"it-split-shim-{replies}", {"a.bin": payload(300_000, 4)})
    agent = Agent(s3, tmp_path)
    m = Mount(s3, f"it-split-shim-{replies}", ["--agent", f"unix:{agent.socket}", "--agent-replies", replies], credentials=False)
    try:
        assert (m.path / "a.bin").read_bytes() == payload(300_000, 4)
        regions = [p for p in agent.staging.iterdir() if p.is_dir()]
        assert len(regions) == 1
        m.proc.kill()
        m.proc.wait(30)
        deadline = time.time() + 10
        while regions[0].exists():
            assert time.time() < deadline, agent.output()
            time.sleep(0.05)
        assert "its staging region is freed" in agent.output()
        Tally.add("lifecycle cases")
    finally:
        if mounted(m.path):
            subprocess.run(["fusermount3", "-u", str(m.path)], check=False)
        agent.stop()
