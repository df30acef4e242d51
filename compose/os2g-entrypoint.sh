#!/usr/bin/env bash
# The demo's os2g container: an agent (the S3 client, on the cores in OS2G_AGENT_CPUS) and a mount of
# S3_BUCKET at OS2G_MOUNTPOINT through it, which holds no credentials. Stays until SIGTERM (docker
# compose down), then unmounts and stops the agent.
#   env: S3_ENDPOINT S3_BUCKET AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
#        [OS2G_MOUNTPOINT=/mnt/os2g] [OS2G_STAGING_SIZE=1G] [OS2G_AGENT_CPUS=0] [OS2G_RUN_DIR=/run/os2g]
#        [OS2G=os2g] [OS2G_METRICS_PORT=9464 (the mount; the agent uses the next port)]
set -euo pipefail
: "${S3_ENDPOINT:?}" "${S3_BUCKET:?}"
os2g="${OS2G:-os2g}"
mnt="${OS2G_MOUNTPOINT:-/mnt/os2g}"
run="${OS2G_RUN_DIR:-/run/os2g}"
metrics="${OS2G_METRICS_PORT:-9464}"
mkdir -p "$mnt" "$run"

pin=()
if [ -n "${OS2G_AGENT_CPUS:-}" ] && command -v taskset >/dev/null; then
  pin=(taskset -c "$OS2G_AGENT_CPUS")
fi
ncpus=$(( $(tr ',' '\n' <<<"${OS2G_AGENT_CPUS:-0}" | wc -l) ))
"${pin[@]}" "$os2g" agent --listen "unix:$run/agent.sock" --endpoint "$S3_ENDPOINT" --cpus "$ncpus" \
  --staging-dir "$run/staging" --metrics-port "0.0.0.0:$((metrics + 1))" &
agent=$!
for _ in $(seq 600); do [ -S "$run/agent.sock" ] && break; kill -0 "$agent" 2>/dev/null || exit 1; sleep 0.1; done

# the mount holds no credentials: the agent has them
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY -u AWS_SESSION_TOKEN \
  "$os2g" mount "$S3_BUCKET" "$mnt" --agent "unix:$run/agent.sock" --metadata-ttl forever \
  --staging-size "${OS2G_STAGING_SIZE:-1G}" -o allow_other --metrics-port "0.0.0.0:$metrics" &
mount=$!

stop() {
  kill -TERM "$mount" 2>/dev/null || true
  wait "$mount" 2>/dev/null || true
  kill -TERM "$agent" 2>/dev/null || true
  wait "$agent" 2>/dev/null || true
  exit 0
}
trap stop TERM INT
# either process ending ends the container (docker restarts it per its policy)
wait -n "$agent" "$mount" || true
stop
