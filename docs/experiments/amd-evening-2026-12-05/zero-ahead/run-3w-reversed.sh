#!/bin/sh
# run-3w.sh again, the build after first in each round (an order check), rounds 5-8.
set -eu
for i in 5 6 7 8; do
  for b in after before; do
    if [ $b = before ]; then BIN=$BEFORE; else BIN=$AFTER; fi
    "$BIN" queue --workers 3 --pool 3 --pick random --arrival backlog --work-ms 0,5 --tasks 1000 \
      --repetitions 5 --no-extra-queue-runs --pool-connection own \
      --json q3w-$b-$i.json > q3w-$b-$i.md
  done
done
