#!/usr/bin/env bash
# Relay profile of the demo, checked from the host (run by check.sh, which sets the project).
#
# Asserts: the relay mirrors `events` into `mirror` (its /stats `relayed` grows while the
# publisher writes); SIGKILLed and started again, every partition starts at or after the
# position the killed run had saved (never from 0); the new run catches up to the source end it
# saw at start; the duplicates it counted are at most one batch (500) per partition.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=samples/compose/lib.sh
. "$here/lib.sh"

readonly START_WITHIN_S=90
readonly CATCH_UP_WITHIN_S=60
readonly BATCH_RECORDS=500 # the relay's default --batch-max-records

log "relay: up (profile relay), events -> mirror"
compose --profile relay up -d relay >&2
wait_until "$START_WITHIN_S" "the relay to relay records" stats_gt relay .relayed 0
container=$(container_of relay)
before=$(stats relay)
docker kill --signal KILL "$container" >/dev/null
log "relay: SIGKILLed at positions $(jq -c '[.partitions[].position]' <<<"$before")"
docker start "$container" >/dev/null
wait_until "$START_WITHIN_S" "the restarted relay to serve stats" stats relay >/dev/null
after=$(stats relay)
for p in $(jq -r '.partitions[].partition' <<<"$after"); do
  saved=$(jq -r ".partitions[$p].position" <<<"$before")
  started=$(jq -r ".partitions[$p].started_at" <<<"$after")
  [ "$started" -ge "$saved" ] && [ "$started" -gt 0 ] \
    || fail "partition $p restarted at $started, before the position $saved the killed run saved"
done
caught_up() {
  local json
  json=$(stats relay) || return 1
  jq -e 'all(.partitions[]; .position >= .end_at_start)' <<<"$json" >/dev/null
}
wait_until "$CATCH_UP_WITHIN_S" "the restarted relay to catch up" caught_up
final=$(stats relay)
jq -e "all(.partitions[]; .duplicates <= $BATCH_RECORDS)" <<<"$final" >/dev/null \
  || fail "a partition counted more than one batch of duplicates: $final"
log "relay: restarted at $(jq -c '[.partitions[].started_at]' <<<"$final"), caught up; duplicates counted $(jq -c '[.partitions[].duplicates]' <<<"$final")"
compose --profile relay stop relay >/dev/null 2>&1 || true
log "relay: OK"
