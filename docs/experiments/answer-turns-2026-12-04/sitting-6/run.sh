#!/bin/bash
# main (3e32ca1), new (e874611: answerer first), new5 (applier first, yield before an inline fsync)
for round in 1 2 3; do
  for v in main new new5; do
    echo "=== round $round $v $(date +%T)"
    /tmp/bin/booblik-load-$v produce --produce-clients raw --acks written,forced --record-bytes 128 \
      --records-per-batch 10 --in-flight 16,1 --producers 1 --repeats 3 --baseline-tcp-mib 16 \
      --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab6/r$round-$v.txt 2>&1
    /tmp/bin/booblik-load-$v produce --record-bytes 1024,100 --acks written --producers 4,1 --produce-clients producer \
      --repeats 3 --baseline-tcp-mib 16 --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab6/p$round-$v.txt 2>&1
  done
done
echo ALL DONE
