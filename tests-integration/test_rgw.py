"""The same end-to-end checks against a second S3 implementation: Ceph's radosgw (rgw.py), whose
listings come in chunked answers and whose GET answers are its own. A real mount of it reads the
tree and every byte: empty, small, chunk-crossing and multi-chunk objects, random preads, a directory
of more keys than one listing page, in process and through an agent; and files written through a
mount (a multipart upload of unsigned parts, a one-PUT file, a rename, an overwrite, a delete)."""

import os
import random

import boto3
import pytest

from conftest import Agent, Mount, Tally, payload, read_verified, sha256, tree_sizes
from rgw import ACCESS_KEY, SECRET_KEY

CHUNK = 1 << 20
FILES = {
    "empty.bin": b"",
    "small/a.jpg": payload(125_000, 1),
    "small/b.jpg": payload(3, 2),
    "cross.bin": payload(CHUNK + 7, 3),
    "multi/big.bin": payload(5 * CHUNK + 12345, 4),
    **{f"many/f{i:04d}.bin": payload(100 + i, 10 + i) for i in range(1200)},
}
CREDENTIALS = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}

# no skip without Ceph: run.sh installs it, and a missing install step must fail, not pass silently


@pytest.fixture(scope="module")
def rgw(radosgw):
    gateway = radosgw
    client = boto3.client("s3", endpoint_url=gateway.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    client.create_bucket(Bucket="it-rgw")
    for key, body in FILES.items():
        client.put_object(Bucket="it-rgw", Key=key, Body=body)
    yield gateway


def check_tree_and_bytes(m):
    assert tree_sizes(m.path) == {k: len(v) for k, v in FILES.items()}
    for key, body in FILES.items():
        if not key.startswith("many/") or key.endswith("0.bin"):
            read_verified(m.path / key, sha256(body))
    body = FILES["multi/big.bin"]
    rng = random.Random(7)
    with open(m.path / "multi/big.bin", "rb") as f:
        for _ in range(100):
            offset = rng.randrange(len(body) + 10)
            length = rng.randrange(1, 3 * CHUNK)
            assert os.pread(f.fileno(), length, offset) == body[offset:offset + length]
    Tally.add("reads verified (bytes equal)", 100)


def test_a_mount_of_radosgw_reads_the_tree_and_every_byte(rgw):
    m = Mount(rgw, "it-rgw", ["--chunk-size", "1M"], env=CREDENTIALS)
    try:
        check_tree_and_bytes(m)
        Tally.add("radosgw: files verified", len(FILES))
    finally:
        assert m.stop() == 0


def test_an_agent_serving_radosgw_gives_the_same_bytes(rgw, tmp_path):
    agent = Agent(rgw, tmp_path, env=CREDENTIALS)
    try:
        m = Mount(rgw, "it-rgw", ["--agent", f"unix:{agent.socket}", "--chunk-size", "1M"], credentials=False)
        try:
            check_tree_and_bytes(m)
        finally:
            assert m.stop() == 0
    finally:
        agent.stop()


def test_files_written_through_a_mount_of_radosgw_are_its_objects(rgw):
    """The write path against the second implementation: a multipart file and a one-PUT file written,
    published at close, read back through the mount and by boto3, an overwrite, a rename, a delete."""
    client = boto3.client("s3", endpoint_url=rgw.endpoint, aws_access_key_id=ACCESS_KEY,
                          aws_secret_access_key=SECRET_KEY, region_name="us-east-1")
    client.create_bucket(Bucket="it-rgw-writes")
    m = Mount(rgw, "it-rgw-writes", ["--allow-writes", "--allow-overwrite", "--allow-delete"], env=CREDENTIALS)
    try:
        big = payload(19 * CHUNK + 321, 50)
        (m.path / "ckpt").mkdir()
        (m.path / "ckpt" / "model.pt").write_bytes(big)
        (m.path / "ckpt" / "meta.json.tmp").write_bytes(b'{"step": 1}')
        os.rename(m.path / "ckpt" / "meta.json.tmp", m.path / "ckpt" / "meta.json")
        (m.path / "ckpt" / "meta.json").write_bytes(b'{"step": 2}')
        read_verified(m.path / "ckpt" / "model.pt", sha256(big))
        got = client.get_object(Bucket="it-rgw-writes", Key="ckpt/model.pt")
        assert sha256(got["Body"].read()) == sha256(big)
        assert got["ETag"].strip('"').endswith("-3"), "a multipart upload of three parts"
        assert client.get_object(Bucket="it-rgw-writes", Key="ckpt/meta.json")["Body"].read() == b'{"step": 2}'
        os.unlink(m.path / "ckpt" / "meta.json")
        keys = {o["Key"] for o in client.list_objects_v2(Bucket="it-rgw-writes").get("Contents", [])}
        assert keys == {"ckpt/model.pt"}
        assert client.list_multipart_uploads(Bucket="it-rgw-writes").get("Uploads", []) == []
        assert "signed whole" not in m.output(), "radosgw takes unsigned, streamed parts"
        Tally.add("files written to radosgw")
    finally:
        m.stop()
