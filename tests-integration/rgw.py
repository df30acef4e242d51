"""Ceph's S3 gateway (radosgw) on loopback, for the end-to-end checks against an S3 implementation other
than S3Proxy: one monitor, one OSD on memstore (objects in memory) and one radosgw, in a temporary
directory, no authentication inside the cluster; started in a few seconds, stopped with the fixture.
Debian's ceph-mon, ceph-osd and radosgw (tests-integration/run.sh installs them)."""

import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ACCESS_KEY = "rgw-access"
SECRET_KEY = "rgw-secret"

CONF = """[global]
fsid = {fsid}
mon host = v1:127.0.0.1:{mon_port}
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
osd objectstore = memstore
memstore device bytes = 2147483648
osd data = {dir}/osd.$id
mon data = {dir}/mon.$id
run dir = {dir}/run
admin socket = {dir}/run/$name.asok
log file = {dir}/$name.log
ms bind ipv6 = false
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw data = {dir}/rgw
"""


class RadosGateway:
    def __init__(self, mon_port, rgw_port):
        self.dir = Path(tempfile.mkdtemp(prefix="os2g-rgw-"))
        self.endpoint = f"http://127.0.0.1:{rgw_port}"
        self.daemons = []
        for d in ("mon.a", "osd.0", "run", "rgw"):
            (self.dir / d).mkdir()
        fsid = str(uuid.uuid4())
        self.conf = str(self.dir / "ceph.conf")
        Path(self.conf).write_text(CONF.format(fsid=fsid, mon_port=mon_port, rgw_port=rgw_port, dir=self.dir))
        try:
            self.run("monmaptool", "--create", "--add", "a", f"v1:127.0.0.1:{mon_port}", "--fsid", fsid, str(self.dir / "monmap"))
            self.run("ceph-mon", "-c", self.conf, "--mkfs", "-i", "a", "--monmap", str(self.dir / "monmap"))
            self.daemon("ceph-mon", "-c", self.conf, "-i", "a", "-f")
            # the OSD's uuid given to both, as a manual deployment does: an OSD that made up its own at
            # --mkfs is refused at boot now and then ("wrong fsid") by a monitor that recorded another
            osd_uuid = str(uuid.uuid4())
            self.run("ceph", "-c", self.conf, "--connect-timeout", "30", "osd", "create", osd_uuid)
            self.run("ceph-osd", "-c", self.conf, "-i", "0", "--mkfs", "--osd-uuid", osd_uuid)
            self.daemon("ceph-osd", "-c", self.conf, "-i", "0", "-f")
            self.daemon("radosgw", "-c", self.conf, "-n", "client.rgw.a", "-f")
            self.wait_for_gateway()
            self.run("radosgw-admin", "-c", self.conf, "user", "create", "--uid=os2g", "--display-name=os2g",
                     f"--access-key={ACCESS_KEY}", f"--secret-key={SECRET_KEY}")
        except Exception:
            self.stop()
            raise

    def run(self, *command):
        r = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed: {r.stderr[-2000:]}")
        return r.stdout

    def daemon(self, *command):
        self.daemons.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def wait_for_gateway(self):
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/", timeout=5) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            for d, log in zip(self.daemons, ("mon.a", "osd.0", "client.rgw.a")):
                if d.poll() is not None:
                    text = (self.dir / f"{log}.log").read_text(errors="replace") if (self.dir / f"{log}.log").exists() else ""
                    errors = "\n".join(line for line in text.splitlines() if " -1 " in line)[-1500:]  # ceph's error lines
                    raise RuntimeError(f"{d.args[0]} exited with {d.returncode}: {errors or text[-1500:]}")
            if time.time() > deadline:
                raise RuntimeError(f"radosgw did not answer within 120 s; logs in {self.dir}")
            time.sleep(0.2)

    def stop_gateway(self):
        """Stops radosgw alone (the cluster stays): its clients see refused connections."""
        gateway = self.daemons.pop()
        gateway.send_signal(signal.SIGTERM)
        gateway.wait(30)

    def start_gateway(self):
        self.daemon("radosgw", "-c", self.conf, "-n", "client.rgw.a", "-f")
        self.wait_for_gateway()

    def stop(self):
        for d in reversed(self.daemons):
            d.send_signal(signal.SIGTERM)
        for d in reversed(self.daemons):
            try:
                d.wait(30)
            except subprocess.TimeoutExpired:
                d.kill()
                d.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


def start(free_port):
    """A gateway on two free ports (`free_port(2)` gives the first), with a fresh cluster for each try:
    now and then the monitor refuses the memstore OSD at its boot ("wrong fsid"), which is Ceph's
    start-up, not what a test checks."""
    for attempt in range(3):
        ports = free_port(2)
        try:
            return RadosGateway(mon_port=ports, rgw_port=ports + 1)
        except RuntimeError as e:
            if attempt == 2 or "wrong fsid" not in str(e):
                raise
