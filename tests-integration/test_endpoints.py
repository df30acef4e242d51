"""Reaching the store as real deployments do: a bucket in another region than the one requests are
signed for (found and signed for, or one clear line when --region says otherwise), HTTP_PROXY and
NO_PROXY, and an IPv6 loopback endpoint. The fault proxy stands in front of S3Proxy as the store."""

import pytest

from conftest import CREDENTIALS_ENV, Mount, Tally, payload, read_verified, run_os2g, sha256
from faultproxy import FaultProxy

FILES = {"dir/a.bin": payload(3 << 20, 41), "dir/b.bin": payload(90_000, 42)}


@pytest.fixture(scope="module")
def bucket(s3):
    return s3.bucket("it-endpoints", FILES)


@pytest.fixture()
def proxy(s3):
    p = FaultProxy(s3.endpoint)
    yield p
    p.close()


class Through:
    """An endpoint for Mount: any URL."""

    def __init__(self, endpoint):
        self.endpoint = endpoint


def no_region():
    """No region given: os2g must find the bucket's (an empty AWS_REGION counts as none)."""
    return {"AWS_REGION": ""}


def read_all(m):
    for key, data in FILES.items():
        read_verified(m.path / key, sha256(data))


def test_a_bucket_in_another_region_is_found_and_signed_for(bucket, proxy):
    proxy.bucket_region = "eu-west-3"
    m = Mount(Through(proxy.endpoint), bucket, ["--chunk-size", "1M"], env=no_region())
    try:
        read_all(m)
        assert proxy.misdirected >= 1, "the first request was signed for us-east-1"
        assert "bucket it-endpoints is in region eu-west-3" in m.output()
        misdirected = proxy.misdirected
        (m.path / "dir/a.bin").read_bytes()
        assert proxy.misdirected == misdirected, "every later request is signed for eu-west-3"
        Tally.add("regions discovered")
    finally:
        assert m.stop() == 0


def test_a_region_given_that_is_not_the_buckets_is_one_line_naming_it(bucket, proxy, tmp_path):
    proxy.bucket_region = "eu-west-3"
    (tmp_path / "mnt").mkdir()
    r = run_os2g("mount", bucket, str(tmp_path / "mnt"), "--endpoint", proxy.endpoint, "--region", "us-west-2",
                 env={**CREDENTIALS_ENV})
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "is in region eu-west-3" in r.stderr and "--region eu-west-3" in r.stderr, r.stderr
    Tally.add("bad inputs refused")


def test_http_proxy_carries_the_requests_and_no_proxy_bypasses_it(s3, bucket, proxy):
    m = Mount(s3, bucket, ["--chunk-size", "1M"], env={"HTTP_PROXY": proxy.endpoint, "NO_PROXY": "example.invalid"})
    try:
        read_all(m)
        assert proxy.forwarded > 0, "the listing and the GETs went through the proxy"
    finally:
        assert m.stop() == 0
    before = proxy.requests
    m = Mount(s3, bucket, ["--chunk-size", "1M"], env={"HTTP_PROXY": proxy.endpoint, "NO_PROXY": "127.0.0.1"})
    try:
        read_all(m)
        assert proxy.requests == before, "NO_PROXY: straight to the server"
    finally:
        assert m.stop() == 0


def test_an_ipv6_loopback_endpoint_reads_the_same_bytes(s3, bucket):
    try:
        v6 = FaultProxy(s3.endpoint, host="::1")
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    try:
        m = Mount(Through(v6.endpoint), bucket, ["--chunk-size", "1M"])
        try:
            read_all(m)
            assert v6.requests > 0
        finally:
            assert m.stop() == 0
    finally:
        v6.close()
