"""Per invocation: pooled 3-worker claim p50 / p99 and Redis-with-fsync's (medians of the repetitions), tasks/s, at 0 and 5 ms of work; usage: summarize.py FILE.json..."""
import json,sys,statistics as st
for f in sys.argv[1:]:
    d=json.load(open(f)); b=d['baseline']; out=[]
    for w in (0,5):
        for s in ('booblik','redis-fsync'):
            rs=[r for r in d['runs'] if r['system']==s and r['work_ms']==w and r['workers']==3 and not r.get('chaos')]
            out.append(f"{w}ms {s[:5]} {st.median(r['claim_latency_us']['p50'] for r in rs):4.0f} / {st.median(r['claim_latency_us']['p99'] for r in rs):5.0f} t {st.median(r['tasks_per_s'] for r in rs):5.0f}")
    print(f"{f:22s} rtt {b['rtt_us_p50']:5.1f} fsync {b['fsync_us_p50']:4.0f} | "+" | ".join(out))
