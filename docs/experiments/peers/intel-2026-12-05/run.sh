#!/bin/bash
# Intel sitting, 2026-12-05: issue 19 targets and issue 16 targets, release build of main
set -u
B=/tmp/bin/booblik-load-main
O=/tmp/sit/out
mkdir -p $O
cd /tmp/sit
log() { echo "$(date -u +%H:%M:%S) $*" >> $O/times.txt; }
for i in 1 2 3; do
  log "start work-0ms-$i"
  $B queue --peers redis-fsync,postgres --arrival backlog --work-ms 0 --no-extra-queue-runs --pool-connection own,shared --json $O/work-0ms-$i.json > $O/work-0ms-$i.md 2>$O/work-0ms-$i.err
done
for i in 1 2; do
  log "start work-5ms-$i"
  $B queue --peers redis-fsync,postgres --arrival backlog --work-ms 5 --no-extra-queue-runs --pool-connection own,shared --json $O/work-5ms-$i.json > $O/work-5ms-$i.md 2>$O/work-5ms-$i.err
done
for i in 1 2 3; do
  log "start one-connection-$i"
  $B produce --produce-clients raw --acks written,forced --record-bytes 128 --records-per-batch 10 --in-flight 1,16 --producers 1 --repeats 3 --baseline-tcp-mib 64 --json $O/one-connection-$i.json > $O/one-connection-$i.md 2>$O/one-connection-$i.err
done
for i in 1 2 3; do
  log "start large-$i"
  $B produce --record-bytes 1024 --acks written --producers 4 --produce-clients producer --repeats 3 --baseline-tcp-mib 256 --json $O/large-$i.json > $O/large-$i.md 2>$O/large-$i.err
done
log end
