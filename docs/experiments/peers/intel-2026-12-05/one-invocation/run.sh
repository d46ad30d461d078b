#!/bin/bash
# Intel host, 2026-12-05: issue 19's latency targets, both work times in one invocation (cedeb29)
set -u
B=/tmp/bin/booblik-load-cedeb29
O=/tmp/sit2/out
mkdir -p $O
for i in 1 2 3; do
  echo "$(date -u +%H:%M:%S) start work-0-5ms-$i" >> $O/times.txt
  $B queue --peers redis-fsync,postgres --arrival backlog --work-ms 0,5 --no-extra-queue-runs --pool-connection own,shared --json $O/work-0-5ms-$i.json > $O/work-0-5ms-$i.md 2>$O/work-0-5ms-$i.err
done
echo "$(date -u +%H:%M:%S) end" >> $O/times.txt
