# shellcheck shell=bash
# Helpers shared by the compose check scripts (sourced, not run).
#
# Everything talks to the demo from the host, the way a user would: `docker-compose port` to
# find a published port, curl to GET a sample's /stats, jq to read the JSON.

# Named limits (seconds) for the waits below; the checks override none of them silently.
readonly HTTP_TIMEOUT_S=5
readonly POLL_EVERY_S=0.5

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
# The message also goes to $BOOBLIK_CHECK_FAILURE_FILE when set (check.sh, check-cluster.sh), so the
# teardown can repeat it last, after the services' logs: CI keeps only the tail of long output.
fail() {
  log "FAIL: $*"
  if [ -n "${BOOBLIK_CHECK_FAILURE_FILE:-}" ]; then printf '%s\n' "$*" >>"$BOOBLIK_CHECK_FAILURE_FILE"; fi
  exit 1
}

# `docker compose` (plugin) when present, else standalone `docker-compose`. The project name
# and file come from COMPOSE_PROJECT_NAME and COMPOSE_FILE, exported by check.sh.
compose() {
  if docker compose version >/dev/null 2>&1; then
    docker compose "$@"
  elif command -v docker-compose >/dev/null 2>&1; then
    docker-compose "$@"
  else
    fail "neither 'docker compose' nor 'docker-compose' is installed"
  fi
}

# curl and jq, installed from the distribution only when missing (CI machines run as root).
need_tools() {
  local missing=()
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  command -v jq >/dev/null 2>&1 || missing+=(jq)
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 || fail "missing ${missing[*]} and no apt-get to install them"
  log "installing ${missing[*]}"
  if ! { apt-get update -qq >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
    fail "cannot install ${missing[*]}"
  fi
}

# host:port where <service>'s container port <port> is published (it changes on restart).
published() {
  local service=$1 port=$2 addr
  addr=$(compose port "$service" "$port" 2>/dev/null | tail -n 1 | tr -d '\r')
  [ -n "$addr" ] && [ "${addr##*:}" != 0 ] || return 1
  printf '%s\n' "$addr"
}

# The JSON of GET /stats of <service> (stats served on container port 8080), or failure.
stats() {
  local service=$1 addr
  addr=$(published "$service" 8080) || return 1
  curl -fsS --max-time "$HTTP_TIMEOUT_S" "http://$addr/stats"
}

# stats_field <service> <jq filter>: one value from the service's stats ("null" when absent).
stats_field() {
  local json
  json=$(stats "$1") || return 1
  jq -r "$2" <<<"$json"
}

# wait_until <seconds> <description> <command…>: retries the command until it succeeds.
wait_until() {
  local limit_s=$1 what=$2 deadline
  shift 2
  deadline=$((SECONDS + limit_s))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${limit_s}s waiting for: $what"
    sleep "$POLL_EVERY_S"
  done
}

# Integer comparison helpers for wait_until.
stats_gt() { local v; v=$(stats_field "$1" "$2") && [ "$v" != null ] && [ "$v" -gt "$3" ]; }

# A /24 (as its first three octets) for the demo network that no Docker network on this engine
# overlaps: two checks, or a check and a running demo, never fight over the subnet.
free_net_prefix() {
  local subnets
  subnets=$(docker network ls -q | xargs -r docker network inspect \
    --format '{{range .IPAM.Config}}{{.Subnet}} {{end}}' 2>/dev/null | tr -s ' \n' ' ')
  python3 - "$subnets" <<'PY'
import ipaddress, random, sys
taken = [ipaddress.ip_network(s, strict=False) for s in sys.argv[1].split() if s]
for third in random.sample(range(16, 250), 234):
    candidate = ipaddress.ip_network(f"172.29.{third}.0/24")
    if not any(candidate.overlaps(t) for t in taken if t.version == 4):
        print(f"172.29.{third}")
        break
else:
    sys.exit("no free 172.29.x.0/24 subnet")
PY
}

# The id of <service>'s container (running or not).
container_of() { compose ps -q "$1" | head -n 1; }

# Exit code of <service>'s finished container, or "running".
exit_code_of() {
  local id
  id=$(container_of "$1")
  [ -n "$id" ] || return 1
  docker inspect -f '{{if .State.Running}}running{{else}}{{.State.ExitCode}}{{end}}' "$id"
}
