"""Security: secrets stay out of logs, ps and crash output; the mount is private by default; staging
files are private; odd keys address nothing outside the mount; https certificates are checked."""

import glob
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import CREDENTIALS_ENV, SECRET_KEY, Mount, S3Server, Tally, mounted, payload, run_os2g


def test_secret_in_no_log_line_at_debug_level_in_ps_or_in_a_thread_dump(s3):
    s3.bucket("it-secret-debug", {"a": b"1", "dir/b": payload(300_000, 1)})
    m = Mount(s3, "it-secret-debug", ["--debug"])
    try:
        with open(f"/proc/{m.proc.pid}/cmdline", "rb") as f:
            assert SECRET_KEY.encode() not in f.read()
        ps = subprocess.run(["ps", "auxww"], capture_output=True, text=True).stdout
        assert SECRET_KEY not in ps
        (m.path / "a").read_bytes()
        (m.path / "dir/b").read_bytes()
        # what a crashing or hung JVM prints: a thread dump of every thread, on stdout
        java = [p for p in os.listdir("/proc") if p.isdigit() and _is_mount_jvm(p, m)]
        assert java, "the mount's JVM"
        for pid in java:
            os.kill(int(pid), signal.SIGQUIT)
        time.sleep(1)
    finally:
        assert m.stop() == 0
    out = m.output()
    assert "DEBUG" in out, "the debug log is on"
    assert "Full thread dump" in out
    assert SECRET_KEY not in out
    Tally.add("secret leak checks")


def _is_mount_jvm(pid, m):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
        return b"java" in cmd and str(m.path).encode() in cmd
    except OSError:
        return False


def test_secret_not_in_a_failed_mount_with_debug_stack_traces(s3, tmp_path):
    s3.bucket("it-secret-fail")
    env = {"AWS_ACCESS_KEY_ID": "os2g-demo", "AWS_SECRET_ACCESS_KEY": "a-wrong-secret-1234"}
    (tmp_path / "mnt").mkdir()
    r = run_os2g("mount", "it-secret-fail", str(tmp_path / "mnt"), "--endpoint", s3.endpoint, "--debug", env=env)
    assert r.returncode == 2
    assert "a-wrong-secret-1234" not in r.stdout + r.stderr
    Tally.add("secret leak checks")


def test_mount_is_private_and_staging_files_are_owner_only(s3):
    s3.bucket("it-private", {"a": payload(100_000, 3)})
    m = Mount(s3, "it-private")
    try:
        with open("/proc/self/mountinfo") as f:
            line = next(l for l in f if f" {m.path} " in l)
        assert "allow_other" not in line, "allow_other is off unless asked for"
        (m.path / "a").read_bytes()
        assert stat.S_IMODE(os.stat(m.staging).st_mode) == 0o700
        segments = glob.glob(str(m.staging / "segment-*"))
        assert segments
        for s in segments:
            assert stat.S_IMODE(os.stat(s).st_mode) == 0o600, s
    finally:
        assert m.stop() == 0


def test_odd_keys_never_address_anything_outside_the_mounted_prefix(s3):
    # (a NUL in a key cannot travel through S3Proxy's HTTP server; NamespaceModelTest covers it)
    objects = {
        "inner/ok.txt": b"ok",
        "inner/../outside.txt": b"escape via ..",
        "inner/./dot.txt": b"dot",
        "inner//double.txt": b"double",
        "/leading.txt": b"leading slash",
        "outside.txt": b"not under the prefix",
        "inner/sub/../../outside.txt": b"deeper escape",
    }
    s3.bucket("it-escape", objects)
    m = Mount(s3, "it-escape/inner")
    try:
        seen = []
        for root, dirs, files in os.walk(m.path):
            for name in dirs + files:
                assert name not in (".", "..") and "\x00" not in name and "/" not in name
                seen.append(os.path.relpath(os.path.join(root, name), m.path))
        assert sorted(seen) == ["ok.txt", "sub"], seen
        assert (m.path / "ok.txt").read_bytes() == b"ok"
        assert os.listdir(m.path / "sub") == []
        for path in ("../outside.txt", "sub/../../outside.txt", "outside.txt", "leading.txt"):
            resolved = os.path.realpath(m.path / path)
            if resolved.startswith(str(m.path)):
                assert not os.path.exists(resolved), path
        Tally.add("odd keys tried", len(objects))
    finally:
        assert m.stop() == 0


def keytool():
    for candidate in [os.environ.get("JAVA_HOME", "") + "/bin/keytool", *sorted(glob.glob("/usr/lib/jvm/*/bin/keytool"))]:
        if os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no keytool in JAVA_HOME or /usr/lib/jvm")


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls")
    store, cert = d / "server.p12", d / "ca.pem"
    subprocess.run([keytool(), "-genkeypair", "-keystore", str(store), "-storetype", "PKCS12",
                    "-storepass", "os2g-demo", "-keypass", "os2g-demo", "-alias", "s3", "-keyalg", "RSA",
                    "-keysize", "2048", "-validity", "2", "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1"],
                   check=True, capture_output=True)
    subprocess.run([keytool(), "-exportcert", "-rfc", "-keystore", str(store), "-storepass", "os2g-demo",
                    "-alias", "s3", "-file", str(cert)], check=True, capture_output=True)
    server = S3Server(tls_keystore=store)
    server.bucket("it-tls", {"x.bin": payload(200_000, 9)})
    yield server, cert
    server.stop()


def env_without_ca_bundle():
    env = {k: v for k, v in os.environ.items() if k != "AWS_CA_BUNDLE"}
    return {**env, **CREDENTIALS_ENV}


def test_https_certificate_not_trusted_is_refused(tls_server, tmp_path):
    server, _ = tls_server
    assert server.endpoint.startswith("https://")
    (tmp_path / "mnt").mkdir()
    r = subprocess.run(["./os2g", "mount", "it-tls", str(tmp_path / "mnt"), "--endpoint", server.endpoint],
                       capture_output=True, text=True, timeout=120, env=env_without_ca_bundle(),
                       cwd=Path(__file__).resolve().parent.parent)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]
    assert "not trusted" in line and "--ca-bundle" in line, line
    assert not mounted(tmp_path / "mnt")
    Tally.add("bad inputs refused")


def test_a_ca_bundle_without_certificates_is_refused_by_the_mount_and_by_the_agent_at_start(tls_server, tmp_path):
    server, _ = tls_server
    garbage = tmp_path / "ca.pem"
    garbage.write_text("not a certificate\n")
    (tmp_path / "mnt").mkdir()
    mount = run_os2g("mount", "it-tls", str(tmp_path / "mnt"), "--endpoint", server.endpoint, "--ca-bundle", str(garbage),
                     env=env_without_ca_bundle())
    # the agent checks it before it listens: not at the first mount, where every mount would fail
    agent = run_os2g("agent", "--listen", f"unix:{tmp_path}/agent.sock", "--endpoint", server.endpoint,
                     "--ca-bundle", str(garbage), "--staging-dir", f"/dev/shm/os2g-it-ca-{os.getpid()}",
                     env=env_without_ca_bundle(), timeout=60)
    for r in (mount, agent):
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot use CA bundle" in lines[0] and str(garbage) in lines[0], r.stderr
    assert not mounted(tmp_path / "mnt")
    assert not (tmp_path / "agent.sock").exists()
    Tally.add("bad inputs refused", 2)


def test_https_with_the_ca_bundle_reads_and_skip_verify_warns(tls_server):
    server, cert = tls_server
    m = Mount(server, "it-tls", ["--ca-bundle", str(cert)], env={"AWS_CA_BUNDLE": ""})
    try:
        assert (m.path / "x.bin").read_bytes() == payload(200_000, 9)
    finally:
        assert m.stop() == 0
    m = Mount(server, "it-tls", ["--insecure-skip-verify"], env={"AWS_CA_BUNDLE": ""})
    try:
        assert (m.path / "x.bin").read_bytes() == payload(200_000, 9)
    finally:
        assert m.stop() == 0
    warning = [l for l in m.output().splitlines() if "--insecure-skip-verify" in l]
    assert warning and "WARN" in warning[0] and "NOT checked" in warning[0], m.output()
