#!/usr/bin/env bash
# Task-queue profile of the demo, checked from the host (run by check.sh, which sets the project
# and the queue timing: BOOBLIK_LEASE_MS, BOOBLIK_WORK_MS, BOOBLIK_TASK_COUNT).
#
# Asserts: three workers and a submitter start; a worker seen (in its /stats `current_task`)
# to have just started a task is killed with SIGKILL; after its lease lapses another worker wins the
# same task with a new, larger fencing token; every submitted task completes; the submitter
# exited 0; and `queue-verify`, replaying both logs, finds every invariant intact.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=samples/compose/lib.sh
. "$here/lib.sh"

readonly WORKERS=(queue-worker-1 queue-worker-2 queue-worker-3)
readonly START_WITHIN_S=90                                  # workers up, a task in hand
readonly TAKEOVER_WITHIN_S=$((BOOBLIK_LEASE_MS / 1000 + 60)) # the lease, plus a generous margin
readonly DRAIN_WITHIN_S=180                                 # every task completed
readonly VERIFY_EVERY_S=3

log "queue: up the 3 workers (profile queue)"
compose --profile queue up -d "${WORKERS[@]}" >&2

# Worker addresses and containers are looked up once: `compose port` is far too slow to sit
# between seeing a task start and killing its worker.
declare -A stats_url container
for worker in "${WORKERS[@]}"; do
  wait_until "$START_WITHIN_S" "$worker to serve stats" stats "$worker" >/dev/null
  stats_url[$worker]="http://$(published "$worker" 8080)/stats"
  container[$worker]=$(container_of "$worker")
done
log "queue: up the submitter of $BOOBLIK_TASK_COUNT tasks"
compose --profile queue up -d queue-submitter >&2

# --- catch a worker the moment it starts a task, and kill it ---
# A task seen in hand at the first look may be about to finish; one seen to *start* between two
# looks 0.1 s apart has almost all of its BOOBLIK_WORK_MS still to go when the SIGKILL lands.
victim="" task_id="" token=""
declare -A seen
deadline=$((SECONDS + START_WITHIN_S))
while [ -z "$victim" ]; do
  [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${START_WITHIN_S}s waiting for a worker to start a task"
  for worker in "${WORKERS[@]}"; do
    json=$(curl -fsS --max-time "$HTTP_TIMEOUT_S" "${stats_url[$worker]}") || continue
    now=$(jq -r '.current_task.task_id // "none"' <<<"$json")
    if [ -n "${seen[$worker]:-}" ] && [ "$now" != none ] && [ "$now" != "${seen[$worker]}" ]; then
      docker kill --signal KILL "${container[$worker]}" >/dev/null
      victim=$worker
      task_id=$now
      token=$(jq -r .current_task.token <<<"$json")
      break
    fi
    seen[$worker]=$now
  done
  sleep 0.1
done
killed_at=$SECONDS
log "$victim had just started task $task_id (fencing token $token): killed with SIGKILL"

# --- another worker wins the same task once the lease has lapsed ---
new_holder=""
deadline=$((SECONDS + TAKEOVER_WITHIN_S))
while [ -z "$new_holder" ]; do
  [ "$SECONDS" -lt "$deadline" ] \
    || fail "timed out after ${TAKEOVER_WITHIN_S}s waiting for task $task_id to move to another worker"
  for worker in "${WORKERS[@]}"; do
    [ "$worker" != "$victim" ] || continue
    json=$(curl -fsS --max-time "$HTTP_TIMEOUT_S" "${stats_url[$worker]}") || continue
    if [ "$(jq -r .current_task.task_id <<<"$json")" = "$task_id" ]; then
      new_holder=$worker
      new_token=$(jq -r .current_task.token <<<"$json")
      break
    fi
  done
  sleep 0.1
done
[ "$new_token" -gt "$token" ] \
  || fail "task $task_id moved to $new_holder with token $new_token, not above the old $token"
log "task $task_id moved to $new_holder with token $new_token, $((SECONDS - killed_at)) s after the kill (lease ${BOOBLIK_LEASE_MS} ms)"

# --- every task completes; the logs satisfy every invariant ---
verify_out=""
verify_status=0
run_verify() {
  set +e
  verify_out=$(compose --profile queue-verify run --rm --no-deps -T -e RUST_LOG=warn queue-verify 2>/dev/null)
  verify_status=$?
  set -e
}
drained() {
  run_verify
  local completed
  completed=$(jq -r .summary.completed <<<"$verify_out" 2>/dev/null) || return 1
  [ "$completed" = "$BOOBLIK_TASK_COUNT" ] && return 0
  sleep "$VERIFY_EVERY_S"
  return 1
}
wait_until "$DRAIN_WITHIN_S" "all $BOOBLIK_TASK_COUNT tasks to complete (queue-verify summary)" drained
log "queue-verify: $(jq -c '{clean, summary: (.summary | {tasks, completed, never_completed, lost, dead_lettered, expired_leases, fenced_dones, wins, lost_races})}' <<<"$verify_out")"
[ "$verify_status" -eq 0 ] || fail "queue-verify exited $verify_status: $(jq -c .violations <<<"$verify_out")"
[ "$(jq -r .clean <<<"$verify_out")" = true ] || fail "queue-verify is not clean"
[ "$(jq -r .summary.tasks <<<"$verify_out")" = "$BOOBLIK_TASK_COUNT" ] \
  || fail "the tasks log holds $(jq -r .summary.tasks <<<"$verify_out") tasks, expected $BOOBLIK_TASK_COUNT"
expired=$(jq -r .summary.expired_leases <<<"$verify_out")
[ "$expired" -ge 1 ] || fail "the log shows no expired lease, yet a holder was killed"

submitter=$(exit_code_of queue-submitter)
[ "$submitter" = 0 ] || fail "queue-submitter exit status: $submitter"
for worker in "${WORKERS[@]}"; do
  [ "$worker" != "$victim" ] || continue
  log "$worker: $(curl -fsS --max-time "$HTTP_TIMEOUT_S" "${stats_url[$worker]}" | jq -c '{claims, wins, lost_races, completed, leases_lost, extends}')"
done
log "queue: OK"
