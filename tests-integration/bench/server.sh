# Sourced by run.sh and pairs.sh: starts the S3 server (S3Proxy, filesystem backend, $latency ms on
# every request) on the dataset, seeds it (reused when unchanged), warms it until its JIT is quiet, and
# sets $data, $endpoint, $server (its pid, killed on exit) and $warmed (how it was warmed).
# Needs $root, $here and $latency.

# one dataset for both modes (seeded once, reused); --quick reads a subset of it
small=5000; large=4; tree=20000
data="${OS2G_BENCH_DIR:-/var/tmp/os2g-bench}"
mkdir -p "$data/s3"

server_log="$data/s3-server.log"
# the server with C2 (the launcher's C1-only JIT is chosen for the mount): a long-lived server whose
# requests C2 makes cheaper once warm (1.3 -> 0.9 ms of CPU per 125 KB GET), CPU that on this machine
# is taken from the mounts and the readers; seed.py warms it before anything is measured
OS2G_JAVA_OPTS="-XX:TieredStopAtLevel=4" "$root/os2g" s3-server --dir "$data/s3" --latency-ms "$latency" > "$server_log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 600); do grep -q '^endpoint ' "$server_log" 2>/dev/null && break; sleep 0.1; done
endpoint="$(awk '/^endpoint /{print $2}' "$server_log")"
[ -n "$endpoint" ] || { echo "s3-server did not start: $(cat "$server_log")" >&2; exit 1; }

echo "== seeding s3://bench ($small JPEGs, $large x 256 MiB, $tree tree objects) at $endpoint, then warming the server"
warmed="$(/usr/bin/python3 "$here/seed.py" "$endpoint" bench "$small" "$large" 256 "$tree" "$server")"
echo "$warmed"
