#!/bin/bash
# Large records, issue 16's target command: main (3e32ca1) vs new (e874611), alternated, five rounds.
for round in 1 2 3 4 5; do
  for v in main new; do
    echo "=== round $round $v $(date +%T)"
    /tmp/bin/booblik-load-$v produce --record-bytes 1024 --acks written --producers 4 --produce-clients producer \
      --repeats 3 --baseline-tcp-mib 256 > /tmp/ab11/p$round-$v.txt 2>&1
  done
done
echo ALL DONE
