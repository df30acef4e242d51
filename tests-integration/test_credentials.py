"""Temporary credentials that expire under a running mount: the instance metadata service (IMDSv2), a
container credentials endpoint and web identity through STS hand out credentials valid for a few
seconds, and the mount must read on across many expiries with no failed read, renewing ahead of each.
The S3 server behind the fault proxy takes no session tokens, so the proxy's token gate stands for a
store that does: an expired or unknown token is answered ExpiredToken, a valid one is signed again with
the server's key."""

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, OS2G, SECRET_KEY, Mount, Tally, payload, read_verified, run_os2g, sha256
from credserver import CONTAINER_AUTH, CredentialServer
from faultproxy import Fault, FaultProxy

LIFETIME = 5.0
EXPIRIES = 3
BIG = payload(4 << 20, 31)
FILES = {"data/big.bin": BIG, "data/small.bin": payload(70_000, 32)}


@pytest.fixture(scope="module")
def bucket(s3):
    return s3.bucket("it-credentials", FILES)


@pytest.fixture()
def issuer():
    server = CredentialServer(ACCESS_KEY, SECRET_KEY, lifetime=LIFETIME)
    yield server
    server.close()


@pytest.fixture()
def gated(s3, issuer):
    proxy = FaultProxy(s3.endpoint)
    proxy.gate_tokens(issuer.valid, ACCESS_KEY, SECRET_KEY)
    yield proxy
    proxy.close()


def isolated(tmp_path, **env):
    """An environment with no credentials of its own: no keys, no profiles, no metadata service."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return {**base, "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none"),
            "AWS_EC2_METADATA_DISABLED": "true", **env}


class Mount2(Mount):
    """A mount through the gated proxy with the environment given (no credentials added)."""

    def __init__(self, proxy, bucket, env, extra=()):
        endpoint_server = type("Endpoint", (), {"endpoint": proxy.endpoint})()
        super().__init__(endpoint_server, bucket, ["--chunk-size", "256K", "--staging-size", "1M",
                                                   "--metadata-ttl", "1", *extra], env=env, credentials=False)


def read_continuously(m, seconds):
    """Reads the big file whole, again and again, its page cache dropped each time, so every pass
    fetches through the store (a 1 MiB staging region holds a quarter of it); returns the passes made."""
    deadline, passes = time.time() + seconds, 0
    while time.time() < deadline:
        path = m.path / "data/big.bin"
        read_verified(path, sha256(BIG))
        with open(path, "rb") as f:
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        passes += 1
    return passes


def assert_renewed_ahead(issues, n):
    assert len(issues) >= n + 1, f"{len(issues)} credentials issued over {n} lifetimes"
    for (_, _, _, expiry, _), (issued, _, _, _, _) in zip(issues, issues[1:]):
        assert issued < expiry, "a renewal came after the credentials it replaced had expired"


def assert_no_secret(text, issuer):
    for secret in issuer.secrets():
        assert secret not in text


@pytest.mark.parametrize("source", ["imds", "ecs"])
def test_a_mount_reads_across_expiries_of_instance_and_container_credentials(bucket, issuer, gated, tmp_path, source):
    env = isolated(tmp_path, AWS_EC2_METADATA_DISABLED="false", AWS_EC2_METADATA_SERVICE_ENDPOINT=issuer.endpoint) \
        if source == "imds" else \
        isolated(tmp_path, AWS_CONTAINER_CREDENTIALS_FULL_URI=f"{issuer.endpoint}/ecs/creds",
                 AWS_CONTAINER_AUTHORIZATION_TOKEN=CONTAINER_AUTH)
    m = Mount2(gated, bucket, env, ["--debug"])
    try:
        passes = read_continuously(m, LIFETIME * EXPIRIES + 2)
        assert passes > 2 * EXPIRIES
        assert gated.gated == 0, "no request was refused for an expired token: every renewal came ahead"
        assert_renewed_ahead(issuer.issues(source), EXPIRIES)
        if source == "imds":
            assert issuer.imds_tokens, "IMDSv2: a session token was asked for first"
        assert_no_secret(m.output() + (m.path / ".os2g/stats").read_text(), issuer)
        Tally.add("credential expiries survived", len(issuer.issues(source)) - 1)
        Tally.add("secret leak checks")
    finally:
        assert m.stop() == 0


def test_web_identity_is_exchanged_with_sts_and_a_rotated_token_file_is_read_again(bucket, issuer, gated, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("jwt-1")
    env = isolated(tmp_path, AWS_WEB_IDENTITY_TOKEN_FILE=str(token_file), AWS_ROLE_ARN="arn:aws:iam::123456789012:role/trainer",
                   AWS_ROLE_SESSION_NAME="os2g", AWS_REGION="us-east-1", AWS_ENDPOINT_URL_STS=issuer.endpoint)
    m = Mount2(gated, bucket, env)
    try:
        read_continuously(m, LIFETIME * 2)
        token_file.write_text("jwt-2")  # the kubelet rotates the projected token
        read_continuously(m, LIFETIME * 2)
        assert gated.gated == 0
        assert issuer.web_identities[0] == "jwt-1" and issuer.web_identities[-1] == "jwt-2", issuer.web_identities
        assert_renewed_ahead(issuer.issues("sts"), 3)
        assert "jwt-1" not in m.output() and "jwt-2" not in m.output()
        assert_no_secret(m.output(), issuer)
    finally:
        assert m.stop() == 0


def test_an_expired_token_the_store_refuses_is_renewed_once_and_the_read_succeeds(bucket, issuer, gated, tmp_path):
    env = isolated(tmp_path, AWS_EC2_METADATA_DISABLED="false", AWS_EC2_METADATA_SERVICE_ENDPOINT=issuer.endpoint)
    issuer.lifetime = 3600  # no renewal on schedule during the test
    m = Mount2(gated, bucket, env)
    try:
        (m.path / "data/small.bin").read_bytes()
        before = len(issuer.issues("imds"))
        issuer.expire()  # the store now refuses the mount's token
        assert (m.path / "data/big.bin").read_bytes() == BIG
        assert gated.gated >= 1, "the store refused the old token"
        assert len(issuer.issues("imds")) == before + 1, "one renewal"
    finally:
        assert m.stop() == 0


def test_an_endpoint_that_goes_away_keeps_the_credentials_until_they_expire_then_eacces_then_recovery(
        bucket, issuer, gated, tmp_path):
    env = isolated(tmp_path, AWS_EC2_METADATA_DISABLED="false", AWS_EC2_METADATA_SERVICE_ENDPOINT=issuer.endpoint)
    m = Mount2(gated, bucket, env)
    try:
        read_continuously(m, 1)
        issuer.down = True
        went = time.time()
        last_expiry = issuer.issues("imds")[-1][3]
        # until the last credentials expire, reads go on
        read_continuously(m, max(0.0, last_expiry - time.time() - 0.5))
        time.sleep(max(0.0, last_expiry - time.time() + 0.5))
        with pytest.raises(OSError) as e:
            read_continuously(m, 1)
        assert e.value.errno == errno.EACCES, e.value
        assert "cannot renew credentials from instance metadata" in m.output()
        issuer.down = False
        deadline = time.time() + 10
        while True:
            try:
                read_continuously(m, 0.1)
                break
            except OSError:
                assert time.time() < deadline, "reads did not recover once the endpoint was back"
                time.sleep(0.2)
        assert time.time() - went < 60
        Tally.add("lifecycle cases")
    finally:
        assert m.stop() == 0


def test_a_profile_with_credential_process_gets_its_credentials_from_the_command(bucket, s3, tmp_path):
    # the shape `aws configure export-credentials --format process` prints, which is also how SSO
    # sessions of the AWS CLI can be handed to any tool
    command = tmp_path / "creds.sh"
    command.write_text("#!/bin/sh\necho run >> " + str(tmp_path / "runs") + "\n"
                       f"printf '{{\"Version\": 1, \"AccessKeyId\": \"{ACCESS_KEY}\", \"SecretAccessKey\": \"{SECRET_KEY}\"}}'\n")
    command.chmod(0o700)
    config = tmp_path / "config"
    config.write_text(f"[profile trainer]\ncredential_process = {command}\n")
    env = isolated(tmp_path, AWS_CONFIG_FILE=str(config), AWS_PROFILE="trainer")
    m = Mount(type("Endpoint", (), {"endpoint": s3.endpoint})(), bucket, [], env=env, credentials=False)
    try:
        assert (m.path / "data/small.bin").read_bytes() == FILES["data/small.bin"]
        assert (tmp_path / "runs").read_text().count("run") >= 1
        assert SECRET_KEY not in m.output()
    finally:
        assert m.stop() == 0


def test_no_credentials_anywhere_is_one_line_naming_the_sources(bucket, s3, tmp_path):
    (tmp_path / "mnt").mkdir()
    r = run_os2g("mount", bucket, str(tmp_path / "mnt"), "--endpoint", s3.endpoint, env=isolated(tmp_path))
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert len(line.splitlines()) == 1, line
    for source in ("environment", "web identity", "profile default", "container credentials", "--no-sign-request"):
        assert source in line, line
    Tally.add("bad inputs refused")


def test_the_agent_holds_and_renews_the_credentials_and_the_shim_sees_none(bucket, issuer, gated, tmp_path):
    import subprocess
    sock = tmp_path / "agent.sock"
    env = isolated(tmp_path, AWS_EC2_METADATA_DISABLED="false", AWS_EC2_METADATA_SERVICE_ENDPOINT=issuer.endpoint)
    log = open(tmp_path / "agent.log", "w+")
    agent = subprocess.Popen([OS2G, "agent", "--listen", f"unix:{sock}", "--endpoint", gated.endpoint,
                              "--staging-dir", str(tmp_path / "staging")], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.time() + 60
        while "agent listening" not in Path(log.name).read_text():
            assert agent.poll() is None and time.time() < deadline, Path(log.name).read_text()
            time.sleep(0.05)
        m = Mount2(gated, bucket, isolated(tmp_path), ["--agent", f"unix:{sock}"])
        try:
            read_continuously(m, LIFETIME * 3)
            assert gated.gated == 0
            assert_renewed_ahead(issuer.issues("imds"), 3)
            environ = Path(f"/proc/{m.proc.pid}/environ").read_bytes().decode(errors="replace")
            assert "AWS_EC2_METADATA_SERVICE_ENDPOINT" not in environ
            assert_no_secret(m.output() + Path(log.name).read_text(), issuer)
        finally:
            assert m.stop() == 0
    finally:
        agent.terminate()
        agent.wait(30)
