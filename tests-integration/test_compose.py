"""The docker compose demo without Docker (none runs where the tests do): the compose file parses and
everything it builds from and runs exists; the scripts its containers run — seeding, the os2g
container's entrypoint (agent + mount), the trainer — run here against S3Proxy and a real mount."""

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import CREDENTIALS_ENV, OS2G, ROOT, free_port, mounted

COMPOSE = ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose():
    return yaml.safe_load(COMPOSE.read_text())


def dockerfile_copies(path):
    """(sources, destinations) of a Dockerfile's COPY lines that copy from the build context."""
    sources, destinations = [], []
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            sources += words[1:-1]
            destinations.append((words[1:-1], words[-1]))
    return sources, destinations


def test_the_compose_file_has_the_demo_and_everything_it_refers_to_exists(compose):
    services = compose["services"]
    assert {"minio", "minio1", "minio2", "minio3", "minio4", "seed", "os2g", "trainer"} <= set(services)
    assert services["minio"]["profiles"] == ["single"]
    assert all(services[f"minio{i}"]["profiles"] == ["distributed"] for i in range(1, 5))
    assert "http://minio{1...4}/data{1...2}" in services["minio1"]["command"], "erasure coding over 4 nodes x 2 drives"
    assert re.search(r"^COMPOSE_PROFILES=single$", (ROOT / ".env").read_text(), re.M), "one node unless asked"

    os2g = services["os2g"]
    assert os2g["devices"] == ["/dev/fuse"] and "SYS_ADMIN" in os2g["cap_add"]
    (share,) = os2g["volumes"]
    assert share["target"] == "/mnt/os2g" and share["bind"]["propagation"] == "rshared"
    assert services["trainer"]["volumes"][0]["source"] == share["source"]
    assert services["trainer"]["depends_on"]["os2g"]["condition"] == "service_healthy"
    assert os2g["depends_on"]["seed"]["condition"] == "service_completed_successfully"

    in_images = {}
    for name, service in services.items():
        build = service.get("build")
        if not build:
            continue
        dockerfile = ROOT / build["context"] / build["dockerfile"]
        assert dockerfile.is_file(), f"{name}: {dockerfile}"
        sources, destinations = dockerfile_copies(dockerfile)
        for source in sources:
            assert (ROOT / build["context"] / source).exists(), f"{dockerfile.name} copies {source}, which is missing"
        for copied, dest in destinations:
            for source in copied:
                target = dest + Path(source).name if dest.endswith("/") else dest
                in_images.setdefault(service["image"], set()).add(target)
    # what the containers run is in their images
    assert "/app/seed.py" in in_images[services["seed"]["image"]] and services["seed"]["command"][1] == "/app/seed.py"
    assert services["trainer"]["image"] == services["seed"]["image"]
    assert services["trainer"]["command"][1] == "/app/train.py"
    assert "/opt/os2g/os2g-entrypoint.sh" in in_images["os2g"]
    assert 'ENTRYPOINT ["/opt/os2g/os2g-entrypoint.sh"]' in (ROOT / "compose/os2g.Dockerfile").read_text()


def test_seed_entrypoint_and_trainer_run_the_demo_outside_docker(s3, tmp_path):
    env = {**os.environ, **CREDENTIALS_ENV}
    seed = [sys.executable, str(ROOT / "compose/seed.py"), s3.endpoint, "it-compose", "--prefix", "imagefolder/train",
            "--classes", "3", "--per-class", "16"]
    r = subprocess.run(seed, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "48 images in 3 classes (48 uploaded now" in r.stdout
    r = subprocess.run(seed, env=env, capture_output=True, text=True, timeout=300)
    assert "(0 uploaded now" in r.stdout, "a second run uploads nothing"

    mnt, run = tmp_path / "mnt", tmp_path / "run"
    port = free_port(2)  # the mount's metrics port and, next to it, the agent's
    log = open(tmp_path / "os2g.log", "w+")
    container = subprocess.Popen([str(ROOT / "compose/os2g-entrypoint.sh")], stdout=log, stderr=subprocess.STDOUT,
                                 env={**env, "S3_ENDPOINT": s3.endpoint, "S3_BUCKET": "it-compose", "OS2G": OS2G,
                                      "OS2G_MOUNTPOINT": str(mnt), "OS2G_RUN_DIR": str(run), "OS2G_AGENT_CPUS": "0",
                                      "OS2G_STAGING_SIZE": "64M", "OS2G_METRICS_PORT": str(port)})
    try:
        deadline = time.time() + 120
        while not mounted(mnt):  # the compose healthcheck: mountpoint -q
            assert container.poll() is None and time.time() < deadline, log.seek(0) or log.read()
            time.sleep(0.1)
        # the mount holds no credentials: they stayed with the agent
        shim = subprocess.run(["pgrep", "-f", f"mount it-compose {mnt}"], capture_output=True, text=True).stdout.split()
        assert shim and CREDENTIALS_ENV["AWS_SECRET_ACCESS_KEY"] not in Path(f"/proc/{shim[0]}/environ").read_text()

        train = subprocess.run(["/usr/bin/python3", str(ROOT / "compose/train.py"), str(mnt / "imagefolder/train"),
                                "--epochs", "2", "--workers", "2"], capture_output=True, text=True, timeout=600,
                               env={**os.environ, "PYTHONPATH": str(ROOT / "clients/python")})
        assert train.returncode == 0, train.stdout + train.stderr
        assert "48 images in 3 classes" in train.stdout and "hints on" in train.stdout, train.stdout
        assert re.search(r"epoch 2: 48 samples in [\d.]+ s = \d+ samples/s", train.stdout), train.stdout

        for p in (port, port + 1):  # the mount's and the agent's metrics
            with urllib.request.urlopen(f"http://127.0.0.1:{p}/metrics", timeout=10) as r:
                assert b"os2g_" in r.read()
    finally:
        container.send_signal(signal.SIGTERM)  # docker compose down
        rc = container.wait(60)
    assert rc == 0
    assert not mounted(mnt)
    assert not (run / "agent.sock").exists()
