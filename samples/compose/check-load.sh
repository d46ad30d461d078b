#!/usr/bin/env bash
# Load profile of the demo (run by check.sh): the bounded task-queue experiment of
# `booblik-load queue --broker <compose broker>` runs to the end and exits 0 (it exits non-zero
# when a run breaks a queue invariant). The queue workers are stopped first, so they do not
# claim the experiment's tasks.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=samples/compose/lib.sh
. "$here/lib.sh"

readonly LOAD_WITHIN_S=300 # the run's own bound is BOOBLIK_LOAD_MAX_RUN_S (60 s) plus baseline

compose stop queue-worker-1 queue-worker-2 queue-worker-3 >/dev/null 2>&1 || true
log "load: booblik-load queue against the compose broker"
set +e
# shellcheck disable=SC2016 # "$1" is expanded by the inner shell
report=$(timeout "$LOAD_WITHIN_S" \
  bash -c '. "$1"; compose --profile load run --rm --no-deps -T -e RUST_LOG=warn load' _ "$here/lib.sh")
status=$?
set -e
printf '%s\n' "$report" | sed -n '1,60p' >&2
[ "$status" -eq 0 ] || fail "booblik-load queue exited $status"
log "load: OK"
