"""The Kubernetes CSI conformance suite (csi-sanity v5.4.0) against `os2g csi`, through the stand-in
controller that a node-only driver needs (../shared/tools/csi-sanity/README.md), with real mounts of
the test's S3 server: every Node and Identity case passes, and nothing is left mounted or running."""

import os
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import ACCESS_KEY, OS2G, ROOT, SECRET_KEY, Tally

# what a node-only plugin without stage/unstage or expansion may leave skipped, and nothing else
ALLOWED_SKIPS = ("NodeStageVolume not supported", "NodeUnstageVolume not supported", "NodeExpandVolume not supported",
                 "GroupControllerService not supported")


def sanity_tools():
    """The directory holding csi-sanity and static-controller: $OS2G_CSI_SANITY_DIR, else this machine's shared tools."""
    for d in (os.environ.get("OS2G_CSI_SANITY_DIR"), ROOT.parent / "shared/tools/csi-sanity", "/work/shared/tools/csi-sanity"):
        if d and (Path(d) / "csi-sanity").exists():
            return Path(d)
    raise AssertionError("csi-sanity not found: set OS2G_CSI_SANITY_DIR to the directory with csi-sanity and static-controller")


def wait_for(path, proc, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not Path(path).exists():
        assert proc.poll() is None and time.monotonic() < deadline, f"{what} did not start"
        time.sleep(0.05)


def test_csi_sanity_node_and_identity_pass_with_nothing_left(s3, tmp_path):
    tools = sanity_tools()
    s3.bucket("it-csi-sanity", {"hello.txt": b"hello from the bucket\n"})
    (tmp_path / "params.yaml").write_text(f"bucket: it-csi-sanity\nendpoint: {s3.endpoint}\nmetadata_ttl: \"60\"\n")
    (tmp_path / "secrets.yaml").write_text(
        f"NodePublishVolumeSecret:\n  access_key_id: {ACCESS_KEY}\n  secret_access_key: {SECRET_KEY}\n")
    secrets = Path(tempfile.mkdtemp(prefix="os2g-csi-secrets-", dir="/dev/shm"))
    staging = Path(tempfile.mkdtemp(prefix="os2g-csi-staging-", dir="/dev/shm"))
    state = tmp_path / "state"
    plugin_log = open(tmp_path / "plugin.log", "w+")
    plugin = subprocess.Popen([OS2G, "csi", "--endpoint", f"unix://{tmp_path}/csi.sock", "--node-id", "sanity-node",
                               "--state-dir", str(state), "--secrets-dir", str(secrets), "--staging-dir", str(staging)],
                              stdout=plugin_log, stderr=subprocess.STDOUT)
    controller = None
    try:
        wait_for(tmp_path / "csi.sock", plugin, "os2g csi")
        controller = subprocess.Popen([tools / "static-controller", "--endpoint", f"unix://{tmp_path}/ctrl.sock",
                                       "--node-proxy", f"unix://{tmp_path}/csi.sock"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(tmp_path / "ctrl.sock", controller, "static-controller")
        junit = tmp_path / "junit.xml"
        run = subprocess.run([tools / "csi-sanity", f"--csi.endpoint=unix://{tmp_path}/ctrl.sock",
                              "--ginkgo.skip=\\[Controller Server\\]", "--ginkgo.no-color",
                              f"--csi.mountdir={tmp_path}/mnt", f"--csi.stagingdir={tmp_path}/stg",
                              f"--csi.testvolumeparameters={tmp_path}/params.yaml", f"--csi.secrets={tmp_path}/secrets.yaml",
                              f"--csi.junitfile={junit}"], capture_output=True, text=True, timeout=300)
        plugin_log.seek(0)
        logged = plugin_log.read()
        assert run.returncode == 0, run.stdout[-6000:] + "\n--- plugin:\n" + logged[-3000:]

        passed, skipped = [], []
        for case in ET.parse(junit).getroot().iter("testcase"):
            assert case.find("failure") is None and case.find("error") is None, case.get("name")
            skip = case.find("skipped")
            if skip is None:
                passed.append(case.get("name"))
            elif "[Controller Server]" not in case.get("name"):
                skipped.append(case.get("name"))
                assert any(reason in (skip.get("message") or "") for reason in ALLOWED_SKIPS), \
                    f"{case.get('name')} skipped: {skip.get('message')}"
        assert len(passed) >= 17, passed
        assert any("NodeGetVolumeStats" in name for name in passed), passed
        assert any("should work" in name for name in passed), "the full publish/stats/unpublish round trip ran"
        Tally.add("csi-sanity cases passed", len(passed))
    finally:
        for p in (controller, plugin):
            if p is not None:
                p.terminate()
                p.wait(30)
        plugin_log.close()

    # every publish was unpublished: no mount, no mount process, no state, credentials or staging left
    with open("/proc/self/mountinfo") as f:
        left = [line.split(" ")[4] for line in f if str(tmp_path) in line.split(" ")[4]]
    assert left == [], left
    assert not state.exists() or [p for p in state.iterdir() if p.is_dir()] == []
    assert list(secrets.iterdir()) == [] and list(staging.iterdir()) == []
    running = subprocess.run(["pgrep", "-f", str(staging)], capture_output=True, text=True).stdout.split()
    assert running == [], f"mount processes left: {running}"
    secrets.rmdir()
    staging.rmdir()
