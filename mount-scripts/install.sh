#!/usr/bin/env bash
# Installs os2g as a system tool: the launcher and its jars, the mount(8) helper (mount -t fuse.os2g and
# fstab lines), and the systemd units; with --with-s3-server also the S3 server of `os2g demo` (S3Proxy,
# which a mount never uses).
#   mount-scripts/install.sh [--prefix DIR] [--sbin-dir DIR] [--systemd-dir DIR|--no-systemd] [--with-s3-server]
# Defaults: --prefix /usr/local (bin/os2g, lib/os2g/), --sbin-dir /sbin (mount(8) looks for
# mount.fuse.os2g only there), --systemd-dir /etc/systemd/system. Builds the jar first when it is
# missing or older than the sources. Run it again to upgrade.
set -euo pipefail
here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
root="$(cd "$here/.." && pwd)"

prefix=/usr/local; sbin=/sbin; systemd=/etc/systemd/system; s3_server=""
while [ $# -gt 0 ]; do
  case "$1" in
    --with-s3-server) s3_server=1 ;;
    --prefix) prefix="$2"; shift ;;
    --sbin-dir) sbin="$2"; shift ;;
    --systemd-dir) systemd="$2"; shift ;;
    --no-systemd) systemd="" ;;
    *) echo "usage: $0 [--prefix DIR] [--sbin-dir DIR] [--systemd-dir DIR|--no-systemd] [--with-s3-server]" >&2; exit 2 ;;
  esac
  shift
done
prefix="$(mkdir -p "$prefix" && cd "$prefix" && pwd)"

"$root/os2g" --version >/dev/null   # builds target/os2g.jar when needed; fails with its own line
lib="$prefix/lib/os2g"
install -d "$lib/lib" "$prefix/bin" "$sbin"
rm -f "$lib/lib/"*.jar
install -m 0644 "$root/target/lib/"*.jar "$lib/lib/"
install -m 0644 "$root/target/os2g.jar" "$lib/os2g.jar"
install -m 0755 "$root/os2g" "$lib/os2g"
rm -rf "$lib/s3-server-lib" "$lib/os2g-s3-server.jar"
if [ -n "$s3_server" ]; then
  install -d "$lib/s3-server-lib"
  install -m 0644 "$root/target/s3-server-lib/"*.jar "$lib/s3-server-lib/"
  install -m 0644 "$root/target/os2g-s3-server.jar" "$lib/os2g-s3-server.jar"
fi
ln -sfn "$lib/os2g" "$prefix/bin/os2g"

# the helper and the units run the installed launcher by its absolute path: mount(8) and systemd
# do not search /usr/local/bin
sed "s|@OS2G@|$prefix/bin/os2g|" "$here/mount.fuse.os2g" > "$sbin/.mount.fuse.os2g.new"
chmod 0755 "$sbin/.mount.fuse.os2g.new"
mv -f "$sbin/.mount.fuse.os2g.new" "$sbin/mount.fuse.os2g"
echo "installed $prefix/bin/os2g, $sbin/mount.fuse.os2g"

if [ -n "$systemd" ]; then
  install -d "$systemd"
  for unit in os2g-mount@.service os2g-agent.service; do
    sed "s|@OS2G@|$prefix/bin/os2g|" "$here/$unit" > "$systemd/$unit"
    chmod 0644 "$systemd/$unit"
  done
  install -d "$prefix/share/os2g"
  install -m 0644 "$here/mount.env.example" "$here/agent.env.example" "$prefix/share/os2g/"
  echo "installed $systemd/os2g-mount@.service, $systemd/os2g-agent.service (examples of /etc/os2g/*.env in $prefix/share/os2g)"
  if [ "$systemd" = /etc/systemd/system ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload
  fi
fi
