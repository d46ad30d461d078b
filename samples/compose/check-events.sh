#!/usr/bin/env bash
# Events layer of the demo, checked from the host (run by check.sh, which sets the project).
#
# Asserts: the broker becomes healthy through its own healthcheck and serves metrics; the
# publisher sends; each follow consumer handles records and keeps going, with no order violation
# or skipped offset; the projection folds events; and consumer-0, killed with SIGKILL (no chance
# to save anything on the way out) and started again, resumes from its saved offset: at or after
# the last checkpoint it reported before the kill (so at most one batch behind the `next_offset`
# it reported), and never from the beginning.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=samples/compose/lib.sh
. "$here/lib.sh"

readonly START_WITHIN_S=120   # first records through every consumer (includes container start)
readonly PROGRESS_WITHIN_S=30 # a counter must move within this
readonly CONSUMERS="consumer-0 consumer-1 consumer-2"

log "events: up (broker, publisher, consumers, projection)"
compose up -d >&2

health=$(docker inspect -f '{{.State.Health.Status}}' "$(container_of broker)")
[ "$health" = healthy ] || fail "broker health is '$health' (compose waited for service_healthy)"
log "broker is healthy (its own 'booblik-broker health' check)"

for consumer in $CONSUMERS; do
  wait_until "$START_WITHIN_S" "$consumer to handle records" stats_gt "$consumer" .records 0
done
wait_until "$PROGRESS_WITHIN_S" "the publisher to send" stats_gt publisher .sent 0
wait_until "$PROGRESS_WITHIN_S" "the projection to fold events" stats_gt projection .events 0

for consumer in $CONSUMERS; do
  records=$(stats_field "$consumer" .records)
  wait_until "$PROGRESS_WITHIN_S" "$consumer to make progress past $records records" \
    stats_gt "$consumer" .records "$records"
  json=$(stats "$consumer")
  for counter in order_violations skipped_offsets; do
    value=$(jq -r ".$counter" <<<"$json")
    [ "$value" = 0 ] || fail "$consumer reports $counter=$value"
  done
  log "$consumer: $(jq -c '{records, next_offset, checkpointed}' <<<"$json")"
done
log "publisher: $(stats publisher | jq -c '{sent, failed, per_partition}')"
log "projection: $(stats projection | jq -c '{phase, events, users, violations}')"
violations=$(stats_field projection .violations)
[ "$violations" = 0 ] || fail "projection reports $violations violations"

metrics=$(curl -fsS --max-time "$HTTP_TIMEOUT_S" "http://$(published broker 9464)/metrics")
grep -q '^booblik_' <<<"$metrics" || fail "broker /metrics has no booblik_ series"
log "broker /metrics serves $(grep -c '^booblik_' <<<"$metrics") booblik_ samples"

# --- a consumer killed mid-stream resumes from its saved position ---
consumer="consumer-0"
partition=0
wait_until "$PROGRESS_WITHIN_S" "$consumer to checkpoint" \
  stats_gt "$consumer" ".checkpointed[\"$partition\"]" 0
before=$(stats "$consumer")
next_before=$(jq -r ".next_offset[\"$partition\"]" <<<"$before")
checkpointed_before=$(jq -r ".checkpointed[\"$partition\"]" <<<"$before")
log "$consumer before the kill: next_offset=$next_before checkpointed=$checkpointed_before"
compose kill -s SIGKILL "$consumer" >&2
code=$(exit_code_of "$consumer")
[ "$code" != running ] || fail "$consumer still runs after SIGKILL"
compose start "$consumer" >&2
# Known once the partition has started (before that the key is absent, not null).
resumed_known() { [ "$(stats_field "$consumer" ".resumed_from | has(\"$partition\")")" = true ]; }
wait_until "$START_WITHIN_S" "$consumer to serve stats again" resumed_known
resumed=$(stats_field "$consumer" ".resumed_from[\"$partition\"]")
[ "$resumed" != null ] || fail "$consumer resumed_from is null: its saved offset was lost"
[ "$resumed" -gt 0 ] || fail "$consumer resumed from $resumed: it restarted from the beginning"
[ "$resumed" -ge "$checkpointed_before" ] \
  || fail "$consumer resumed from $resumed, before its last reported checkpoint $checkpointed_before"
log "$consumer resumed from $resumed (before the kill: next_offset $next_before, last checkpoint seen $checkpointed_before)"
wait_until "$PROGRESS_WITHIN_S" "$consumer to read past $next_before after the restart" \
  stats_gt "$consumer" ".next_offset[\"$partition\"]" "$next_before"
log "events: OK"
