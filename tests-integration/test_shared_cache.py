"""The shared tier (--shared-cache): two "nodes" (mounts with staging regions of their own and no disk
cache) over one origin (S3Proxy), the tier a bucket of a second S3 implementation (Ceph's radosgw, with
credentials of its own through --shared-cache-profile). The second node reads what the first fetched
with no origin GET; bad and missing blocks, a replaced object, and the tier stopped mid-epoch and
started again never give a reader an error or a wrong byte."""

import io
import json
import os
import tarfile
import threading
import time

import boto3
import pytest

from conftest import CREDENTIALS_ENV, Agent, Mount, forget_pages, payload, read_verified, run_os2g, sha256
from rgw import ACCESS_KEY, SECRET_KEY

CHUNK = 1 << 20
HEADER = 80  # a block object's header before the bytes (SharedCache.HEADER)
TAR_MEMBERS = {f"sample{i:02d}.bin": payload(20_000 + 37 * i, 900 + i) for i in range(16)}


def tar_bytes():
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, body in TAR_MEMBERS.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


FILES = {
    **{f"train/c{c}/img{i:02d}.jpg": payload(30_000 + 101 * i, 10 * c + i) for c in range(3) for i in range(20)},
    "large/cross.bin": payload(2 * CHUNK + 12345, 77),
    "shards/s0.tar": tar_bytes(),
}
# what a reader sees: the objects, and the tar's members through --expand-tar
READ = {**{k: v for k, v in FILES.items()}, **{f"shards/s0.tar.d/{n}": b for n, b in TAR_MEMBERS.items()}}


@pytest.fixture(scope="module")
def tier(s3, radosgw, tmp_path_factory):
    """(origin bucket, radosgw, its client, the credentials file with its profile "cache", the cluster's key)."""
    gateway = radosgw
    client = boto3.client("s3", endpoint_url=gateway.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    bucket = s3.bucket("it-shared-origin", FILES)
    credentials = tmp_path_factory.mktemp("tier") / "credentials"
    credentials.write_text(f"[cache]\naws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET_KEY}\n")
    credentials.chmod(0o600)
    key = credentials.parent / "cluster-key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    try:
        yield bucket, gateway, client, credentials, key
    finally:
        s3.drop(bucket)


def node(s3, tier, cache_bucket, extra=()):
    bucket, gateway, client, credentials, key = tier
    return Mount(s3, bucket, ["--expand-tar", "--chunk-size", "1M", "--shared-cache", f"s3://{cache_bucket}/nodes",
                              "--shared-cache-endpoint", gateway.endpoint, "--shared-cache-profile", "cache",
                              "--shared-cache-key", str(key), *extra],
                 env={"AWS_SHARED_CREDENTIALS_FILE": str(credentials)})


def stats(m):
    return json.loads((m.path / ".os2g" / "stats").read_text())["agent"]


def epoch(m, files=READ):
    for name, body in files.items():
        forget_pages(m.path / name)
        read_verified(m.path / name, sha256(body))


def settled(m, timeout=30):
    """The tier's counters once its writers are idle (writes and drops no longer moving)."""
    deadline, last = time.time() + timeout, None
    while True:
        now = stats(m)["shared_cache"]
        if now == last:
            return now
        assert time.time() < deadline, now
        last = now
        time.sleep(0.5)


def blocks(client, cache_bucket):
    """The cache bucket's objects: blocks, and the empty fill markers beside them (NAME.filling)."""
    return [o["Key"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=cache_bucket)
            for o in page.get("Contents", [])]


def fresh_cache_bucket(client, name):
    client.create_bucket(Bucket=name)
    return name


def test_a_second_node_reads_what_the_first_fetched_with_no_origin_get(s3, tier):
    cache_bucket = fresh_cache_bucket(tier[2], "it-shared-a")
    first = node(s3, tier, cache_bucket)
    try:
        epoch(first)
        written = settled(first)
        assert stats(first)["gets"] > 0
        assert written["writes"] > 0 and written["write_drops"] == 0, written
    finally:
        first.stop()
    assert all(k.startswith("nodes/os2g-blocks-v1/") for k in blocks(tier[2], cache_bucket))

    second = node(s3, tier, cache_bucket)
    try:
        epoch(second)
        s = stats(second)
        # every chunk, every member of the tar from the shared tier: the origin's GETs read the tar's headers
        assert s["fetched_bytes"] == 0 and s["gets"] <= 2, s
        assert s["shared_cache"]["hits"] >= len(FILES) and s["shared_cache"]["bad_blocks"] == 0, s["shared_cache"]
    finally:
        second.stop()

    # os2g cache stats|clear look into and empty the tier, with the store options of its endpoint
    bucket, gateway, client, credentials, _ = tier
    reach = [f"s3://{cache_bucket}/nodes", "--endpoint", gateway.endpoint, "--profile", "cache"]
    env = {"AWS_SHARED_CREDENTIALS_FILE": str(credentials)}
    held = len([k for k in blocks(client, cache_bucket) if not k.endswith(".filling")])  # blocks, not their fill markers
    r = run_os2g("cache", "stats", *reach, env=env)
    assert r.returncode == 0 and json.loads(r.stdout)["blocks"] == held, r.stdout + r.stderr
    r = run_os2g("cache", "clear", *reach, env=env)
    assert r.returncode == 0 and f"removed {held} blocks" in r.stdout, r.stdout + r.stderr
    assert blocks(client, cache_bucket) == []
    r = run_os2g("cache", "stats", "s3://no-such-cache-bucket", "--endpoint", gateway.endpoint, "--profile", "cache", env=env)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_two_nodes_reading_at_once_fetch_each_block_about_once(s3, tier):
    cache_bucket = fresh_cache_bucket(tier[2], "it-shared-b")
    nodes = [node(s3, tier, cache_bucket), node(s3, tier, cache_bucket)]
    try:
        failures = []

        def read(m):
            try:
                epoch(m)
            except Exception as e:  # reported below with the node it happened on
                failures.append(f"{m.path}: {e!r}")

        threads = [threading.Thread(target=read, args=(m,)) for m in nodes]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not failures and not any(t.is_alive() for t in threads), failures
        # a miss the other node is filling waits for its block: the two fetch about one node's worth
        counters = [stats(m) for m in nodes]
        assert sum(s["gets"] for s in counters) <= 1.3 * (len(READ) + 2), counters
        assert sum(s["shared_cache"]["awaited_fill_hits"] for s in counters) > 0, counters
    finally:
        for m in nodes:
            m.stop()


def test_bad_and_missing_blocks_are_read_from_the_origin(s3, tier):
    client = tier[2]
    cache_bucket = fresh_cache_bucket(client, "it-shared-c")
    first = node(s3, tier, cache_bucket)
    try:
        epoch(first)
        settled(first)
    finally:
        first.stop()
    names = sorted(k for k in blocks(client, cache_bucket) if not k.endswith(".filling"))  # not the fill markers
    sizes = [client.head_object(Bucket=cache_bucket, Key=n)["ContentLength"] - HEADER for n in names[:2]]
    bad = bytearray(client.get_object(Bucket=cache_bucket, Key=names[0])["Body"].read())
    bad[-3] ^= 0xFF
    client.put_object(Bucket=cache_bucket, Key=names[0], Body=bytes(bad))
    client.delete_object(Bucket=cache_bucket, Key=names[1])

    second = node(s3, tier, cache_bucket)
    try:
        epoch(second)
        s = stats(second)
        assert s["shared_cache"]["bad_blocks"] == 1 and s["shared_cache"]["misses"] >= 1, s["shared_cache"]
        assert s["fetched_bytes"] == sum(sizes), s  # those two blocks' bytes, and no others, from the origin
        assert s["shared_cache"]["errors"] == 0, s
    finally:
        second.stop()


def test_a_replaced_object_is_read_new_through_the_tier(s3, tier):
    bucket, _, client, _, _ = tier
    cache_bucket = fresh_cache_bucket(client, "it-shared-d")
    name = "train/c0/img00.jpg"
    first = node(s3, tier, cache_bucket)
    try:
        read_verified(first.path / name, sha256(FILES[name]))
        settled(first)
    finally:
        first.stop()
    new = payload(31_000, 12345)
    s3.client.put_object(Bucket=bucket, Key=name, Body=new)
    try:
        second = node(s3, tier, cache_bucket)
        try:
            read_verified(second.path / name, sha256(new))
            assert stats(second)["gets"] == 1
        finally:
            second.stop()
    finally:
        s3.client.put_object(Bucket=bucket, Key=name, Body=FILES[name])


def test_the_tier_stopped_mid_epoch_is_bypassed_then_used_again(s3, tier):
    _, gateway, client, _, _ = tier
    cache_bucket = fresh_cache_bucket(client, "it-shared-e")
    later = "large/cross.bin"  # read once the tier is back
    names = [k for k in READ if k != later]
    m = node(s3, tier, cache_bucket)
    try:
        epoch(m, {k: READ[k] for k in names[: len(names) // 2]})
        gateway.stop_gateway()
        try:
            epoch(m, {k: READ[k] for k in names[len(names) // 2:]})  # no error reaches a reader
            down = stats(m)["shared_cache"]
            assert down["errors"] >= 1 and down["bypassed"], down
        finally:
            gateway.start_gateway()
        time.sleep(11)  # the bypass ends: the next miss asks the tier again
        before = settled(m)
        read_verified(m.path / later, sha256(READ[later]))
        after = settled(m)
        assert after["misses"] > before["misses"] and after["writes"] > before["writes"], (before, after)
        assert after["errors"] == before["errors"] and not after["bypassed"], after
    finally:
        m.stop()


def test_in_split_mode_the_agent_holds_the_tier_for_its_mounts(s3, tier, tmp_path):
    bucket, gateway, client, credentials, key = tier
    cache_bucket = fresh_cache_bucket(client, "it-shared-f")
    agent = Agent(s3, tmp_path, ["--shared-cache", f"s3://{cache_bucket}/nodes", "--shared-cache-endpoint", gateway.endpoint,
                                 "--shared-cache-profile", "cache", "--shared-cache-key", str(key)],
                  env={**CREDENTIALS_ENV, "AWS_SHARED_CREDENTIALS_FILE": str(credentials)})
    try:
        train = {k: v for k, v in READ.items() if k.startswith("train/c0/")}
        for n in range(2):  # each mount of the agent has a staging region of its own: the second reads the tier
            m = Mount(s3, bucket, ["--agent", f"unix:{agent.socket}", "--chunk-size", "1M", "--agent-replies", "off"],
                      credentials=False)
            try:
                epoch(m, train)
                s = settled(m)
                if n == 0:
                    assert s["writes"] == len(train) and s["hits"] == 0, s
                else:
                    assert s["hits"] == len(train) and stats(m)["fetched_bytes"] == 0, stats(m)
            finally:
                m.stop()
    finally:
        agent.stop()
