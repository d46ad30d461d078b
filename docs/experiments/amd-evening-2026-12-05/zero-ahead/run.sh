#!/bin/sh
# Zeroing ahead of FORCED batches: the build before (main at 9ded560) and after, alternated
# round by round; issue 16's one-connection command and issue 19's target invocation.
#   BEFORE=/tmp/bin/booblik-load-main AFTER=/tmp/bin/booblik-load-zero sh run.sh
set -eu
for i in 1 2 3; do
  for b in before after; do
    if [ $b = before ]; then BIN=$BEFORE; else BIN=$AFTER; fi
    "$BIN" produce --produce-clients raw --acks written,forced --record-bytes 128 \
      --records-per-batch 10 --in-flight 1,16 --producers 1 --repeats 3 \
      --baseline-tcp-mib 64 --json one-connection-$b-$i.json > one-connection-$b-$i.md
  done
  for b in before after; do
    if [ $b = before ]; then BIN=$BEFORE; else BIN=$AFTER; fi
    "$BIN" queue --peers redis-fsync,postgres --arrival backlog --work-ms 0,5 \
      --no-extra-queue-runs --pool-connection own,shared --json queue-$b-$i.json > queue-$b-$i.md
  done
done
