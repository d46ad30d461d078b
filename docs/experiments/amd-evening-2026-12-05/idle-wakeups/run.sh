#!/bin/sh
# Is a claim after 5 ms of idleness slow because the vCPUs halt? The pooled 3-worker claims at
# 0 and 5 ms of work, alone and beside two spinning processes at nice 19 (which take only the
# cycles nothing else wants, so the vCPUs never halt), alternated, 3 rounds.
#   BIN=/tmp/bin/booblik-load-zero sh run.sh
set -eu
for i in 1 2 3; do
  for c in alone spinning; do
    if [ $c = spinning ]; then
      nice -n 19 sh -c 'while :; do :; done' & S1=$!
      nice -n 19 sh -c 'while :; do :; done' & S2=$!
    fi
    "$BIN" queue --workers 3 --pool 3 --pick random --arrival backlog --work-ms 0,5 --tasks 1000 \
      --repetitions 5 --no-extra-queue-runs --pool-connection own --peers redis-fsync \
      --json q3w-$c-$i.json > q3w-$c-$i.md
    if [ $c = spinning ]; then kill $S1 $S2; fi
  done
done
