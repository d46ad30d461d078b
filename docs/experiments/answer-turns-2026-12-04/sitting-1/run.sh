#!/bin/bash
# A/B: main (3e32ca1) vs new (turns every 3 frames, answerer polled first), alternated per round.
for round in 1 2 3; do
  for v in main new; do
    echo "=== round $round $v $(date +%T)"
    /tmp/bin/booblik-load-$v produce --produce-clients raw --acks written,forced --record-bytes 128 \
      --records-per-batch 10 --in-flight 16,1 --producers 1 --repeats 3 --baseline-tcp-mib 16 \
      --baseline-round-trips 1000 --baseline-fsyncs 100 --json /tmp/ab/r$round-$v.json > /tmp/ab/r$round-$v.txt 2>&1
  done
done
echo ALL DONE
