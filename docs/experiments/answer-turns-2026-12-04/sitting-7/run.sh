#!/bin/bash
# main (3e32ca1), new (e874611: answerer first), new2 (applier first)
for round in 1 2 3; do
  for v in main new new2; do
    echo "=== round $round $v $(date +%T)"
    /tmp/bin/booblik-load-$v produce --produce-clients raw --acks written,forced --record-bytes 128 \
      --records-per-batch 10 --in-flight 16,1 --producers 1 --repeats 3 --baseline-tcp-mib 16 \
      --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab7/r$round-$v.txt 2>&1
    /tmp/bin/booblik-load-$v produce --record-bytes 1024,100 --acks written --producers 4,1 --produce-clients producer \
      --repeats 3 --baseline-tcp-mib 16 --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab7/p$round-$v.txt 2>&1
  done
done
echo ALL DONE
