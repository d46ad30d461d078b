#!/usr/bin/env bash
# Profile `cluster` of the compose demo, checked from the host: the events samples on a 3-node
# NATS JetStream cluster, one of whose nodes is SIGKILLed mid-run. Always tears its project down.
#
#   samples/compose/check-cluster.sh     # needs the image (samples/compose/build-image.sh)
#
# Asserts: three NATS nodes answer /healthz and elect a meta leader; the publisher, one follow
# consumer per partition and the projection make progress on R3 streams; the node leading
# partition 0's stream is killed with SIGKILL (`docker kill`, no clean shutdown); writes to
# partition 0 resume and consumer-0 reads on past the kill; once the publisher is stopped, every
# consumer and the projection catch up with the end of every stream; and a replay of the streams
# (`js-replay`) agrees with them: the same records per partition, every record the publisher saw
# acknowledged is in the log, no order violation, no skipped offset.
#
# Its own compose project, a free subnet and engine-picked host ports, like check.sh; on failure
# it prints the services' state and logs. Environment (optional): BOOBLIK_IMAGE (default
# booblik:dev), BOOBLIK_NET_PREFIX.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=samples/compose/lib.sh
. "$here/lib.sh"

readonly NODES=(nats-0 nats-1 nats-2)
readonly CONSUMERS=(js-consumer-0 js-consumer-1 js-consumer-2)
readonly SAMPLES=(js-publisher "${CONSUMERS[@]}" js-projection)
readonly STREAM_0=BOOBLIK-events-P0
readonly CLUSTER_WITHIN_S=60   # nodes up, meta leader elected
readonly START_WITHIN_S=90     # first records through every consumer (includes container start)
readonly PROGRESS_WITHIN_S=30  # a counter must move within this
# Writes resumed after the kill: measured 4.1–8.4 s for a stream's leader election on 127.0.0.1
# (docs/jetstream.md, "Failover, measured"), plus the publisher's retry; generous for CI.
readonly FAILOVER_WITHIN_S=60
readonly CATCH_UP_WITHIN_S=60  # every reader at every stream's end once the publisher stopped
readonly RUN_AFTER_KILL_S=15   # the publisher keeps going at least this long after the kill

started=$SECONDS
export COMPOSE_FILE=$repo/docker-compose.yml
export COMPOSE_PROJECT_NAME=${BOOBLIK_CHECK_PROJECT:-booblik-cluster-$(date +%s)-$$}
export BOOBLIK_IMAGE=${BOOBLIK_IMAGE:-booblik:dev}
for port_var in BOOBLIK_NATS_0_PORT BOOBLIK_NATS_1_PORT BOOBLIK_NATS_2_PORT \
  BOOBLIK_NATS_0_MONITOR_PORT BOOBLIK_NATS_1_MONITOR_PORT BOOBLIK_NATS_2_MONITOR_PORT \
  BOOBLIK_JS_PUBLISHER_PORT BOOBLIK_JS_CONSUMER_0_PORT BOOBLIK_JS_CONSUMER_1_PORT \
  BOOBLIK_JS_CONSUMER_2_PORT BOOBLIK_JS_PROJECTION_PORT; do
  export "$port_var="
done
export BOOBLIK_PUBLISH_RATE=${BOOBLIK_PUBLISH_RATE:-100}

docker info >/dev/null 2>&1 || fail "no Docker engine reachable"
need_tools
docker image inspect "$BOOBLIK_IMAGE" >/dev/null 2>&1 \
  || fail "image $BOOBLIK_IMAGE is missing: run samples/compose/build-image.sh"
docker run --rm "$BOOBLIK_IMAGE" /nats-server --version >/dev/null 2>&1 \
  || fail "image $BOOBLIK_IMAGE has no /nats-server: build it on a machine with nats-server installed"
BOOBLIK_NET_PREFIX=${BOOBLIK_NET_PREFIX:-$(free_net_prefix)}
export BOOBLIK_NET_PREFIX

teardown() {
  local status=$?
  trap - EXIT INT TERM
  if [ "$status" -ne 0 ]; then
    log "--- services ---"
    compose --profile cluster ps >&2 || true
    log "--- last log lines ---"
    compose --profile cluster logs --no-color --tail=40 >&2 || true
  fi
  log "tearing down $COMPOSE_PROJECT_NAME (down -v)"
  compose --profile cluster --profile cluster-replay down -v --remove-orphans --timeout 5 \
    >/dev/null 2>&1 || log "WARNING: down -v failed for $COMPOSE_PROJECT_NAME"
  if [ "$status" -eq 0 ]; then
    log "PASS: cluster checks in $((SECONDS - started)) s"
  else
    log "FAILED (exit $status) after $((SECONDS - started)) s"
  fi
  exit "$status"
}
trap teardown EXIT
trap 'exit 130' INT TERM

# Host addresses, looked up once per service (`compose port` takes about a second here, far too
# slow inside the polls below; no container of this check is restarted, so they do not change).
declare -A addr_of
# remember <service> <container port>: in this shell, not in a $(…) subshell.
remember() { addr_of[$1]=$(published "$1" "$2") || fail "$1 publishes no port $2"; }
addr() { [ -n "${addr_of[$1]:-}" ] && echo "${addr_of[$1]}"; }
# The monitoring JSON of node <service> at <path> (its port 8222), or failure.
monitor() {
  local at
  at=$(addr "$1") || return 1
  curl -fsS --max-time "$HTTP_TIMEOUT_S" "http://$at$2"
}
# Like lib.sh's stats/stats_field/stats_gt, through the cached addresses.
stats() {
  local at
  at=$(addr "$1") || return 1
  curl -fsS --max-time "$HTTP_TIMEOUT_S" "http://$at/stats"
}
stats_field() {
  local json
  json=$(stats "$1") || return 1
  jq -r "$2" <<<"$json"
}
stats_gt() { local v; v=$(stats_field "$1" "$2") && [ "$v" != null ] && [ "$v" -gt "$3" ]; }
healthy() { [ "$(monitor "$1" /healthz | jq -r .status)" = ok ]; }
meta_leader_known() { [ "$(monitor "$1" /jsz | jq -r '.meta_cluster.leader // ""')" != "" ]; }
# The streams of `events` as node <service> sees them: name, leader, last sequence.
streams_of() { monitor "$1" '/jsz?streams=true' | jq -c '[.account_details[]?.stream_detail[]? | {name, leader: .cluster.leader, last: .state.last_seq}]'; }

log "cluster: project $COMPOSE_PROJECT_NAME, image $BOOBLIK_IMAGE, network $BOOBLIK_NET_PREFIX.0/24"
compose --profile cluster up -d "${NODES[@]}" >&2
for node in "${NODES[@]}"; do remember "$node" 8222; done
for node in "${NODES[@]}"; do
  wait_until "$CLUSTER_WITHIN_S" "$node to answer /healthz" healthy "$node"
done
wait_until "$CLUSTER_WITHIN_S" "the cluster to elect a meta leader" meta_leader_known nats-0
log "cluster: 3 nodes healthy, meta leader $(monitor nats-0 /jsz | jq -r .meta_cluster.leader)"

compose --profile cluster up -d "${SAMPLES[@]}" >&2
for sample in "${SAMPLES[@]}"; do remember "$sample" 8080; done
for consumer in "${CONSUMERS[@]}"; do
  wait_until "$START_WITHIN_S" "$consumer to handle records" stats_gt "$consumer" .records 0
done
wait_until "$PROGRESS_WITHIN_S" "the projection to fold events" stats_gt js-projection .events 0
log "publisher: $(stats js-publisher | jq -c '{sent, failed, per_partition}')"

# --- SIGKILL of the node leading partition 0's stream ---
leader_of_0() { streams_of nats-0 | jq -r --arg s "$STREAM_0" '.[] | select(.name == $s) | .leader // ""'; }
leader_known() { [ -n "$(leader_of_0)" ]; }
wait_until "$PROGRESS_WITHIN_S" "$STREAM_0 to have a leader" leader_known
victim=$(leader_of_0)
case " ${NODES[*]} " in *" $victim "*) ;; *) fail "$STREAM_0's leader '$victim' is not one of ${NODES[*]}" ;; esac
sent_0=$(stats_field js-publisher '.per_partition["0"] // 0')
read_0=$(stats_field js-consumer-0 .records)
compose --profile cluster kill -s SIGKILL "$victim" >&2
killed_at=$SECONDS
log "killed $victim (leader of $STREAM_0) with SIGKILL; partition 0: $sent_0 acknowledged, $read_0 read"
live=()
for node in "${NODES[@]}"; do [ "$node" = "$victim" ] || live+=("$node"); done

# The write outage: partition 0's acknowledged count stops growing (its stream has no leader)
# and grows again (a new leader); polled every 0.2 s, from the kill to the first growth after a
# pause of at least 1 s. Appends in flight at the kill may still be acknowledged first.
now_ms() { date +%s%3N; }
kill_ms=$(now_ms)
prev=$sent_0 paused_ms="" outage_ms=""
while [ -z "$outage_ms" ]; do
  [ $(($(now_ms) - kill_ms)) -lt $((FAILOVER_WITHIN_S * 1000)) ] \
    || fail "writes to partition 0 did not pause and resume within ${FAILOVER_WITHIN_S}s of the kill"
  value=$(stats_field js-publisher '.per_partition["0"] // 0') || value=$prev
  if [ "$value" -gt "$prev" ]; then
    if [ -n "$paused_ms" ] && [ $(($(now_ms) - paused_ms)) -ge 1000 ]; then
      outage_ms=$(($(now_ms) - kill_ms))
    fi
    paused_ms="" prev=$value
  elif [ -z "$paused_ms" ]; then
    paused_ms=$(now_ms)
  fi
  sleep 0.2
done
log "write outage: partition 0's writes resumed $outage_ms ms after the kill (at $value acknowledged)"
wait_until "$FAILOVER_WITHIN_S" "js-consumer-0 to read on after the failover" \
  stats_gt js-consumer-0 .records $((read_0 + value - sent_0))
log "js-consumer-0 reads on: $(stats js-consumer-0 | jq -c '{records, next_offset, lag}')"
while [ $((SECONDS - killed_at)) -lt "$RUN_AFTER_KILL_S" ]; do sleep 1; done

# --- stop the writer; every reader catches up with every stream's end ---
compose --profile cluster stop js-publisher >&2
line=$(compose --profile cluster logs --no-color js-publisher | grep 'publisher stopped' | tail -n 1)
[ -n "$line" ] || fail "the publisher did not report its totals when stopped"
acknowledged=$(sed -n 's/.*[^_]sent=\([0-9]*\).*/\1/p' <<<"$line")
[ -n "$acknowledged" ] || fail "no sent= in: $line"
log "publisher stopped: $(sed "s/.*publisher stopped *//" <<<"$line")"

# The end of partition <p> (its stream's last sequence + 1), as the live nodes see it.
end_of() {
  local p=$1 node last best=-1
  for node in "${live[@]}"; do
    last=$(streams_of "$node" | jq -r --arg s "BOOBLIK-events-P$p" '.[] | select(.name == $s) | .last') || continue
    [ -n "$last" ] && [ "$last" -gt "$best" ] && best=$last
  done
  [ "$best" -ge 0 ] || return 1 # no live node answered
  echo $((best + 1))
}
caught_up() {
  local p end
  for p in 0 1 2; do
    end=$(end_of "$p") || return 1
    [ "$(stats_field "js-consumer-$p" ".next_offset[\"$p\"] // 0")" -ge "$end" ] || return 1
    [ "$(stats_field js-projection ".next_offset[\"$p\"] // 0")" -ge "$end" ] || return 1
  done
}
wait_until "$CATCH_UP_WITHIN_S" "every consumer and the projection to reach every stream's end" caught_up
log "caught up: ends p0 $(end_of 0), p1 $(end_of 1), p2 $(end_of 2)"

# --- a replay of the streams agrees with everyone ---
replay=$(compose --profile cluster --profile cluster-replay run --rm --no-deps -T js-replay 2>/dev/null) \
  || fail "js-replay failed (order violated or offsets skipped?)"
records=$(jq -r .records <<<"$replay")
[ "$(jq -r .violations <<<"$replay")" = 0 ] || fail "the replay found violations: $(jq -c . <<<"$replay")"
[ "$records" -ge "$acknowledged" ] \
  || fail "the replay read $records records, fewer than the $acknowledged the publisher saw acknowledged"
for p in 0 1 2; do
  replayed=$(jq -r ".per_partition[\"$p\"].records" <<<"$replay")
  json=$(stats "js-consumer-$p")
  handled=$(jq -r ".per_partition[\"$p\"]" <<<"$json")
  [ "$handled" = "$replayed" ] || fail "js-consumer-$p handled $handled records, the replay read $replayed"
  for counter in order_violations skipped_offsets; do
    [ "$(jq -r ".$counter" <<<"$json")" = 0 ] || fail "js-consumer-$p reports $counter=$(jq -r ".$counter" <<<"$json")"
  done
done
projection=$(stats js-projection)
[ "$(jq -r .events <<<"$projection")" = "$records" ] \
  || fail "the projection folded $(jq -r .events <<<"$projection") events, the replay read $records"
[ "$(jq -r .violations <<<"$projection")" = 0 ] || fail "the projection reports violations"
log "replay: $records records ($acknowledged acknowledged) = every consumer's records = the projection's events"
log "cluster: OK"
