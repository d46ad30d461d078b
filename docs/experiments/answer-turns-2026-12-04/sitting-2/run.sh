#!/bin/bash
# A/B/C: main (3e32ca1), new (turns, answerer polled first), new2 (turns, applier then answerer).
for round in 1 2 3; do
  for v in main new new2; do
    echo "=== round $round $v $(date +%T)"
    /tmp/bin/booblik-load-$v produce --produce-clients raw --acks written,forced --record-bytes 128 \
      --records-per-batch 10 --in-flight 16,1 --producers 1 --repeats 3 --baseline-tcp-mib 16 \
      --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab2/r$round-$v.txt 2>&1
    /tmp/bin/booblik-load-$v e2e --e2e-rates 1000 --e2e-clients raw --e2e-duration-ms 1000 --baseline-tcp-mib 16 \
      --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab2/e$round-$v.txt 2>&1
  done
done
echo ALL DONE
