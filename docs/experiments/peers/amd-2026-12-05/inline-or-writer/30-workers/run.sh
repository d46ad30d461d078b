#!/bin/bash
# 30 workers, one pool, shared connection, 0 ms: inline (committed) / writer (every append via the writer) / offthread (inline appends, fsync via the writer when >1 in flight)
for round in 1 2 3 4 5; do
  for v in inline writer offthread; do
    echo "=== round $round $v $(date +%T)"
    unset BOOBLIK_EXP_NO_INLINE BOOBLIK_EXP_OFF_THREAD; bin=/tmp/bin/booblik-load-exp2
    [ $v = writer ] && export BOOBLIK_EXP_NO_INLINE=1
    [ $v = offthread ] && { export BOOBLIK_EXP_OFF_THREAD=1; bin=/tmp/bin/booblik-load-exp; }
    $bin queue --workers 30 --pick random --arrival backlog --work-ms 0 --pool 256 \
      --pool-connection shared --repetitions 3 --no-extra-queue-runs --peers redis-fsync \
      --baseline-round-trips 1000 --baseline-tcp-mib 16 --baseline-fsyncs 100 > /tmp/ab10/r$round-$v.md 2>/tmp/ab10/r$round-$v.err
  done
done
echo ALL DONE
