"""Runs the benchmark workloads against os2g and its peers, each target on a fresh mount per workload,
the page cache dropped before each, the same server, data and reader code for all. Appends one JSON
line per (target, workload) to the results file.

    bench.py ENDPOINT DATA_DIR RESULTS [--quick] [--latency-ms N] [--workloads LABELS] [--default-flags] [--only TARGET]
             [--server-pid PID] [--warm-agent FILES] [--resume]
"""

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PY = "/usr/bin/python3"
KEY, SECRET = "os2g-demo", "os2g-demo-secret"
# a peer that retries a failing read for many minutes is cut off and reported as failed
WORKLOAD_TIMEOUT_S = 420


def mounted(path):
    target = os.path.realpath(path)
    with open("/proc/self/mountinfo") as f:
        return any(line.split(" ")[4] == target for line in f)


def drop_caches():
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        pass


class Target:
    """A way to present the bucket as a directory: a mount command, or the local copy."""

    def __init__(self, name, flags, command, env=None, agent=None, cache_dir=None, direct=None, writes=False, only=None, server_pid=None, before=None):
        """agent: for os2g's split mode, the command of the agent process the mount connects to.
        cache_dir: a target of the disk cache workloads (the set larger than memory), whose disk cache is
        this directory, emptied before each workload (None: the other workloads' targets).
        direct: no mount; the sequential and first-byte workloads GET from this endpoint with curl.
        writes: a target of the write workloads only (a mount that takes writes, or boto3's uploads).
        only: the workloads this target runs, when not all of its kind.
        server_pid: the S3 server it reads from, when not the run's.
        before: what runs before its first workload, given a free mount point and a log; it returns rows
        of its own (flags, label, measurements) for the results."""
        self.name, self.flags, self.command, self.env, self.agent = name, flags, command, env or {}, agent
        self.cache_dir = cache_dir
        self.direct = direct
        self.writes = writes
        self.only = only
        self.server_pid = server_pid
        self.before = before
        self.agent_proc = None

    def runs(self, label):
        """Whether this target runs workload `label`: the write ones on the write targets only, the *-cache
        ones on the local copy and the disk cache targets, the later epochs on the local copy and os2g at
        its defaults, the others on the rest."""
        if self.only is not None:
            return label in self.only
        if self.writes or label in WRITE_WORKLOADS:
            return self.writes and label in WRITE_WORKLOADS
        if self.direct:
            return label in DIRECT_WORKLOADS
        if label in EPOCH_WORKLOADS:
            return self.command is None or self.name.removesuffix("-base") == "os2g" and self.flags == "default"
        return self.command is None or (self.cache_dir is not None) == label.endswith("-cache")

    def clear_cache(self):
        if self.cache_dir is not None:
            shutil.rmtree(self.cache_dir, ignore_errors=True)
            self.cache_dir.mkdir(parents=True)

    def start(self, mnt, log):
        if self.command is None:
            return None
        env = {**os.environ, **self.env}
        env.pop("AWS_CA_BUNDLE", None)  # rclone refuses a CA bundle path it cannot parse as PEM here
        if self.agent_proc is not None and self.agent_proc.poll() is not None:
            self.agent_proc = None  # it died during the last workload: start another
        if self.agent is not None and self.agent_proc is None:
            # the agent is a service (os2g-agent.service): started once per target and kept across its
            # workloads, as mounts come and go; each workload still gets a fresh mount
            log.flush()
            start = Path(log.name).stat().st_size  # the log is shared by every workload's run
            self.agent_proc = subprocess.Popen(self.agent, stdout=log, stderr=subprocess.STDOUT, env=env,
                                               start_new_session=True)
            deadline = time.time() + 120
            while "agent listening" not in Path(log.name).read_text()[start:]:
                if self.agent_proc.poll() is not None or time.time() > deadline:
                    self.agent_proc.kill()
                    self.agent_proc = None
                    raise RuntimeError(f"{self.name}: agent failed, see {log.name}")
                time.sleep(0.05)
        if self.agent is not None:
            env = {k: v for k, v in env.items() if not k.startswith("AWS_")}  # the shim holds no credentials
        proc = subprocess.Popen(self.command(mnt), stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        deadline = time.time() + 120
        while not mounted(mnt):
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                if self.agent_proc is not None:
                    self.agent_proc.kill()
                    self.agent_proc = None
                raise RuntimeError(f"{self.name}: mount failed, see {log.name}")
            time.sleep(0.05)
        time.sleep(0.5)  # let the mount finish its own start-up before it is measured
        return proc

    def stop(self, proc, mnt):
        if proc is None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
        if mounted(mnt):
            subprocess.run(["fusermount3", "-u", "-z", str(mnt)], check=False)

    def close(self):
        """Stops the target's agent, if it has one running."""
        if self.agent_proc is not None:
            self.agent_proc.send_signal(signal.SIGTERM)
            try:
                self.agent_proc.wait(60)
            except subprocess.TimeoutExpired:
                self.agent_proc.kill()
            self.agent_proc = None


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def targets(endpoint, data, work, quick, https=None, tier=None, veth=None):
    passwd = work / "s3fs.passwd"
    passwd.write_text(f"{KEY}:{SECRET}\n")
    passwd.chmod(0o600)
    creds = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET}
    rclone_env = {"RCLONE_S3_PROVIDER": "Other", "RCLONE_S3_ENDPOINT": endpoint,
                  "RCLONE_S3_ACCESS_KEY_ID": KEY, "RCLONE_S3_SECRET_ACCESS_KEY": SECRET,
                  "RCLONE_S3_FORCE_PATH_STYLE": "true", "RCLONE_CONFIG": "/dev/null"}
    s3fs_base = f"url={endpoint},use_path_request_style,passwd_file={passwd}"
    # the local copy runs first and last: this VM's speed drifts within a run (a local DataLoader epoch
    # went 273 -> 226 samples/s twenty minutes apart), and the report compares every target with the mean
    all_targets = [
        Target("local", "local copy, run first (the ceiling)", None),
        *os2g_targets(str(ROOT / "os2g"), "", endpoint, work, creds),
        Target("s3fs", "default", lambda m: ["s3fs", "bench", str(m), "-f", "-o", s3fs_base]),
        Target("s3fs", "recommended: ro,kernel_cache,enable_noobj_cache,stat cache 1h/200k,parallel_count=16,multireq_max=32",
               lambda m: ["s3fs", "bench", str(m), "-f", "-o", s3fs_base + ",ro,kernel_cache,enable_noobj_cache,"
                          "stat_cache_expire=3600,max_stat_cache_size=200000,parallel_count=16,multireq_max=32"]),
        Target("rclone", "default", lambda m: ["rclone", "mount", ":s3:bench", str(m)], rclone_env),
        Target("rclone", "recommended: --read-only --vfs-cache-mode full --dir-cache-time 1h --attr-timeout 1h --buffer-size 32M",
               lambda m: ["rclone", "mount", ":s3:bench", str(m), "--read-only", "--vfs-cache-mode", "full",
                          "--cache-dir", str(work / "rclone-cache"), "--dir-cache-time", "1h", "--attr-timeout", "1h",
                          "--buffer-size", "32M"], rclone_env),
        *cache_targets(str(ROOT / "os2g"), endpoint, work, creds, s3fs_base, rclone_env),
        *write_targets(str(ROOT / "os2g"), endpoint, work, creds, s3fs_base, rclone_env),
        *(https_targets(str(ROOT / "os2g"), https, work, creds) if https else []),
        *([shared_target(str(ROOT / "os2g"), endpoint, tier, creds)] if tier else []),
        *([veth_target(str(ROOT / "os2g"), endpoint, work, creds)] if veth else []),
        # the store's own speed from this machine: parallel ranged GETs with curl, no file system
        Target("direct", "curl, 8 ranged GETs of 8 MiB in flight (no mount)", None, direct=endpoint),
        Target("local", "local copy, run last (the ceiling)", None),
    ]
    baseline = os.environ.get("OS2G_BASELINE")
    if baseline:  # another build's checkout, for before/after rounds: os2g-base, os2g-split-base
        base = str(Path(baseline) / "os2g")
        all_targets[1:1] = [*os2g_targets(base, "-base", endpoint, work, creds), *os2g_cache_targets(base, "-base", endpoint, work, creds)]
    if quick:  # each target at its defaults, and os2g's disk cache (its workloads have no default target)
        return [t for t in all_targets if t.flags == "default" or t.name.startswith(("os2g-split", "os2g-net")) or t.name in ("local", "direct")
                or t.writes or t.cache_dir is not None and t.name.startswith("os2g")]
    return all_targets


# what the direct target (curl, no mount) runs: the reads a download tool does too
DIRECT_WORKLOADS = ("seq-1", "seq-huge", "ttfb")

# what the links are compared on (the Unix link without agent replies, the network links, the store over
# HTTPS, the veth pair): small files, sequential reads, the DataLoader; their other rows would repeat os2g-split's
LINK_WORKLOADS = ("small-4", "seq-4", "dataloader")

# epochs after the first, on a fresh mount and after other work: os2g at its default flags against the local
# copy (every target's first epoch is the dataloader row)
EPOCH_WORKLOADS = ("dataloader-epochs", "dataloader-after-large")

# what the write targets run: a checkpoint file and a directory of shards written, timed until in the bucket
WRITE_WORKLOADS = ("write-ckpt", "write-dir")


def write_targets(launcher, endpoint, work, creds, s3fs_base, rclone_env):
    """The targets of the write workloads: os2g in process and split with --allow-writes, the peers with
    their write paths (s3fs uploads at close; rclone from its write cache after close), and boto3's own
    multipart uploads with no file system."""
    sock = f"unix:{work}/agent-writes.sock"
    return [
        Target("os2g", "--allow-writes", lambda m: [launcher, "mount", "bench", str(m), "--endpoint", endpoint, "--allow-writes"],
               creds, writes=True),
        Target("os2g-split", "--allow-writes; agent on core 1 (taskset -c 1, --cpus 1)",
               lambda m: [launcher, "mount", "bench", str(m), "--agent", sock, "--allow-writes"], creds,
               agent=[*(["taskset", "-c", "1"] if (os.cpu_count() or 1) > 1 else []), launcher, "agent",
                      "--listen", sock, "--endpoint", endpoint, "--cpus", "1", "--allow-writes"], writes=True),
        Target("s3fs", "default", lambda m: ["s3fs", "bench", str(m), "-f", "-o", s3fs_base], writes=True),
        Target("rclone", "--vfs-cache-mode writes",
               lambda m: ["rclone", "mount", ":s3:bench", str(m), "--vfs-cache-mode", "writes",
                          "--cache-dir", str(work / "rclone-write-cache")], rclone_env, writes=True),
        Target("direct", "boto3 upload_fileobj, 8 MiB parts, 8 threads per file (no mount)", None, direct=endpoint, writes=True),
    ]


# the staging region of the disk cache workloads: the ~630 MB of JPEGs is five times it
CACHE_STAGING = "256M"


def cache_targets(launcher, endpoint, work, creds, s3fs_base, rclone_env):
    """The targets of the disk cache workloads (a set larger than memory): os2g with a small staging region,
    without and with --cache-dir, and the peers with their own disk caches."""
    s3fs_cache, rclone_cache = work / "s3fs-cache", work / "rclone-vfs-cache"
    return [
        *os2g_cache_targets(launcher, "", endpoint, work, creds),
        Target("s3fs", "-o use_cache=DIR,ro,kernel_cache",
               lambda m: ["s3fs", "bench", str(m), "-f", "-o", s3fs_base + f",ro,kernel_cache,use_cache={s3fs_cache}"],
               cache_dir=s3fs_cache),
        Target("rclone", "--read-only --vfs-cache-mode full --cache-dir DIR",
               lambda m: ["rclone", "mount", ":s3:bench", str(m), "--read-only", "--vfs-cache-mode", "full",
                          "--cache-dir", str(rclone_cache), "--dir-cache-time", "1h", "--attr-timeout", "1h"],
               rclone_env, cache_dir=rclone_cache),
    ]


def os2g_cache_targets(launcher, suffix, endpoint, work, creds):
    """os2g's disk cache targets, run by the launcher at `launcher`: a small staging region without and with --cache-dir."""
    cache = work / f"os2g{suffix}-cache"
    mount = [launcher, "mount", "bench"]
    return [
        Target("os2g" + suffix, f"--staging-size {CACHE_STAGING}, no disk cache",
               lambda m: [*mount, str(m), "--endpoint", endpoint, "--staging-size", CACHE_STAGING], creds, cache_dir=work / "none"),
        Target("os2g" + suffix, f"--staging-size {CACHE_STAGING} --cache-dir DIR",
               lambda m: [*mount, str(m), "--endpoint", endpoint, "--staging-size", CACHE_STAGING, "--cache-dir", str(cache)],
               creds, cache_dir=cache),
    ]


def link_certs(work):
    """A CA and the agent's and the shim's certificates for the network link's mutual TLS: (agent, shim) flags."""
    d = work / "link-certs"
    if not (d / "shim.pem").exists():
        d.mkdir(exist_ok=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        subprocess.run(["openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "30", "-subj", "/CN=bench-ca"],
                       cwd=d, check=True, capture_output=True)
        for name in ("agent", "shim"):
            subprocess.run(["openssl", "req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}"],
                           cwd=d, check=True, capture_output=True)
            subprocess.run(["openssl", "x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                            "-out", f"{name}.pem", "-days", "30"], cwd=d, check=True, capture_output=True)
    flags = lambda name: ["--link-cert", str(d / f"{name}.pem"), "--link-key", str(d / f"{name}.key"), "--link-ca", str(d / "ca.pem")]
    return flags("agent"), flags("shim")


def keytool():
    java_home = os.environ.get("JAVA_HOME") or "/usr/lib/jvm/temurin-25-jdk-amd64"
    for candidate in [f"{java_home}/bin/keytool", *sorted(Path("/usr/lib/jvm").glob("*/bin/keytool"))]:
        if os.access(candidate, os.X_OK):
            return str(candidate)
    raise RuntimeError("no keytool in JAVA_HOME or /usr/lib/jvm")


class HttpsStore:
    """The same dataset served over HTTPS by a second server (a self-signed key; its certificate is
    the CA the targets are given): for the pair that shows where TLS to the store is paid."""

    def __init__(self, data, work, latency_ms):
        d = work / "https-store"
        d.mkdir()
        keystore, self.ca = d / "server.p12", d / "ca.pem"
        subprocess.run([keytool(), "-genkeypair", "-keystore", str(keystore), "-storetype", "PKCS12", "-storepass", "os2g-demo",
                        "-keypass", "os2g-demo", "-alias", "s3", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2",
                        "-dname", "CN=127.0.0.1", "-ext", "SAN=ip:127.0.0.1"], check=True, capture_output=True)
        subprocess.run([keytool(), "-exportcert", "-rfc", "-keystore", str(keystore), "-storepass", "os2g-demo", "-alias", "s3",
                        "-file", str(self.ca)], check=True, capture_output=True)
        log = d / "server.log"
        self.proc = subprocess.Popen([str(ROOT / "os2g"), "s3-server", "--dir", str(data / "s3"), "--latency-ms", str(latency_ms),
                                      "--tls-keystore", str(keystore)], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                     env={**os.environ, "OS2G_JAVA_OPTS": "-XX:TieredStopAtLevel=4"})
        deadline = time.time() + 60
        while not log.read_text().startswith("endpoint ") and "\nendpoint " not in log.read_text():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the HTTPS server did not start: {log.read_text()}")
            time.sleep(0.1)
        self.endpoint = next(line.split()[1] for line in log.read_text().splitlines() if line.startswith("endpoint "))
        # warmed as the main server is, so that neither target of the pair pays its JIT
        sys.path.insert(0, str(HERE))
        import boto3
        import seed
        s3 = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          region_name="us-east-1", verify=str(self.ca))
        seed.warm_server(s3, "bench", self.proc.pid)

    def close(self):
        self.proc.terminate()
        self.proc.wait(30)


def https_targets(launcher, store, work, creds):
    """In process and with the agent over TCP, the store over HTTPS: TLS to the store moves to the agent."""
    trust = ["--ca-bundle", str(store.ca)]
    agent_certs, shim_certs = link_certs(work)
    address = "tcp://127.0.0.1:17090"
    return [
        Target("os2g-https", "the store over HTTPS, in process", lambda m: [launcher, "mount", "bench", str(m), "--endpoint",
               store.endpoint, *trust, "--expand-tar", "--decompress"], creds, only=LINK_WORKLOADS,
               server_pid=store.proc.pid),
        Target("os2g-net-plain-https", "the store over HTTPS from the agent; agent over TCP on loopback, mutual TLS, "
               "--link-encryption off, on core 1",
               lambda m: [launcher, "mount", "bench", str(m), "--agent", address, *shim_certs, "--link-encryption", "off",
                          "--expand-tar", "--decompress"], creds,
               agent=[*(["taskset", "-c", "1"] if (os.cpu_count() or 1) > 1 else []), launcher, "agent", "--listen", address,
                      *agent_certs, "--link-encryption", "off", "--endpoint", store.endpoint, *trust, "--cpus", "1"], only=LINK_WORKLOADS,
               server_pid=store.proc.pid),
    ]


class VethPair:
    """A network namespace for the shim with a veth pair to this host (198.18.7.0/30): the link between
    shim and agent crosses a network interface, as it does to a DPU or a neighbour node. The shim joins
    only the namespace's network (nsenter --net), so its mount is this host's."""

    NS, HOST_IF, HOST_IP, SHIM_IP = "os2g-bench-shim", "os2gbv", "198.18.7.1", "198.18.7.2"

    def __init__(self):
        self.close()
        for command in (["ip", "netns", "add", self.NS], ["ip", "link", "add", self.HOST_IF, "type", "veth", "peer", "name", "eth0", "netns", self.NS],
                        ["ip", "addr", "add", f"{self.HOST_IP}/30", "dev", self.HOST_IF], ["ip", "link", "set", self.HOST_IF, "up"],
                        ["ip", "netns", "exec", self.NS, "ip", "addr", "add", f"{self.SHIM_IP}/30", "dev", "eth0"],
                        ["ip", "netns", "exec", self.NS, "ip", "link", "set", "eth0", "up"],
                        ["ip", "netns", "exec", self.NS, "ip", "link", "set", "lo", "up"]):
            subprocess.run(command, check=True, capture_output=True)

    def close(self):
        subprocess.run(["ip", "link", "del", self.HOST_IF], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.NS], capture_output=True)


def veth_target(launcher, endpoint, work, creds):
    """The agent on this host's side of a veth pair, the shim in the namespace on the other: TCP with
    mutual TLS, authenticated only (the DPU's case)."""
    agent_certs, shim_certs = link_certs(work)
    address = f"tcp://{VethPair.HOST_IP}:17095"
    return Target("os2g-net-veth", "agent over TCP across a veth pair (the shim in a network namespace), mutual TLS, "
                  "--link-encryption off, agent on core 1",
                  lambda m: ["nsenter", f"--net=/run/netns/{VethPair.NS}", launcher, "mount", "bench", str(m), "--agent", address,
                             *shim_certs, "--link-encryption", "off", "--expand-tar", "--decompress"], creds,
                  agent=[*(["taskset", "-c", "1"] if (os.cpu_count() or 1) > 1 else []), launcher, "agent", "--listen", address,
                         *agent_certs, "--link-encryption", "off", "--endpoint", endpoint, "--cpus", "1"], only=LINK_WORKLOADS)


# what the shared tier's target runs: a second node's first epoch, the tier filled by a first node's
SHARED_WORKLOADS = ("small-4", "dataloader")


class SharedTier:
    """The cluster's shared cache for the second-node target: a second server (its own directory), 1 ms away."""

    def __init__(self, work):
        log = work / "shared-tier.log"
        (work / "shared-tier").mkdir()
        # the launcher's C1, not the origin's C2: nothing warms this server, and a cold C2 spends the first
        # node's epoch compiling on the cores the nodes share (its writers then fall behind and drop blocks)
        self.proc = subprocess.Popen([str(ROOT / "os2g"), "s3-server", "--dir", str(work / "shared-tier"), "--bucket", "os2g-cache",
                                      "--latency-ms", "1"], stdout=open(log, "w"), stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while "endpoint " not in log.read_text():
            if self.proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the shared tier's server did not start: {log.read_text()}")
            time.sleep(0.1)
        self.endpoint = next(line.split()[1] for line in log.read_text().splitlines() if line.startswith("endpoint "))
        self.key = work / "shared-tier.key"
        self.key.write_bytes(os.urandom(32))
        self.key.chmod(0o600)

    def close(self):
        self.proc.terminate()
        self.proc.wait(30)


def shared_target(launcher, endpoint, tier, creds):
    """os2g as the second node of a cluster sharing a cache: first two nodes start one epoch of small/ at
    once over an empty prefix (each a row: its origin GETs), then a first node (a mount of its own) reads
    small/ once through the tier; then each measured mount is fresh, its staging empty. Blocks are signed
    with a cluster key, as SHARED-CACHE.md recommends."""
    def command(m, prefix="bench"):
        return [launcher, "mount", "bench", str(m), "--endpoint", endpoint, "--shared-cache", f"s3://os2g-cache/{prefix}",
                "--shared-cache-endpoint", tier.endpoint, "--shared-cache-key", str(tier.key)]

    def epoch_of_nodes(mnts, prefix, log, server_pid):
        """One epoch of small/ on a fresh mount per node, all at once; each node's row once its writers are idle."""
        procs, readers = [], []
        try:
            for mnt in mnts:
                mnt.mkdir(exist_ok=True)
                procs.append(subprocess.Popen(command(mnt, prefix), stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **creds},
                                              start_new_session=True))
            deadline = time.time() + 120
            for mnt, proc in zip(mnts, procs):
                while not mounted(mnt):
                    if proc.poll() is not None or time.time() > deadline:
                        raise RuntimeError(f"os2g-shared: a node's mount failed, see {log.name}")
                    time.sleep(0.05)
            drop_caches()
            readers = [subprocess.Popen([PY, str(HERE / "workloads.py"), str(mnt), str(proc.pid), "small", "--readers", "4",
                                         "--epochs", "1", "--server-pid", str(server_pid)], stdout=subprocess.PIPE, text=True)
                       for mnt, proc in zip(mnts, procs)]
            rows = []
            for mnt, reader in zip(mnts, readers):
                out, _ = reader.communicate(timeout=WORKLOAD_TIMEOUT_S)
                if reader.returncode != 0:
                    raise RuntimeError(f"os2g-shared: a node's epoch failed (exit {reader.returncode})")
                row = json.loads(out.strip().splitlines()[-1])
                # the node's own origin GETs (the server's count is every node's)
                row["gets"] = json.loads((mnt / ".os2g" / "stats").read_text())["agent"]["gets"]
                rows.append(row)
            for mnt in mnts:
                last = None
                while True:  # until its writers are idle: everything it fetched is in the tier
                    now = json.loads((mnt / ".os2g" / "stats").read_text())["agent"]["shared_cache"]
                    if now == last:
                        break
                    last = now
                    time.sleep(1)
                log.write(f"node {mnt.name}: {json.dumps(now)}\n")
            return rows
        finally:
            for reader in readers:
                if reader.poll() is None:
                    reader.kill()
            for proc in procs:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)

    def first_nodes(mnt, log, server_pid):
        together = epoch_of_nodes([mnt.with_name("node-a"), mnt.with_name("node-b")], "herd", log, server_pid)
        first = epoch_of_nodes([mnt], "bench", log, server_pid)[0]
        return [*((f"two nodes at once, node {n}: --shared-cache (signed), the tier empty", "small-4", row)
                  for n, row in zip("ab", together)),
                # the first node's own epoch: what filling the tier cost it, and its GETs
                ("first node: --shared-cache (signed), the tier empty, filling it", "small-4", first)]

    return Target("os2g-shared", "second node: --shared-cache (signed) on a second server 1 ms away, filled by a first node's epoch",
                  command, creds, only=SHARED_WORKLOADS, before=first_nodes)


def os2g_targets(launcher, suffix, endpoint, work, creds):
    """os2g in process (default and recommended flags), split on a Unix socket, and split over TCP with
    mutual TLS (encrypted, and authenticated only), run by the launcher at `launcher`."""
    sock = f"unix:{work}/agent{suffix}.sock"
    pin = ["taskset", "-c", "1"] if (os.cpu_count() or 1) > 1 else []
    agent_certs, shim_certs = link_certs(work)
    port = 17070 + (1 if suffix else 0) * 10

    def networked(name, encryption, offset):
        address = f"tcp://127.0.0.1:{port + offset}"
        return Target(name + suffix, f"agent over TCP on loopback, mutual TLS, --link-encryption {encryption}; agent on core 1; "
                      "the shim's own staging region, chunks posted into it",
                      lambda m: [launcher, "mount", "bench", str(m), "--agent", address, *shim_certs, "--link-encryption", encryption,
                                 "--expand-tar", "--decompress"],
                      creds, agent=[*pin, launcher, "agent", "--listen", address, *agent_certs, "--link-encryption", encryption,
                                    "--endpoint", endpoint, "--cpus", "1"], only=LINK_WORKLOADS)

    return [
        Target("os2g" + suffix, "default", lambda m: [launcher, "mount", "bench", str(m), "--endpoint", endpoint, "--expand-tar", "--decompress"], creds),
        Target("os2g" + suffix, "recommended: --metadata-ttl forever",
               lambda m: [launcher, "mount", "bench", str(m), "--endpoint", endpoint, "--metadata-ttl", "forever", "--expand-tar", "--decompress"], creds),
        # the offload: the agent pinned to one core (a DPU's stand-in), the shim wherever the kernel puts it
        Target("os2g-split" + suffix, "agent on core 1 (taskset -c 1, --cpus 1), otherwise default",
               lambda m: [launcher, "mount", "bench", str(m), "--agent", sock, "--expand-tar", "--decompress"], creds,
               agent=[*(["taskset", "-c", "1"] if (os.cpu_count() or 1) > 1 else []), launcher, "agent",
                      "--listen", sock, "--endpoint", endpoint, "--cpus", "1"]),
        # the agent off the host: what a DPU's own Linux needs (no shared memory, no lent /dev/fuse)
        Target("os2g-split-off" + suffix, "agent on core 1, --agent-replies off (the shim answers every READ)",
               lambda m: [launcher, "mount", "bench", str(m), "--agent", sock + "-off", "--agent-replies", "off",
                          "--expand-tar", "--decompress"], creds,
               agent=[*pin, launcher, "agent", "--listen", sock + "-off", "--endpoint", endpoint, "--cpus", "1"], only=LINK_WORKLOADS),
        networked("os2g-net", "on", 0),
        networked("os2g-net-plain", "off", 1),
    ]


def workloads(quick):
    small_limit = ["--limit", "600"] if quick else []
    return [
        ("small-1", ["small", "--readers", "1", "--epochs", "2", "--limit", "300" if quick else "1000"]),
        ("small-4", ["small", "--readers", "4", "--epochs", "2", *small_limit]),
        ("seq-1", ["sequential", "--readers", "1"]),
        # the same read on a mount that has read a large file before: its JIT has compiled the read path
        ("seq-1-warm", ["sequential", "--readers", "1", "--warm-first"]),
        *([] if quick else [("seq-4", ["sequential", "--readers", "4"])]),
        # large files the ways loaders read them (seed.py's large_paths): one 4 GiB file, a 2 GiB
        # checkpoint by torch.load, cp and dd; 1 GiB of safetensors mapped; a 1 GiB .npy mapped and summed;
        # the 8 tar shards streamed by 4 DataLoader workers
        *([] if quick else [("seq-huge", ["sequential", "--readers", "1", "--file", "huge/file-4g.bin"]),
                            ("torch-load", ["torch-load"]), ("safetensors", ["safetensors"]), ("npy-mmap", ["npy-mmap"]),
                            ("tar-stream", ["tar-stream", "--readers", "4"]), ("cp", ["cp"]), ("dd", ["dd"])]),
        ("walk", ["walk", "--tree", "tree/d00" if quick else "tree"]),
        ("ttfb", ["ttfb"]),
        ("dataloader", ["dataloader", *(["--limit", "600"] if quick else [])]),
        # epochs after the first: on a fresh mount, and after 1 GiB of large files read in order (a shard,
        # a checkpoint) between epochs 1 and 2, the page cache dropped before each epoch
        ("dataloader-epochs", ["dataloader", "--epochs", "3", "--drop-between", *(["--limit", "600"] if quick else [])]),
        ("dataloader-after-large", ["dataloader", "--epochs", "2", "--drop-between", "--large-between", str(1 << 30),
                                    *(["--limit", "600"] if quick else [])]),
        # the same two with the read order told to the mount first (os2g only: elsewhere --hint does nothing)
        ("small-4-hinted", ["small", "--readers", "4", "--epochs", "1", "--hint", *small_limit]),
        ("dataloader-hinted", ["dataloader", "--hint", *(["--limit", "600"] if quick else [])]),
        # ~1 GB of JPEGs as separate objects (every target), then as members of 8 tar shards through
        # --expand-tar (os2g only: the report compares it with the peers' tarsrc-4)
        ("tarsrc-4", ["small", "--readers", "4", "--epochs", "1", "--root", "tarsrc", *small_limit]),
        ("tar-4", ["small", "--readers", "4", "--epochs", "1", "--tar", *small_limit]),
        # 1 GiB of text in a .zst: os2g's --decompress view against `zstd -dc` through the peers' mounts
        ("zstd-1", ["zstd"]),
        # a set larger than memory (the ~630 MB of JPEGs, 2.5 times the staging region): three epochs with
        # the page cache dropped between, on targets with disk caches (each emptied first)
        ("dataloader-cache", ["dataloader", "--epochs", "3", "--drop-between", *(["--limit", "600"] if quick else [])]),
        ("dataloader-hinted-cache", ["dataloader", "--hint", *(["--limit", "600"] if quick else [])]),
        ("small-4-cache", ["small", "--readers", "4", "--epochs", "2", "--drop-between", *small_limit]),
        # writes (their own targets): a 2 GiB checkpoint written 1 MiB at a time, and 64 files of 32 MiB by
        # 4 writers at once (a checkpoint directory of shards), each timed until every object is in the bucket
        ("write-ckpt", ["write", "--files", "1", "--size", str((256 if quick else 2048) << 20), "--writers", "1"]),
        ("write-dir", ["write", "--files", "16" if quick else "64", "--size", str(32 << 20), "--writers", "4"]),
    ]


def versions():
    def first_line(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.splitlines()[0].strip()
        except Exception:
            return "?"
    return {"os2g": first_line([str(ROOT / "os2g"), "--version"]), "s3fs": first_line(["s3fs", "--version"]),
            "rclone": first_line(["rclone", "version"]), "kernel": platform.release(),
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "commit": first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("data", type=Path)
    ap.add_argument("results", type=Path)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--latency-ms", type=int, default=10)
    ap.add_argument("--only", help="run only the targets of this name (os2g, os2g-split, s3fs, rclone, local), appending to RESULTS")
    ap.add_argument("--workloads", help="run only these workloads (comma-separated labels, e.g. small-4,small-4-hinted)")
    ap.add_argument("--default-flags", action="store_true", help="only each peer's default flags (as --quick does), at full size")
    ap.add_argument("--server-pid", type=int, default=0, help="the S3 server's process on this machine: its CPU is recorded too")
    ap.add_argument("--server-warmed", default="", help="how the server was warmed (seed.py's line), for the report")
    ap.add_argument("--warm-agent", type=int, default=0, metavar="FILES",
                    help="split mode: the agent first serves one unmeasured job (FILES small files of tarsrc/ on a mount of "
                         "its own), as a running os2g-agent.service has; default: its first measured workload is its first job")
    ap.add_argument("--resume", action="store_true",
                    help="append to RESULTS, running only the (target, workload) pairs it has no result for (a run cut short)")
    a = ap.parse_args()
    done = set()
    if a.resume and a.results.exists():
        for line in a.results.read_text().splitlines():
            row = json.loads(line)
            if "target" in row and "error" not in row:
                done.add((row["target"], row["flags"], row["label"]))
    work = Path(tempfile.mkdtemp(prefix="os2g-bench-"))
    mnt = work / "mnt"
    mnt.mkdir()
    launchers = [str(ROOT / "os2g")] + ([str(Path(os.environ["OS2G_BASELINE"]) / "os2g")] if os.environ.get("OS2G_BASELINE") else [])
    aot = {launcher: prepare_aot_cache(launcher, a.endpoint, mnt, work)
           for launcher in launchers if a.only is None or a.only.startswith("os2g")}
    meta = {"date": time.strftime("%Y-%m-%d"), "latency_ms": a.latency_ms, "quick": a.quick, "aot_cache": aot,
            "workloads": a.workloads, "default_flags": a.default_flags, "server_warmed": a.server_warmed,
            "warm_agent": a.warm_agent, **versions()}
    with open(a.results, "a" if a.only or a.resume else "w") as out:
        if not (a.only or a.resume):
            out.write(json.dumps({"meta": meta}) + "\n")
        else:  # rows added to another run's: the report says which build ran them, and when (kept if any ran)
            run_at = out.tell()
            out.write(json.dumps({"run": {**meta, "only": a.only}}) + "\n")
            rows_at = out.tell()
        def runs_any(labels, names):
            return (not (a.quick or a.default_flags) and (not a.workloads or set(a.workloads.split(",")) & set(labels))
                    and a.only in (None, *names))
        https = HttpsStore(a.data, work, a.latency_ms) if runs_any(LINK_WORKLOADS, ("os2g-https", "os2g-net-plain-https")) else None
        tier = SharedTier(work) if runs_any(SHARED_WORKLOADS, ("os2g-shared",)) else None
        veth = VethPair() if os.geteuid() == 0 and runs_any(LINK_WORKLOADS, ("os2g-net-veth",)) else None
        for target in targets(a.endpoint, a.data, work, a.quick or a.default_flags, https, tier, veth):
            if a.only and target.name != a.only:
                continue
            warm = a.warm_agent and target.agent is not None
            if warm:
                target.flags += f"; agent past its start-up ({a.warm_agent} files first, unmeasured)"
            labels = [label for label, _ in workloads(a.quick)
                      if (not a.workloads or label in a.workloads.split(",")) and target.runs(label)
                      and (label != "tar-4" or target.name.startswith("os2g"))
                      and (target.name, target.flags, label) not in done]
            if not labels:
                continue
            if warm:
                try:
                    warm_agent(target, mnt, work, a.warm_agent)
                except (RuntimeError, subprocess.SubprocessError) as e:
                    target.flags += f" (that job failed: {e})"
                    print(f"{target.name}: the agent's unmeasured job failed: {e}", flush=True)
            for label, args in workloads(a.quick):
                if label not in labels:
                    continue
                target.clear_cache()
                if target.before is not None:
                    drop_caches()
                    with open(work / f"{target.name}.log", "a") as log:
                        before = target.before(work / "first-node", log, a.server_pid)
                    target.before = None
                    for flags, before_label, row in before:
                        out.write(json.dumps({**row, "target": target.name, "flags": flags, "label": before_label}) + "\n")
                        print(f"{target.name:10} {flags[:30]:30} {before_label:10} {_summary(row)}", flush=True)
                drop_caches()
                log = open(work / f"{target.name}.log", "a")
                try:
                    proc = target.start(mnt, log)
                except RuntimeError as e:  # a target that cannot mount costs its rows, not the run's
                    log.close()
                    out.write(json.dumps({"error": str(e), "target": target.name, "flags": target.flags, "label": label}) + "\n")
                    out.flush()
                    print(f"{target.name:10} {target.flags[:30]:30} {label:10} {e}", flush=True)
                    continue
                root = mnt if proc is not None else a.data / "s3" / "bench"
                pid = proc.pid if proc is not None else 0
                agent_pid = target.agent_proc.pid if target.agent_proc is not None else 0
                try:
                    agent_cpu0 = cpu_seconds(agent_pid) if agent_pid else 0
                    r = subprocess.run([PY, str(HERE / "workloads.py"), str(root), str(pid), *args, "--server-pid", str(target.server_pid or a.server_pid),
                                        "--agent-pid", str(agent_pid), *(["--direct", target.direct] if target.direct else []),
                                        *(["--endpoint", a.endpoint] if label in WRITE_WORKLOADS else [])],
                                       capture_output=True, text=True, timeout=WORKLOAD_TIMEOUT_S)
                    if r.returncode != 0:
                        row = {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
                    else:
                        row = json.loads(r.stdout.strip().splitlines()[-1])
                        if agent_pid:  # listing and warm-up reads included; the measured interval's is agent_cpu_s
                            row["agent_cpu_workload_s"] = cpu_seconds(agent_pid) - agent_cpu0
                except subprocess.TimeoutExpired:
                    row = {"error": f"timed out after {WORKLOAD_TIMEOUT_S} s"}
                finally:
                    target.stop(proc, mnt)
                    log.close()
                row.update(target=target.name, flags=target.flags, label=label)
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"{target.name:10} {target.flags[:30]:30} {label:10} "
                      + (row.get("error") or _summary(row)), flush=True)
            target.close()
        if (a.only or a.resume) and out.tell() == rows_at:
            out.truncate(run_at)  # nothing ran: no record of a run
    if https:
        https.close()
    if tier:
        tier.close()
    if veth:
        veth.close()
    shutil.rmtree(work, ignore_errors=True)


def warm_agent(target, mnt, work, files):
    """Starts the target's agent and has it serve one job before anything is measured: a mount of its
    own reading shuffled small files of tarsrc/, then gone (its staging region with it; the page cache
    is dropped before each workload), as mounts come and go on a running agent service. The JVM's
    start-up (class loading, C1 compiling the fetch path) is then behind it, as it is for every job but
    the first after the service starts."""
    drop_caches()
    with open(work / f"{target.name}.log", "a") as log:
        proc = target.start(mnt, log)
        try:
            subprocess.run([PY, str(HERE / "workloads.py"), str(mnt), str(proc.pid), "small", "--root", "tarsrc",
                            "--limit", str(files), "--readers", "4"], check=True, capture_output=True, timeout=WORKLOAD_TIMEOUT_S)
        finally:
            target.stop(proc, mnt)


def prepare_aot_cache(launcher, endpoint, mnt, work):
    """Has the launcher's AOT cache of its build ready before anything is measured, as it is for every
    mount but a machine's first (the launcher's default): one unmeasured mount reads small files and
    records it, then a start builds it. Returns what the report says of it."""
    setting = os.environ.get("OS2G_AOT_CACHE")
    if setting in ("", "off"):
        return "off"
    base = Path(setting) if setting else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "os2g" / "os2g.aot"
    jar = Path(launcher).parent / "target" / "os2g.jar"
    cache = base.with_name(f"{base.stem}-{jar.stat().st_size}-{int(jar.stat().st_mtime)}.aot")
    if not cache.exists():
        env = {**os.environ, "AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET}
        with open(work / "aot.log", "a") as log:
            proc = subprocess.Popen([launcher, "mount", "bench", str(mnt), "--endpoint", endpoint], env=env,
                                    stdout=log, stderr=subprocess.STDOUT)
            try:
                deadline = time.time() + 60
                while not mounted(mnt) and proc.poll() is None and time.time() < deadline:
                    time.sleep(0.1)
                subprocess.run([PY, str(HERE / "workloads.py"), str(mnt), str(proc.pid), "small", "--limit", "500",
                                "--readers", "4"], check=True, capture_output=True, timeout=WORKLOAD_TIMEOUT_S)
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(60)
            subprocess.run([launcher, "--version"], env=env, stdout=log, stderr=subprocess.STDOUT, check=True)
        deadline = time.time() + 300
        while not cache.exists() and time.time() < deadline:
            time.sleep(1)
        time.sleep(2)  # the build's last step, its configuration removed
    return cache.name if cache.exists() else "none (its build did not finish)"


def _summary(row):
    if "epochs" in row:
        return " / ".join(f"{e['files_per_s']:.0f} files/s" if "files_per_s" in e else f"{e['samples_per_s']:.0f} samples/s"
                          for e in row["epochs"])
    if "mb_per_s" in row:
        return f"{row['mb_per_s']:.0f} MB/s"
    if "samples_per_s" in row:
        return f"{row['samples_per_s']:.0f} samples/s"
    if "seconds_next" in row:
        return f"{1000 * row['seconds']:.1f} ms, then {1000 * row['seconds_next']:.1f} ms"
    return f"{row.get('seconds', 0):.2f} s"


if __name__ == "__main__":
    sys.exit(main())
