"""Fixtures of the end-to-end suite: a real S3 server (S3Proxy through `os2g s3-server`), objects put
through the S3 API with boto3, and real `os2g mount` processes read through the kernel."""

import hashlib
import json
import os
import random
import socket
import signal
import subprocess
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import urllib3
import pytest
from prometheus_client.parser import text_string_to_metric_families
from botocore.config import Config

ROOT = Path(__file__).resolve().parent.parent
# no test asks a real instance metadata service (this machine may be an EC2 instance); the credential
# tests point os2g at their own with AWS_EC2_METADATA_SERVICE_ENDPOINT
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
# the launcher's AOT cache (on by default) is tested on its own; elsewhere a test's mount neither records
# one nor waits on a cache another test's start is building
os.environ["OS2G_AOT_CACHE"] = "off"
OS2G = str(ROOT / "os2g")
ACCESS_KEY = "os2g-demo"
SECRET_KEY = "os2g-demo-secret"
CREDENTIALS_ENV = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}



def free_port(count=1):
    """The first of `count` consecutive ports that nothing is bound to now, below the kernel's ephemeral
    range: a port from that range can be handed to an outgoing connection between this check and the
    server's bind, which then fails with EADDRINUSE."""
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        ephemeral_low = int(f.read().split()[0])
    for _ in range(200):
        first = random.randrange(10000, ephemeral_low - count)
        if all(_bindable(first + i) for i in range(count)):
            return first
    raise RuntimeError("no free port below the ephemeral range")


def _bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))
            return True
        except OSError:
            return False

def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def payload(size: int, seed: int) -> bytes:
    """Deterministic bytes that differ at every offset (a misplaced read cannot match): SHAKE-128's
    output stream for the seed, so a shorter payload of a seed is a prefix of a longer one."""
    return hashlib.shake_128(f"payload:{seed}".encode()).digest(size)


def mounted(path) -> bool:
    target = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split(" ")
            if fields[4].encode().decode("unicode_escape") == target:
                return True
    return False


class S3Server:
    """`os2g s3-server`: in memory, or over `directory` (which outlives a restart on the same port)."""

    def __init__(self, latency_ms=0, directory=None, port=0, tls_keystore=None):
        backend = ["--dir", str(directory)] if directory else ["--memory"]
        tls = ["--tls-keystore", str(tls_keystore)] if tls_keystore else []
        self.proc = subprocess.Popen(
            [OS2G, "s3-server", *backend, *tls, "--port", str(port), "--latency-ms", str(latency_ms)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            # the in-memory backend holds every object of the session on its heap (the later -Xmx wins)
            env={**os.environ, "OS2G_JAVA_OPTS": "-Xmx3g"})
        for line in self.proc.stdout:
            if line.startswith("endpoint "):
                self.endpoint = line.split()[1]
                break
        else:
            raise RuntimeError("s3-server exited before it listened")
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)  # a test server's own certificate
        self.client = boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, region_name="us-east-1", verify=False,
            config=Config(max_pool_connections=32, retries={"max_attempts": 5}))

    def bucket(self, name, objects=None, threads=16):
        self.client.create_bucket(Bucket=name)
        if objects:
            with ThreadPoolExecutor(threads) as pool:
                list(pool.map(lambda kv: self.client.put_object(Bucket=name, Key=kv[0], Body=kv[1]),
                              objects.items()))
        return name

    def drop(self, name):
        """Deletes a bucket and its objects: the in-memory server keeps them for the whole session."""
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=name):
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                self.client.delete_objects(Bucket=name, Delete={"Objects": keys})
        self.client.delete_bucket(Bucket=name)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


class Os2gProcess:
    """An os2g process logging to `self.log`."""

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def signal_and_wait(self, sig, timeout):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)


def tree_sizes(root):
    """Every file under `root`, relative path -> size, as os.walk and stat see them."""
    seen = {}
    for d, _, files in os.walk(root):
        for name in files:
            path = os.path.join(d, name)
            seen[os.path.relpath(path, root)] = os.stat(path).st_size
    return seen


class Agent(Os2gProcess):
    """A foreground `os2g agent` on a socket in `work`, with `env` (default: the S3 server's credentials)."""

    def __init__(self, server, work, extra=(), env=None):
        self.socket = work / "agent.sock"
        self.staging = work / "agent-staging"
        self.log = open(work / f"agent-{time.time_ns()}.log", "w+")
        self.proc = subprocess.Popen(
            [OS2G, "agent", "--listen", f"unix:{self.socket}", "--endpoint", server.endpoint,
             "--staging-dir", str(self.staging), "--request-timeout", "3", "--retries", "2", *extra],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or CREDENTIALS_ENV)})
        deadline = time.time() + 90
        while "agent listening" not in self.output():
            assert self.proc.poll() is None, self.output()
            assert time.time() < deadline, self.output()
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM):
        return self.signal_and_wait(sig, 30)


class Mount(Os2gProcess):
    """A foreground `os2g mount` process; usable once the kernel lists the mount."""

    def __init__(self, server, bucket, extra=(), env=None, staging=None, credentials=True):
        self.dir = Path(tempfile.mkdtemp(prefix="os2g-it-"))
        self.path = self.dir / "mnt"
        self.path.mkdir()
        self.staging = Path(staging) if staging else self.dir / "staging"
        self.log = open(self.dir / "mount.log", "w+")
        command = [OS2G, "mount", bucket, str(self.path), "--endpoint", server.endpoint,
                   "--staging-dir", str(self.staging), *extra]
        base = {k: v for k, v in os.environ.items() if credentials or not k.startswith("AWS_")}
        self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**base, **(CREDENTIALS_ENV if credentials else {}), **(env or {})})
        deadline = time.time() + 90
        # usable as soon as the kernel lists it; "mounted" in the log once os2g has finished its own checks
        while not (mounted(self.path) and " mounted " in self.output()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"os2g mount exited with {self.proc.returncode}: {self.output()}")
            if time.time() > deadline:
                self.proc.kill()
                raise RuntimeError(f"mount did not appear: {self.output()}")
            time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM):
        rc = self.signal_and_wait(sig, 60)
        if mounted(self.path):
            subprocess.run(["fusermount3", "-u", "-z", str(self.path)], check=False)
        return rc


class Tally:
    """What the reliability tests tried, summed over the run and printed at its end."""

    counts = {}

    @classmethod
    def add(cls, what, n=1):
        cls.counts[what] = cls.counts.get(what, 0) + n


def pytest_terminal_summary(terminalreporter):
    if Tally.counts:
        terminalreporter.section("reliability tally")
        for what, n in sorted(Tally.counts.items()):
            terminalreporter.write_line(f"{what}: {n}")


def forget_pages(path):
    """Drops the file's pages from the kernel's cache, so that the next read reaches the mount."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def scrape(port):
    """{(name, labels as a sorted tuple): value} of every sample, parsed by Prometheus's own client."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


SHUFFLED_LOADER = r"""
import hashlib, json, os, sys
import torch
from torch.utils.data import DataLoader, Dataset

class Files(Dataset):
    def __init__(self, root, names):
        self.root, self.names = root, names
    def __len__(self):
        return len(self.names)
    def __getitem__(self, i):
        path = os.path.join(self.root, self.names[i])
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # the page cache dropped: the mount serves it
        os.close(fd)
        with open(path, "rb") as f:
            return self.names[i], hashlib.sha256(f.read()).hexdigest()

root, names = sys.argv[1], json.loads(sys.argv[2])
loader = DataLoader(Files(root, names), batch_size=4, shuffle=True, num_workers=2, collate_fn=lambda b: b)
print(json.dumps(dict(item for batch in loader for item in batch)))
"""


def shuffled_epoch(root, hashes):
    """One epoch of a shuffled PyTorch DataLoader (2 workers) over the files `hashes` names under
    `root`, the page cache dropped for each; asserts every sample's bytes."""
    r = subprocess.run(["/usr/bin/python3", "-c", SHUFFLED_LOADER, str(root), json.dumps(list(hashes))],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout) == hashes, "every sample's bytes"


def read_verified(path, expected_sha256):
    """Reads a whole file; its bytes must hash to what was put, or the read must fail (never wrong bytes)."""
    data = Path(path).read_bytes()
    assert sha256(data) == expected_sha256, f"wrong bytes from {path}"
    Tally.add("reads verified (sha256)")
    Tally.add("bytes verified", len(data))
    return data


@pytest.fixture(scope="session")
def s3():
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def radosgw():
    """Ceph's radosgw (rgw.py), one for the session: the second S3 implementation, and the shared cache's tier."""
    from rgw import start
    gateway = start(free_port)
    yield gateway
    gateway.stop()


def run_os2g(*args, env=None, timeout=120):
    return subprocess.run([OS2G, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
