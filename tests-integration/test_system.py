"""os2g as a system tool: installed by mount-scripts/install.sh (into a temporary prefix), mounted through
a real `mount -t fuse.os2g` and an fstab line, unmounted with umount(8); its systemd units checked and
their command run as systemd would; Prometheus metrics of a mount and of an agent scraped and parsed."""

import os
import re
import shlex
import signal
import stat
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import CREDENTIALS_ENV, OS2G, ROOT, SECRET_KEY, free_port, mounted, payload, read_verified, scrape, sha256

FILES = {f"train/c{c}/{i:02d}.jpg": payload(30_000 + 501 * i, 700 + 10 * c + i) for c in range(2) for i in range(20)}
HASHES = {k: sha256(v) for k, v in FILES.items()}
HELPER = Path("/sbin/mount.fuse.os2g")


def wait_for(condition, what, seconds=30):
    deadline = time.time() + seconds
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def bucket(s3):
    return s3.bucket("it-system", FILES)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """os2g installed by install.sh into a temporary prefix, its helper linked where mount(8) looks."""
    prefix = tmp_path_factory.mktemp("prefix")
    r = subprocess.run([str(ROOT / "mount-scripts/install.sh"), "--prefix", str(prefix), "--sbin-dir",
                        str(prefix / "sbin"), "--systemd-dir", str(prefix / "systemd")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    if os.geteuid() != 0:
        pytest.skip("mount -t fuse.os2g needs root to link the helper into /sbin")
    if HELPER.exists() or HELPER.is_symlink():
        pytest.skip(f"{HELPER} exists (a real installation): not replacing it for a test")
    HELPER.symlink_to(prefix / "sbin/mount.fuse.os2g")
    yield prefix
    HELPER.unlink()


@pytest.fixture()
def creds(tmp_path):
    path = tmp_path / "credentials"
    path.write_text(f"[default]\naws_access_key_id = {CREDENTIALS_ENV['AWS_ACCESS_KEY_ID']}\n"
                    f"aws_secret_access_key = {SECRET_KEY}\n")
    path.chmod(0o600)
    return path


def mount_pid(mnt):
    out = subprocess.run(["pgrep", "-f", f"mount .* {mnt}"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def test_the_s3_server_is_installed_only_when_asked(tmp_path):
    """A mount never uses S3Proxy, Jetty or jclouds: install.sh leaves them out unless --with-s3-server,
    and the installed os2g then says what is missing with one line."""
    def install(prefix, *extra):
        r = subprocess.run([str(ROOT / "mount-scripts/install.sh"), "--prefix", str(prefix), "--sbin-dir",
                            str(prefix / "sbin"), "--no-systemd", *extra], capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
        return prefix / "lib/os2g"

    plain = install(tmp_path / "plain")
    jars = os.listdir(plain / "lib")
    assert jars and not [j for j in jars if re.match(r"(s3proxy|jclouds|jetty)", j)], jars
    assert not (plain / "os2g-s3-server.jar").exists() and not (plain / "s3-server-lib").exists()
    r = subprocess.run([str(tmp_path / "plain/bin/os2g"), "s3-server", "--memory"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--with-s3-server" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = subprocess.run([str(tmp_path / "plain/bin/os2g"), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "demo" in r.stdout and "s3-server" not in r.stdout + r.stderr, r.stdout

    full = install(tmp_path / "full", "--with-s3-server")
    assert any(j.startswith("s3proxy") for j in os.listdir(full / "s3-server-lib"))
    proc = subprocess.Popen([str(tmp_path / "full/bin/os2g"), "s3-server", "--memory"], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("endpoint http://127.0.0.1:")
        assert proc.stdout.readline().split()[0] == "credentials"
    finally:
        proc.kill()
        proc.wait(30)
    # the installed demo: its own server, seeded, mounted, every byte verified, unmounted
    r = subprocess.run([str(tmp_path / "full/bin/os2g"), "demo", "--files", "100", "--large-files", "1", "--large-size", "8M",
                        "--exit"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "bytes verified" in r.stdout + r.stderr, r.stdout + r.stderr
    # a plain reinstall over it takes the server away again
    install(tmp_path / "full")
    assert not (full / "s3-server-lib").exists()


def test_mount_t_fuse_os2g_maps_fstab_options_serves_metrics_and_umount_ends_it(s3, bucket, installed, creds, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    port = free_port()
    log = tmp_path / "logs/os2g.log"
    staging = tmp_path / "staging"
    options = (f"endpoint={s3.endpoint},credentials_file={creds},metadata_ttl=forever,staging_size=64M,"
               f"staging_dir={staging},chunk_size=1M,metrics_port=127.0.0.1:{port},log_file={log},"
               "allow_other,_netdev,nofail,noatime")
    r = subprocess.run(["mount", "-t", "fuse.os2g", f"{bucket}/train", str(mnt), "-o", options],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    try:
        # mount(8) returned: the helper waited for the mount to answer
        assert mounted(mnt)
        with open("/proc/mounts") as f:
            line = next(l for l in f if l.split()[1] == str(mnt))
        assert line.split()[0] == f"os2g:{bucket}/train" and line.split()[2] == "fuse.os2g", line
        assert "allow_other" in line.split()[3]
        served = 0
        for key, digest in HASHES.items():
            served += len(read_verified(mnt / key.removeprefix("train/"), digest))

        m = scrape(port)
        assert m[("os2g_bytes_served_total", ())] == served
        assert m[("os2g_gets_total", ())] >= 1
        assert m[("os2g_get_seconds_count", ())] == m[("os2g_gets_total", ())]
        assert m[("os2g_staging_capacity_bytes", ())] == 64 << 20
        assert m[("os2g_staging_used_bytes", ())] > 0
        assert m[("os2g_reads_in_flight", ())] == 0
        assert m[("process_cpu_seconds_total", ())] > 0
        assert "mounted it-system/train/" in log.read_text()
    finally:
        r = subprocess.run(["umount", str(mnt)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    wait_for(lambda: not mount_pid(mnt), "the mount process to exit after umount")
    assert not mounted(mnt)
    assert not staging.exists() or not any(staging.iterdir()), "staging freed"
    assert re.search(r"unmounted .*: served \d+ bytes", log.read_text()), log.read_text()


def test_an_fstab_line_with_mount_only_options_mounts(s3, bucket, installed, creds, tmp_path):
    mnt = tmp_path / "data"
    mnt.mkdir()
    fstab = tmp_path / "fstab"
    fstab.write_text(f"# os2g\n{bucket}/train/c1 {mnt} fuse.os2g endpoint={s3.endpoint},credentials_file={creds},"
                     f"staging_size=32M,staging_dir={tmp_path / 'staging'},x-systemd.automount,x-systemd.mount-timeout=30,"
                     "_netdev,nofail,defaults 0 0\n")
    r = subprocess.run(["mount", "-T", str(fstab), str(mnt)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    try:
        assert sorted(os.listdir(mnt)) == sorted(k.split("/")[-1] for k in FILES if k.startswith("train/c1/"))
        read_verified(mnt / "05.jpg", HASHES["train/c1/05.jpg"])
    finally:
        assert subprocess.run(["umount", str(mnt)], timeout=60).returncode == 0
    wait_for(lambda: not mount_pid(mnt), "the mount process to exit after umount")


def test_the_helper_refuses_what_a_user_gets_wrong_with_one_line(s3, bucket, installed, creds, tmp_path):
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    base = f"endpoint={s3.endpoint},credentials_file={creds},staging_dir={tmp_path / 'staging'}"
    for options, says in [(base + ",staging_size", "-o staging_size needs a value"),
                          (base + ",decompress=yes", "-o decompress takes no value"),
                          (base + ",metrics_port=99999", "--metrics-port must be PORT or ADDRESS:PORT"),
                          (f"endpoint={s3.endpoint},credentials_file={creds}", None)]:
        source = bucket if says else "no-such-bucket"
        r = subprocess.run(["mount", "-t", "fuse.os2g", source, str(mnt), "-o", options],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode != 0
        os2g_lines = [l for l in r.stderr.splitlines() if l.startswith("os2g:")]
        assert len(os2g_lines) == 1, r.stderr
        assert (says or "bucket no-such-bucket does not exist") in os2g_lines[0]
        assert not mounted(mnt)
    # mount -f: everything but the mount
    r = subprocess.run(["mount", "-f", "-t", "fuse.os2g", bucket, str(mnt), "-o", base], capture_output=True, text=True)
    assert r.returncode == 0 and not mounted(mnt)


def systemd_words(command, env):
    """A unit's command line as systemd splits it: ${VAR} one word, $VAR split on white space."""
    words = []
    for word in shlex.split(command):
        if re.fullmatch(r"\$\{\w+\}", word):
            words.append(env[word[2:-1]])
        elif re.fullmatch(r"\$\w+", word):
            words.extend(env[word[1:]].split())
        else:
            words.append(word)
    return words


def unit_lines(path, key):
    return [l.split("=", 1)[1] for l in path.read_text().splitlines() if l.startswith(key + "=")]


def test_systemd_units_verify_and_their_command_mounts_and_stops_on_sigterm(s3, bucket, installed, tmp_path):
    units = installed / "systemd"
    mount_unit = units / "os2g-mount@.service"
    agent_unit = units / "os2g-agent.service"
    if subprocess.run(["which", "systemd-analyze"], capture_output=True).returncode == 0:
        instance = units / "os2g-mount@it.service"
        instance.write_text(mount_unit.read_text())
        r = subprocess.run(["systemd-analyze", "verify", "--man=no", str(instance), str(agent_unit)],
                           capture_output=True, text=True, timeout=60)
        instance.unlink()
        assert r.returncode == 0 and "ignoring" not in r.stderr, r.stderr
    assert unit_lines(agent_unit, "CPUAffinity"), "the agent is pinned"
    assert unit_lines(mount_unit, "EnvironmentFile") == ["/etc/os2g/%i.env"]

    # the env file as a user writes it from the example, credentials included
    mnt = tmp_path / "mnt"
    env_file = tmp_path / "it.env"
    example = (ROOT / "mount-scripts/mount.env.example").read_text()
    values = {"OS2G_SOURCE": f"{bucket}/train/c0", "OS2G_MOUNTPOINT": str(mnt),
              "OS2G_OPTIONS": f"--endpoint {s3.endpoint} --metadata-ttl forever --staging-size 32M "
                              f"--staging-dir {tmp_path / 'staging'}",
              **CREDENTIALS_ENV}
    for name, value in values.items():
        example, n = re.subn(rf"^{name}=.*$", f"{name}={value}", example, flags=re.M)
        assert n == 1, f"{name} missing from mount.env.example"
    env_file.write_text(example)

    # ExecStartPre refuses an env file others can read
    check, mkdir = [c.replace("/etc/os2g/%i.env", str(env_file)) for c in unit_lines(mount_unit, "ExecStartPre")]
    env_file.chmod(0o644)
    r = subprocess.run(shlex.split(check), capture_output=True, text=True)
    assert r.returncode != 0 and "chmod 0600" in r.stderr
    env_file.chmod(0o600)
    assert subprocess.run(shlex.split(check)).returncode == 0

    env = dict(l.split("=", 1) for l in env_file.read_text().splitlines() if l and not l.startswith("#"))
    assert subprocess.run(systemd_words(mkdir, env)).returncode == 0
    command = systemd_words(unit_lines(mount_unit, "ExecStart")[0], env)
    assert command[0] == str(installed / "bin/os2g")
    base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen(command, env={**base, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        post = systemd_words(unit_lines(mount_unit, "ExecStartPost")[0], env)
        assert subprocess.run(post, env={**base, **env}, timeout=90).returncode == 0, "ExecStartPost saw the mount"
        read_verified(mnt / "03.jpg", HASHES["train/c0/03.jpg"])
        assert SECRET_KEY not in " ".join(command), "no secret on the command line"
    finally:
        proc.send_signal(signal.SIGTERM)  # systemctl stop
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert not mounted(mnt)


def test_an_agent_and_its_shim_serve_metrics_errors_counted_by_errno_and_warnings_rate_limited(s3, tmp_path):
    name = s3.bucket("it-system-metrics", {"a/one.bin": payload(300_000, 1), "a/two.bin": payload(5000, 2)})
    agent_port = free_port(2)
    shim_port = agent_port + 1
    sock = tmp_path / "agent.sock"
    agent_log = tmp_path / "agent.log"
    agent = subprocess.Popen([OS2G, "agent", "--listen", f"unix:{sock}", "--endpoint", s3.endpoint,
                              "--staging-dir", str(tmp_path / "staging"), "--metrics-port", f"127.0.0.1:{agent_port}",
                              "--log-file", str(agent_log), "--retries", "1"],
                             env={**os.environ, **CREDENTIALS_ENV}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    shim_log = tmp_path / "shim.log"
    shim = None
    try:
        wait_for(lambda: agent_log.exists() and "agent listening" in agent_log.read_text(), "the agent")
        shim = subprocess.Popen([OS2G, "mount", name, str(mnt), "--agent", f"unix:{sock}", "--metadata-ttl", "forever",
                                 "--metrics-port", f"127.0.0.1:{shim_port}", "--log-file", str(shim_log)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")})
        wait_for(lambda: mounted(mnt) and shim_log.exists() and " mounted " in shim_log.read_text(), "the mount")
        read_verified(mnt / "a/one.bin", sha256(payload(300_000, 1)))
        os.stat(mnt / "a/two.bin")
        # a new version of the object after it was listed: its reads fail with EIO, never old or mixed bytes
        s3.client.put_object(Bucket=name, Key="a/two.bin", Body=payload(5000, 3))
        failures = 0
        for _ in range(20):
            try:
                with open(mnt / "a/two.bin", "rb") as f:
                    f.read()
            except OSError as e:
                assert e.errno == 5
                failures += 1
        assert failures == 20

        shim_metrics = scrape(shim_port)
        assert shim_metrics[("os2g_bytes_served_total", ())] == 300_000
        assert shim_metrics[("os2g_errors_total", (("errno", "EIO"),))] >= 20
        assert not any(n.startswith("os2g_gets") for n, _ in shim_metrics), "the shim sends no GET"
        agent_metrics = scrape(agent_port)
        labels = (("mount", "mount-1"), ("source", f"{name}/"))
        assert agent_metrics[("os2g_gets_total", labels)] >= 2
        assert agent_metrics[("os2g_get_seconds_count", labels)] == agent_metrics[("os2g_gets_total", labels)]
        assert agent_metrics[("os2g_staging_used_bytes", labels)] > 0

        # 20 failed reads: a handful of warning lines, the rest left out and said so
        warnings = [l for l in shim_log.read_text().splitlines() if "WARN" in l and "two.bin" in l]
        assert 1 <= len(warnings) <= 5, warnings
        assert "left out" in warnings[-1]

        # the agent's series for that mount go with its shim
        shim.send_signal(signal.SIGTERM)
        assert shim.wait(60) == 0
        wait_for(lambda: ("os2g_gets_total", labels) not in scrape(agent_port), "the agent to drop the mount's series")
    finally:
        if shim and shim.poll() is None:
            shim.send_signal(signal.SIGTERM)
            shim.wait(60)
        agent.send_signal(signal.SIGTERM)
        agent.wait(60)


def test_an_aot_cache_is_recorded_by_a_clean_mount_built_apart_and_used_by_the_next(s3, tmp_path):
    """The launcher's AOT cache, on by default in ~/.cache/os2g: the first mount records what it loads, a
    later start builds the cache, the next mount starts from it; a refused mount's recording is dropped,
    another build's cache goes; the bytes are the same either way."""
    s3.bucket("it-aot", {"data/a.bin": payload(3_000_000, 71)})
    home = tmp_path / "home"
    cache_dir = home / ".cache" / "os2g"
    cache_dir.mkdir(parents=True)
    (cache_dir / "os2g-1-1.aot").write_bytes(b"another build's")
    env = {k: v for k, v in os.environ.items() if k not in ("OS2G_AOT_CACHE", "XDG_CACHE_HOME")}
    env.update(CREDENTIALS_ENV, HOME=str(home))

    def recordings():
        return sorted(p.name.split(".aot.")[1] for p in cache_dir.glob("*.aot.config*"))

    refused = subprocess.run([OS2G, "mount", "it-aot", str(tmp_path / "missing"), "--endpoint", s3.endpoint],
                             capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 2 and "does not exist" in refused.stderr
    assert not any(r.endswith(".kept") for r in recordings()), "a refused mount marks no recording kept"

    def mount_and_read():
        mnt = tmp_path / "mnt"
        mnt.mkdir(exist_ok=True)
        log = open(tmp_path / "mount.log", "w+")
        proc = subprocess.Popen([OS2G, "mount", "it-aot", str(mnt), "--endpoint", s3.endpoint,
                                 "--staging-dir", str(tmp_path / "staging")], stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 90
        while not mounted(mnt):
            assert proc.poll() is None and time.time() < deadline, (tmp_path / "mount.log").read_text()
            time.sleep(0.05)
        assert sha256((mnt / "data/a.bin").read_bytes()) == sha256(payload(3_000_000, 71))
        mapped = str(cache_dir) in Path(f"/proc/{proc.pid}/maps").read_text()  # the launcher execs the JVM
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, (tmp_path / "mount.log").read_text()
        return (tmp_path / "mount.log").read_text(), mapped, proc.pid

    _, mapped, pid = mount_and_read()
    assert not mapped
    assert recordings() == [f"config.{pid}", f"config.{pid}.kept"], "the refused mount's recording dropped at this start"
    subprocess.run([OS2G, "--version"], env=env, check=True, capture_output=True)  # builds it, in the background
    deadline = time.time() + 120
    def built():
        return [p for p in cache_dir.glob("*.aot") if p.name != "os2g-1-1.aot"]

    while not built() and time.time() < deadline:
        time.sleep(0.2)
    (cache,) = built()
    deadline = time.time() + 10
    while recordings() and time.time() < deadline:
        time.sleep(0.1)
    assert recordings() == [], "the configuration goes once the cache is built"
    log, mapped, _ = mount_and_read()
    assert mapped, "the JVM maps the cache"
    assert "[aot]" not in log and "AOTConfiguration" not in log, "the cache is used quietly"
    assert list(cache_dir.iterdir()) == [cache], "another build's cache went"
