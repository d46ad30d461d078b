#!/bin/bash
O=/tmp/ab; mkdir -p $O
for round in 1 2; do
  for v in cedeb29 rdv; do
    /tmp/bin/booblik-load-$v queue --workers 3,30 --pick rendezvous,random --arrival backlog,trickle --work-ms 0,10 --pool 1 --no-extra-queue-runs --repetitions 3 --baseline-tcp-mib 16 --json $O/$v-$round.json > $O/$v-$round.md 2>/dev/null
    echo "$(date -u +%T) $v $round" >> $O/times.txt
  done
done
