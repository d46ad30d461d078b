#!/bin/sh
# Pooled 3-worker claims at 0 and 5 ms of work only (no peers), 5 repetitions, builds alternated.
# Rounds 1-4 ran with the defaults; run-3w-reversed.sh ran rounds 5-8 with the build after first.
#   BEFORE=/tmp/bin/booblik-load-main AFTER=/tmp/bin/booblik-load-zero sh run-3w.sh
set -eu
for i in ${ROUNDS:-1 2 3 4}; do
  for b in ${ORDER:-before after}; do
    if [ $b = before ]; then BIN=$BEFORE; else BIN=$AFTER; fi
    "$BIN" queue --workers 3 --pool 3 --pick random --arrival backlog --work-ms 0,5 --tasks 1000 \
      --repetitions 5 --no-extra-queue-runs --pool-connection own \
      --json q3w-$b-$i.json > q3w-$b-$i.md
  done
done
