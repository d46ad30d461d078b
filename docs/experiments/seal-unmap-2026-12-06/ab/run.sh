#!/bin/sh
# Four builds alternated, three rounds: 01b14bd (old), 8bbe82a (payload buffer per producer),
# 8bbe82a + unmap before the seal's fsync (unmap), 28a5f69 (unmap + a roll without fsync: roll).
# Issue 16's large-record command, 7 runs per invocation (runs 4-7 roll once per partition).
set -e
for round in 1 2 3; do
  for arm in old payload unmap roll; do
    /tmp/bin/booblik-load-$arm produce --record-bytes 1024 --acks written --producers 4 \
      --produce-clients producer --repeats 7 --baseline-tcp-mib 256 --baseline-tcp-store-mib 0 \
      --baseline-page-cache-mib 0 --json $arm-$round.json > $arm-$round.md 2>&1
    echo "$arm $round done $(date +%T)"
  done
done
