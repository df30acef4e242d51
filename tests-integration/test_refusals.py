"""Mistakes a user can make are refused before mounting: one clear line, exit code 2, no stack trace."""

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, CREDENTIALS_ENV, OS2G, Mount, Tally, free_port, mounted, run_os2g


@pytest.fixture
def mnt():
    return Path(tempfile.mkdtemp(prefix="os2g-refuse-"))


def refused(result, *words):
    assert result.returncode == 2, result.stderr
    lines = [l for l in result.stderr.strip().splitlines() if "building" not in l]
    assert len(lines) == 1, result.stderr
    assert "Exception" not in result.stderr and "\tat " not in result.stderr
    for w in words:
        assert w in lines[0], lines[0]
    Tally.add("bad inputs refused")
    return lines[0]


def test_unreachable_endpoint(mnt):
    r = run_os2g("mount", "data", str(mnt), "--endpoint", f"http://127.0.0.1:{free_port()}", env=CREDENTIALS_ENV)
    refused(r, "cannot reach")
    assert not mounted(mnt)


def test_bad_credentials(s3, mnt):
    s3.bucket("it-creds")
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": "wrong-secret"}
    r = run_os2g("mount", "it-creds", str(mnt), "--endpoint", s3.endpoint, env=env)
    line = refused(r, "credentials rejected")
    assert "wrong-secret" not in line


def test_invalid_bucket_name(s3, mnt):
    refused(run_os2g("mount", "b", str(mnt), "--endpoint", s3.endpoint, env=CREDENTIALS_ENV), "bucket name")


def test_missing_bucket(s3, mnt):
    r = run_os2g("mount", "no-such-bucket", str(mnt), "--endpoint", s3.endpoint, env=CREDENTIALS_ENV)
    refused(r, "does not exist")


def test_malformed_endpoint(mnt):
    refused(run_os2g("mount", "data", str(mnt), "--endpoint", "not a url"), "--endpoint")
    refused(run_os2g("mount", "data", str(mnt), "--endpoint", "ftp://host"), "--endpoint")


def test_mountpoint_missing_or_not_a_directory(s3, mnt):
    refused(run_os2g("mount", "data", str(mnt / "missing"), "--endpoint", s3.endpoint), "does not exist")
    f = mnt / "file"
    f.write_text("x")
    refused(run_os2g("mount", "data", str(f), "--endpoint", s3.endpoint), "not a directory")


def test_mountpoint_a_descriptor_that_is_not_a_fuse_mount(s3):
    # run_os2g's stdin is the test's: an open descriptor, but not /dev/fuse
    refused(run_os2g("mount", "data", "/dev/fd/0", "--endpoint", s3.endpoint), "/dev/fd/0", "not a /dev/fuse descriptor")
    refused(run_os2g("mount", "data", "/dev/fd/987", "--endpoint", s3.endpoint), "not an open descriptor")


def test_mountpoint_already_a_mount(s3):
    s3.bucket("it-busy", {"a": b"1"})
    m = Mount(s3, "it-busy")
    try:
        r = run_os2g("mount", "it-busy", str(m.path), "--endpoint", s3.endpoint, env=CREDENTIALS_ENV)
        refused(r, "already a mount")
    finally:
        assert m.stop() == 0


def test_staging_size_below_one_chunk(s3, mnt):
    r = run_os2g("mount", "data", str(mnt), "--endpoint", s3.endpoint, "--staging-size", "1M", "--chunk-size", "8M")
    refused(r, "--staging-size")


def test_write_options_that_cannot_work(s3, mnt):
    refused(run_os2g("mount", "data", str(mnt), "--endpoint", s3.endpoint, "--allow-delete"), "--allow-delete needs --allow-writes")
    refused(run_os2g("mount", "data", str(mnt), "--endpoint", s3.endpoint, "--allow-overwrite"), "--allow-overwrite needs")
    refused(run_os2g("mount", "data", str(mnt), "--endpoint", s3.endpoint, "--allow-writes", "--staging-size", "16M",
                     "--chunk-size", "1M"), "--allow-writes needs --staging-size of at least 32M")


def test_unknown_option(mnt):
    refused(run_os2g("mount", "data", str(mnt), "--no-such-option"), "no-such-option", "--help")


def test_unknown_command_is_refused_and_help_lists_every_command():
    refused(run_os2g("mont", "data", "/mnt"), "mont", "--help")
    r = run_os2g("--help")
    assert r.returncode == 0, r.stderr
    commands = re.findall(r"^  ([a-z0-9-]+) ", r.stdout, re.MULTILINE)
    assert commands == ["mount", "agent", "csi", "csi-mounter", "stats", "warm", "index", "cache", "demo"], r.stdout  # s3-server is hidden


def fake_jdk(tmp_path, release):
    """A JDK directory with `release` whose java, if ever run, leaves a mark (the returned path)."""
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "release").write_text(release)
    ran = tmp_path / "ran"
    (jdk / "bin" / "java").write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    (jdk / "bin" / "java").chmod(0o755)
    return jdk, ran


def test_the_launcher_passes_over_an_older_jdk_without_starting_it(tmp_path):
    # JAVA_HOME at a JDK 17: the launcher reads its release file, never runs its java, and goes on to a
    # JDK >= 25 under /usr/lib/jvm
    old, ran = fake_jdk(tmp_path, 'JAVA_VERSION="17.0.15"\n')
    r = run_os2g("--version", env={"JAVA_HOME": str(old)})
    assert r.returncode == 0, r.stderr
    assert re.match(r"os2g \S+ \(Java 2[5-9]", r.stdout), r.stdout
    assert not ran.exists()


def test_the_launcher_passes_over_a_jdk_for_another_architecture(tmp_path):
    # a JDK 25 built for the other of x86-64 and arm64 (a multi-arch image, a copied JAVA_HOME): skipped
    # by its release file's OS_ARCH, not run
    other = "aarch64" if os.uname().machine in ("x86_64", "amd64") else "x86_64"
    foreign, ran = fake_jdk(tmp_path, f'JAVA_VERSION="25.0.1"\nOS_ARCH="{other}"\n')
    r = run_os2g("--version", env={"JAVA_HOME": str(foreign)})
    assert r.returncode == 0, r.stderr
    assert re.match(r"os2g \S+ \(Java 2[5-9]", r.stdout), r.stdout
    assert not ran.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="drops root's capabilities to be refused by permission bits")
def test_mountpoint_not_permitted(s3, mnt):
    target = mnt / "private"
    target.mkdir()
    os.chown(target, 65534, 65534)
    os.chmod(target, 0o700)
    # root without CAP_DAC_OVERRIDE is held to the permission bits, as any other user is
    r = subprocess.run(["setpriv", "--bounding-set=-dac_override,-dac_read_search", OS2G, "mount", "data",
                        str(target), "--endpoint", s3.endpoint],
                       capture_output=True, text=True, timeout=120, env={**os.environ, **CREDENTIALS_ENV})
    refused(r, "not accessible")


def test_secret_never_on_the_command_line_or_in_logs(s3):
    s3.bucket("it-secret", {"a": b"1"})
    m = Mount(s3, "it-secret", ["--debug"])
    try:
        with open(f"/proc/{m.proc.pid}/cmdline", "rb") as f:
            assert b"os2g-demo-secret" not in f.read()
        (m.path / "a").read_bytes()
    finally:
        assert m.stop() == 0
    assert "os2g-demo-secret" not in m.output()
