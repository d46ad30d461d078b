#!/bin/bash
# Third host (Intel Xeon, fast loopback and fsync), 2026-12-05: MAPPED against FILE, alternated round by round, one binary (46612ce)
set -u
B=/tmp/bin/booblik-load-46612ce
O=/tmp/sit3/modes
cd $O
for r in 1 2 3; do
  for wm in mapped file; do
    echo "$(date -u +%H:%M:%S) round $r $wm one-connection" >> times.txt
    $B produce --write-mode $wm --produce-clients raw --acks written,forced --record-bytes 128 --records-per-batch 10 --in-flight 1,16 --producers 1 --repeats 3 --baseline-tcp-mib 64 --json one-connection-$wm-$r.json > one-connection-$wm-$r.md 2>/dev/null
    echo "$(date -u +%H:%M:%S) round $r $wm large-records" >> times.txt
    $B produce --write-mode $wm --record-bytes 1024 --acks written --producers 4 --produce-clients producer --repeats 3 --baseline-tcp-mib 256 --json large-$wm-$r.json > large-$wm-$r.md 2>/dev/null
    echo "$(date -u +%H:%M:%S) round $r $wm queue" >> times.txt
    $B queue --write-mode $wm --peers redis-fsync,postgres --arrival backlog --work-ms 0,5 --no-extra-queue-runs --pool-connection own,shared --json queue-$wm-$r.json > queue-$wm-$r.md 2>queue-$wm-$r.err
  done
done
echo "$(date -u +%H:%M:%S) end" >> times.txt
