#!/bin/bash
# Same binary: off (committed behaviour) vs on (BOOBLIK_EXP_OFF_THREAD: fsync via the writer when >1 in flight)
for round in 1 2 3; do
  for v in off on; do
    echo "=== round $round $v $(date +%T)"
    if [ $v = on ]; then export BOOBLIK_EXP_OFF_THREAD=1; else unset BOOBLIK_EXP_OFF_THREAD; fi
    /tmp/bin/booblik-load-exp produce --produce-clients raw --acks forced,written --record-bytes 128 \
      --records-per-batch 10 --in-flight 16,1 --producers 1 --repeats 3 --baseline-tcp-mib 16 \
      --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab8/r$round-$v.txt 2>&1
  done
done
echo ALL DONE
