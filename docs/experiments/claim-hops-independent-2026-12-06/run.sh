#!/bin/sh
# Independent workers (--pool 1) and one pool of three (--pool 3), 3 workers, 0 and 5 ms of work,
# hop-probe build of 24d5d14's tree (the broker as at 91a258e), 2026-12-06 ~09:50 UTC:
#   cargo build --release -p booblik-load --features hop-probe
#   BIN=target/release/booblik-load sh run.sh
set -eu
BIN=${BIN:-../../../target/release/booblik-load}
for pool in 1 3; do
  "$BIN" queue --workers 3 --pick random --arrival backlog --work-ms 0,5 --tasks 1000 --pool $pool \
    --repetitions 3 --no-extra-queue-runs --baseline-tcp-mib 64 --baseline-round-trips 3000 \
    --json hop-pool$pool.json > hop-pool$pool.md 2> hop-pool$pool.err
  grep '^HOP' hop-pool$pool.err > hop-pool$pool.hops.tsv
done
