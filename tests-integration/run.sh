#!/usr/bin/env bash
# The test command: installs what it needs, runs the JUnit suite (units, S3Proxy components, FUSE
# mounts) with `mvn -B verify`, then the end-to-end suite on real mounts with Python readers.
#   tests-integration/run.sh            everything
#   tests-integration/run.sh -k walk    pass pytest arguments through to the end-to-end suite
set -euo pipefail
root="$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)"
cd "$root"

packages=(fuse3 iproute2 openssl python3 python3-numpy python3-pytest python3-boto3 python3-pip python3-torch python3-torchvision python3-pil python3-prometheus-client python3-yaml zstd gcc libc6-dev maven
          ceph-mon ceph-osd radosgw)  # a second S3 implementation: Ceph's radosgw (test_rgw.py)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing packages: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
fi

if [ -z "${JAVA_HOME:-}" ] || ! "$JAVA_HOME/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; then
  for d in /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*25* /usr/lib/jvm/*; do
    if [ -x "$d/bin/java" ] && "$d/bin/java" -version 2>&1 | grep -qE 'version "(2[5-9]|[3-9][0-9])'; then
      export JAVA_HOME="$d"; break
    fi
  done
fi
[ -n "${JAVA_HOME:-}" ] || { echo "no JDK >= 25 found under /usr/lib/jvm" >&2; exit 1; }
export PATH="$JAVA_HOME/bin:$PATH"
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
[ -e /dev/fuse ] || modprobe fuse 2>/dev/null || true

echo "== JUnit: mvn -B verify (JAVA_HOME=$JAVA_HOME)"
mvn -B -ntp verify

echo "== end-to-end: real mounts, Python readers"
# Debian's interpreter: it has numpy, boto3 and pytest from apt (a python3 earlier on PATH may not)
cd "$root/tests-integration"
/usr/bin/python3 -m pytest -v -p no:cacheprovider --durations=15 --ignore=bench "$@"
