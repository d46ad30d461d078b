#!/bin/bash
# Same binary: inline appends on (committed) vs off (BOOBLIK_EXP_NO_INLINE: every append through the writer thread)
for round in 1 2 3; do
  for v in inline writer; do
    echo "=== round $round $v $(date +%T)"
    if [ $v = writer ]; then export BOOBLIK_EXP_NO_INLINE=1; else unset BOOBLIK_EXP_NO_INLINE; fi
    /tmp/bin/booblik-load-exp2 queue --workers 3,30 --pick random --arrival backlog --work-ms 0 --pool 256 \
      --pool-connection shared --repetitions 3 --no-extra-queue-runs --peers redis-fsync \
      --baseline-round-trips 1000 --baseline-tcp-mib 16 --baseline-fsyncs 100 > /tmp/ab9/r$round-$v.md 2>/tmp/ab9/r$round-$v.err
  done
done
echo ALL DONE
