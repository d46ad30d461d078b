#!/bin/bash
# Large records and the batching Producer: main (3e32ca1) vs new (e874611), alternated.
for round in 1 2 3; do
  for v in main new; do
    echo "=== round $round $v $(date +%T)"
    /tmp/bin/booblik-load-$v produce --record-bytes 1024,100 --acks written --producers 4,1 --produce-clients producer \
      --repeats 3 --baseline-tcp-mib 256 --baseline-round-trips 1000 --baseline-fsyncs 100 > /tmp/ab5/r$round-$v.txt 2>&1
  done
done
echo ALL DONE
