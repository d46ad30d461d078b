#!/bin/sh
# Issue 16's and issue 19's target invocations, three rounds, one binary, on a fresh
# 2-vCPU AMD EPYC VM (2026-12-06, third host of the day). Run from this folder:
#   BIN=/tmp/bin/booblik-load-main sh run.sh
set -eu
BIN=${BIN:-../../../target/release/booblik-load}
for i in 1 2 3; do
  "$BIN" produce --produce-clients raw --acks written,forced --record-bytes 128 \
    --records-per-batch 10 --in-flight 1,16 --producers 1 --repeats 3 \
    --baseline-tcp-mib 64 --json one-connection-$i.json > one-connection-$i.md 2> one-connection-$i.err
  "$BIN" produce --record-bytes 1024 --acks written --producers 4 \
    --produce-clients producer --repeats 3 --baseline-tcp-mib 256 \
    --json large-records-$i.json > large-records-$i.md 2> large-records-$i.err
  "$BIN" queue --peers redis-fsync,postgres --arrival backlog --work-ms 0,5 \
    --no-extra-queue-runs --pool-connection own,shared --json queue-$i.json > queue-$i.md 2> queue-$i.err
done
