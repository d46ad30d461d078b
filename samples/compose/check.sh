#!/usr/bin/env bash
# Checks the compose demo from the outside, the way a user sees it, and always tears it down.
#
#   samples/compose/check.sh            # builds the image, then every check below
#
# 1. check-events.sh  broker healthy; publisher, consumers and projection make progress; a
#                     consumer killed with SIGKILL resumes from its saved offset, not from 0.
# 2. check-queue.sh   profile `queue`: the worker holding a task is killed; after the lease the
#                     task is won by another worker; every task completes; queue-verify passes.
# 3. check-relay.sh   profile `relay`: the relay mirrors `events` into `mirror`; SIGKILLed, it
#                     restarts at its saved positions (not 0) and catches up; duplicates counted.
# 4. check-load.sh    profile `load`: `booblik-load queue` against the compose broker exits 0.
#
# Each run uses its own compose project name, a free subnet and host ports picked by the engine,
# so it can run beside a live demo or another check. On any failure it prints the services'
# state and logs, and exits non-zero; on every exit it runs `down -v` (volumes included).
#
# Environment (optional): BOOBLIK_IMAGE (default booblik:dev), BOOBLIK_SKIP_BUILD=1 (use the
# image as it is), BOOBLIK_CHECK_LOAD=0 (skip step 3), BOOBLIK_NET_PREFIX (e.g. 172.29.77).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=samples/compose/lib.sh
. "$here/lib.sh"

started=$SECONDS
export COMPOSE_FILE=$repo/docker-compose.yml
export COMPOSE_PROJECT_NAME=${BOOBLIK_CHECK_PROJECT:-booblik-check-$(date +%s)-$$}
export BOOBLIK_IMAGE=${BOOBLIK_IMAGE:-booblik:dev}
# Host ports: empty means "the engine picks one"; the checks ask `compose port`.
for port_var in BOOBLIK_BROKER_PORT BOOBLIK_METRICS_PORT BOOBLIK_PUBLISHER_PORT \
  BOOBLIK_CONSUMER_0_PORT BOOBLIK_CONSUMER_1_PORT BOOBLIK_CONSUMER_2_PORT \
  BOOBLIK_PROJECTION_PORT BOOBLIK_WORKER_1_PORT BOOBLIK_WORKER_2_PORT BOOBLIK_WORKER_3_PORT \
  BOOBLIK_RELAY_PORT; do
  export "$port_var="
done
# Queue timing for the check: a short lease so the takeover comes quickly, work long enough to
# catch a worker in the middle of a task.
export BOOBLIK_LEASE_MS=${BOOBLIK_LEASE_MS:-3000}
export BOOBLIK_WORK_MS=${BOOBLIK_WORK_MS:-2500}
export BOOBLIK_TASK_COUNT=${BOOBLIK_TASK_COUNT:-12}
export BOOBLIK_TASK_INTERVAL_MS=${BOOBLIK_TASK_INTERVAL_MS:-300}

docker info >/dev/null 2>&1 || fail "no Docker engine reachable"
need_tools
if [ "${BOOBLIK_SKIP_BUILD:-0}" != 1 ]; then
  "$here/build-image.sh"
fi
docker image inspect "$BOOBLIK_IMAGE" >/dev/null 2>&1 \
  || fail "image $BOOBLIK_IMAGE is missing: run samples/compose/build-image.sh"
BOOBLIK_NET_PREFIX=${BOOBLIK_NET_PREFIX:-$(free_net_prefix)}
export BOOBLIK_NET_PREFIX

teardown() {
  local status=$?
  trap - EXIT INT TERM
  if [ "$status" -ne 0 ]; then
    log "--- services ---"
    compose --profile queue --profile load --profile relay ps >&2 || true
    log "--- last log lines ---"
    compose --profile queue --profile load --profile relay logs --no-color --tail=40 >&2 || true
  fi
  log "tearing down $COMPOSE_PROJECT_NAME (down -v)"
  compose --profile queue --profile queue-verify --profile load --profile relay \
    down -v --remove-orphans --timeout 5 >/dev/null 2>&1 \
    || log "WARNING: down -v failed for $COMPOSE_PROJECT_NAME"
  if [ "$status" -eq 0 ]; then
    log "PASS: compose checks in $((SECONDS - started)) s"
  else
    log "FAILED (exit $status) after $((SECONDS - started)) s"
    if [ -s "$BOOBLIK_CHECK_FAILURE_FILE" ]; then
      log "FAILED because: $(tr '\n' ' ' <"$BOOBLIK_CHECK_FAILURE_FILE")"
    fi
  fi
  rm -f "$BOOBLIK_CHECK_FAILURE_FILE"
  exit "$status"
}
BOOBLIK_CHECK_FAILURE_FILE=$(mktemp)
export BOOBLIK_CHECK_FAILURE_FILE
trap teardown EXIT
trap 'exit 130' INT TERM

log "project $COMPOSE_PROJECT_NAME, image $BOOBLIK_IMAGE, network $BOOBLIK_NET_PREFIX.0/24"
"$here/check-events.sh"
"$here/check-queue.sh"
"$here/check-relay.sh"
if [ "${BOOBLIK_CHECK_LOAD:-1}" != 0 ]; then
  "$here/check-load.sh"
else
  log "BOOBLIK_CHECK_LOAD=0: the load profile was NOT run"
fi
