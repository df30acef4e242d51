"""os2g tried as an adversary would: another local user who plants links and directories where root's
mount will make its own, a server that misbehaves on purpose (hostile_s3.py), a writer killed in a
pid namespace the mount cannot see into, and bad options. docs/RELIABILITY.md lists what is defended."""

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import CREDENTIALS_ENV, Mount, Tally, mounted, payload, run_os2g
from hostile_s3 import BUCKET, HostileS3

ADVERSARY = "os2g-it-adversary"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making a second local user and namespaces needs root")


@pytest.fixture(scope="module")
def adversary():
    """(uid, gid) of an unprivileged local user made for these tests."""
    if subprocess.run(["id", "-u", ADVERSARY], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", ADVERSARY], check=True)
    uid = int(subprocess.check_output(["id", "-u", ADVERSARY]))
    gid = int(subprocess.check_output(["id", "-g", ADVERSARY]))
    return uid, gid


def as_adversary(user, *command):
    uid, gid = user
    subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *command], check=True)


def refused(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("os2g: "), r.stderr
    assert "Exception" not in lines[0], r.stderr
    for w in words:
        assert w in lines[0], r.stderr


def remove(path):
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


@pytest.fixture
def shm_parents():
    """The default staging parents (this user's, and /dev/shm/os2g of releases before it), set aside and put back."""
    paths = [Path(f"/dev/shm/os2g-{os.geteuid()}"), Path("/dev/shm/os2g")]
    kept = {}
    for p in paths:
        if p.exists() or p.is_symlink():
            kept[p] = p.with_name(p.name + f".kept-{os.getpid()}")
            p.rename(kept[p])
    yield paths
    for p in paths:
        remove(p)
    for p, aside in kept.items():
        aside.rename(p)


@pytest.mark.parametrize("plant", ["link", "directory"])
def test_root_refuses_a_staging_parent_another_user_planted(s3, adversary, shm_parents, tmp_path, plant):
    s3.bucket(f"it-adv-staging-{plant}", {"a": b"1"})
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    os.chmod(victim, 0o755)
    for p in shm_parents:
        if plant == "link":
            as_adversary(adversary, "ln", "-s", str(victim), str(p))
        else:
            as_adversary(adversary, "mkdir", "-m", "0777", str(p))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_os2g("mount", f"it-adv-staging-{plant}", str(mnt), "--endpoint", s3.endpoint, env=CREDENTIALS_ENV, timeout=60)
    refused(r, "refusing")
    assert not mounted(mnt)
    assert sorted(os.listdir(victim)) == ["keep"] and stat.S_IMODE(victim.stat().st_mode) == 0o755
    if plant == "directory":
        assert all(os.listdir(p) == [] for p in shm_parents), "nothing of root's in the user's directories"
    Tally.add("planted staging parents refused")


def test_the_daemon_log_follows_no_link_another_user_planted(s3, adversary, tmp_path):
    s3.bucket("it-adv-daemon", {"a": b"1"})
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mount_id = hashlib.sha256(str(mnt).encode()).hexdigest()[:12]
    victim = tmp_path / "precious"
    victim.write_text("precious")
    planted = Path(f"/tmp/os2g-{mount_id}.log")  # where releases before this one wrote it
    remove(planted)
    as_adversary(adversary, "ln", "-s", str(victim), str(planted))
    try:
        r = run_os2g("mount", "it-adv-daemon", str(mnt), "--endpoint", s3.endpoint, "--staging-dir", str(tmp_path / "staging"),
                     "--daemon", env=CREDENTIALS_ENV, timeout=90)
        assert r.returncode == 0, r.stderr
        try:
            log = Path(re.search(r"log (\S+)\)", r.stderr).group(1))
            assert log.parent == Path("/run/os2g") and stat.S_IMODE(log.parent.stat().st_mode) == 0o700
            assert stat.S_IMODE(log.lstat().st_mode) == 0o600 and not log.is_symlink()
            assert victim.read_text() == "precious"
        finally:
            subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
    finally:
        remove(planted)


def test_a_cache_directory_another_user_made_is_refused(s3, adversary, tmp_path):
    s3.bucket("it-adv-cache", {"a": b"1"})
    shared = Path(tempfile.mkdtemp(prefix="os2g-it-shared-"))  # a directory the other user can reach
    os.chmod(shared, 0o755)
    cache = shared / "cache"
    cache.mkdir()
    os.chown(cache, *adversary)
    as_adversary(adversary, "mkdir", "-p", str(cache / "os2g-cache-v3" / "blocks"), str(cache / "os2g-cache-v3" / "tmp"))
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_os2g("mount", "it-adv-cache", str(mnt), "--endpoint", s3.endpoint, "--staging-dir", str(tmp_path / "staging"),
                 "--cache-dir", str(cache), env=CREDENTIALS_ENV, timeout=60)
    refused(r, "cache directory", "refusing")
    assert not mounted(mnt)
    shutil.rmtree(shared)


@pytest.fixture
def hostile():
    servers = []

    def start(mode, **kw):
        servers.append(HostileS3(mode, **kw))
        return servers[-1]
    yield start
    for s in servers:
        s.stop()


def hostile_mount(server, tmp_path, extra=(), env=None):
    return Mount(server, BUCKET, ["--no-sign-request", "--request-timeout", "5", "--retries", "1", *extra], env=env,
                 credentials=False)


def test_a_listing_that_never_ends_is_eio_and_every_reader_gets_an_answer(hostile, tmp_path):
    server = hostile("endless")
    # a small heap: the listing's bound follows it, and the old unbounded listing ran out of memory
    m = hostile_mount(server, tmp_path, env={"OS2G_JAVA_OPTS": "-Xmx128m"})
    try:
        for _ in range(2):
            started = time.time()
            r = subprocess.run(["ls", str(m.path)], capture_output=True, text=True, timeout=120)
            assert r.returncode != 0 and "Input/output error" in r.stderr, r
            assert time.time() - started < 100
        assert (m.path / ".os2g" / "stats").read_text(), "the mount still answers"
        assert "more than" in m.output() and "OS2G_JAVA_OPTS" in m.output()
        assert "OutOfMemoryError" not in m.output()
        Tally.add("endless listings answered EIO", 2)
    finally:
        assert m.stop() == 0


def test_keys_outside_the_prefix_or_not_utf8_are_skipped_and_logged(hostile, tmp_path):
    server = hostile("foreign", objects={"data/ok": b"fine"})
    m = Mount(server, f"{BUCKET}/data", ["--no-sign-request"], credentials=False)
    try:
        assert sorted(os.listdir(m.path)) == ["ok"]
        assert (m.path / "ok").read_bytes() == b"fine"
        assert "outside the listed prefix" in m.output() and "Exception" not in m.output()
    finally:
        assert m.stop() == 0
    server = hostile("utf8", objects={"good": b"g"})
    m = hostile_mount(server, tmp_path)
    try:
        assert sorted(os.listdir(m.path)) == ["good"]
        assert "not URL-encoded UTF-8" in m.output()
    finally:
        assert m.stop() == 0
    Tally.add("hostile listings filtered", 2)


def test_a_server_ignoring_if_match_gives_eio_never_mixed_bytes(hostile, tmp_path):
    body = payload(200_000, 7)
    server = hostile("ignore-if-match", objects={"big": body})
    m = hostile_mount(server, tmp_path, ["--chunk-size", "64K", "--max-readahead", "64K", "--dir-prefetch", "0"])
    try:
        with pytest.raises(OSError) as e:
            (m.path / "big").read_bytes()
        assert e.value.errno == errno.EIO
        Tally.add("answers of another version refused", 1)
    finally:
        assert m.stop() == 0


def test_a_killed_writer_in_a_pid_namespace_the_mount_cannot_see_publishes_nothing(s3, tmp_path):
    """The CSI mounter's layout without hostPID: the mount in a pid namespace of its own, the writers
    outside it (FUSE numbers them 0). Only an fsync'd file is published; a killed writer's is not."""
    bucket = s3.bucket("it-adv-pidns")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    log = open(tmp_path / "mount.log", "w+")
    proc = subprocess.Popen(["unshare", "--pid", "--fork", str(Path(__file__).resolve().parent.parent / "os2g"),
                             "mount", bucket, str(mnt), "--endpoint", s3.endpoint, "--allow-writes",
                             "--staging-dir", str(tmp_path / "staging")],
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **CREDENTIALS_ENV})
    try:
        deadline = time.time() + 90
        while not mounted(mnt):
            assert proc.poll() is None and time.time() < deadline, open(tmp_path / "mount.log").read()
            time.sleep(0.1)
        writer = subprocess.Popen(["/usr/bin/python3", "-c", f"""
import os, sys, time
f = open({str(mnt / 'cut.bin')!r}, 'wb')
f.write(os.urandom(12 << 20)); f.flush()
print('written', flush=True)
time.sleep(60)
"""], stdout=subprocess.PIPE, text=True)
        assert writer.stdout.readline().strip() == "written"
        writer.kill()
        writer.wait()
        with pytest.raises(OSError) as e:  # closed without fsync: not published, and the close says so
            with open(mnt / "plain.bin", "wb") as f:
                f.write(b"x" * 100_000)
        assert e.value.errno == errno.EIO
        with open(mnt / "committed.bin", "wb") as f:
            f.write(b"y" * 100_000)
            f.flush()
            os.fsync(f.fileno())
        deadline = time.time() + 30  # the aborts of the two uploads settle in the background
        while True:
            keys = [o["Key"] for o in s3.client.list_objects_v2(Bucket=bucket).get("Contents", [])]
            uploads = s3.client.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
            if keys == ["committed.bin"] and not uploads or time.time() > deadline:
                break
            time.sleep(0.2)
        assert keys == ["committed.bin"] and uploads == [], (keys, uploads)
        Tally.add("killed writers in another pid namespace: nothing published", 1)
    finally:
        subprocess.run(["fusermount3", "-u", str(mnt)], check=False)
        proc.wait(60)


@pytest.fixture(scope="module")
def options_bucket(s3):
    return s3.bucket("it-adv-options")


@pytest.mark.parametrize("args,message", [
    (["-o", "ro", "--allow-writes"], "-o ro and --allow-writes contradict"),
    (["-o", "ro,allow_writes"], "-o ro and --allow-writes contradict"),
    (["--uid", "-5"], "--uid must be"),
    (["--file-mode", "4777"], "--file-mode must be an octal mode from 0000 to 0777"),
    (["-o", "attr_timeout=-5"], "attr_timeout=-5: not a number of seconds"),
    (["--retries", "100000000"], "--retries must be from 0 to 30"),
    (["-o", "nonsense"], "mount option nonsense is not one os2g knows"),
])
def test_bad_options_are_refused_before_mounting_with_one_line(s3, options_bucket, tmp_path, args, message):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = run_os2g("mount", "it-adv-options", str(mnt), "--endpoint", s3.endpoint, *args, env=CREDENTIALS_ENV, timeout=60)
    refused(r, message)
    assert not mounted(mnt)


def test_prefetch_lines_cannot_forge_log_lines(s3, tmp_path):
    s3.bucket("it-adv-hints", {"a": b"1"})
    m = Mount(s3, "it-adv-hints", ["--debug"])
    try:
        (m.path / ".os2g" / "prefetch").write_text("nothing\r\x1b[31mFORGED 12:00 ERROR fake\nalso-nothing\n")
        time.sleep(0.5)
    finally:
        assert m.stop() == 0
    out = m.output()
    assert "\x1b" not in out and "\r" not in out
    assert "\\x1b[31mFORGED" in out


def test_a_split_mode_agent_holds_its_own_policy_whatever_a_shim_asks(s3, tmp_path):
    from conftest import Agent
    s3.bucket("it-adv-served", {"a": b"1"})
    s3.bucket("it-adv-other", {"b": b"2"})
    agent = Agent(s3, tmp_path, ["--serve", "it-adv-served"])
    try:
        m = Mount(s3, "it-adv-served", ["--agent", f"unix:{agent.socket}"], credentials=False)
        try:
            assert (m.path / "a").read_bytes() == b"1"
        finally:
            assert m.stop() == 0
        for bucket, extra, why in [("it-adv-other", [], "does not serve"),
                                   ("it-adv-served", ["--allow-writes"], "takes no writes")]:
            mnt = tmp_path / f"mnt-{bucket}-{len(extra)}"
            mnt.mkdir()
            r = run_os2g("mount", bucket, str(mnt), "--agent", f"unix:{agent.socket}", "--staging-dir", str(tmp_path / "s"),
                         *extra, timeout=60)
            assert r.returncode == 2 and why in r.stderr, r.stderr
            assert not mounted(mnt)
    finally:
        agent.stop()
