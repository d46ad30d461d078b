#!/bin/bash
# Third host, 2026-12-05: MAPPED mode before (46612ce) and after FORCED batches go with pwrite; builds alternated round by round
set -u
O=/tmp/sit3/ab
cd $O
for r in 1 2 3; do
  for b in 46612ce pwrite; do
    B=/tmp/bin/booblik-load-$b
    echo "$(date -u +%H:%M:%S) round $r $b one-connection" >> times.txt
    $B produce --produce-clients raw --acks written,forced --record-bytes 128 --records-per-batch 10 --in-flight 1,16 --producers 1 --repeats 3 --baseline-tcp-mib 64 --json one-connection-$b-$r.json > one-connection-$b-$r.md 2>/dev/null
    echo "$(date -u +%H:%M:%S) round $r $b queue" >> times.txt
    $B queue --peers redis-fsync,postgres --arrival backlog --work-ms 0,5 --no-extra-queue-runs --pool-connection own,shared --json queue-$b-$r.json > queue-$b-$r.md 2>queue-$b-$r.err
  done
done
echo "$(date -u +%H:%M:%S) end" >> times.txt
