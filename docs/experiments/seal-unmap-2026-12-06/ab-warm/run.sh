#!/bin/sh
# A/B: old (HEAD 01b14bd) vs new (unmap before the seal's fsync + a payload buffer per producer)
set -e
for round in 1 2 3; do
  for arm in old new; do
    /tmp/bin/booblik-load-$arm produce --record-bytes 1024 --acks written --producers 4 \
      --produce-clients producer --repeats 7 --baseline-tcp-mib 256 --baseline-tcp-store-mib 0 \
      --baseline-page-cache-mib 0 --json $arm-$round.json > $arm-$round.md 2>&1
    echo "$arm $round done $(date +%T)"
  done
done
