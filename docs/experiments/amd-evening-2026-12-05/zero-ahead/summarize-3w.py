"""Per invocation: pooled 3-worker claim p50 / p99 (median of its repetitions, min-max) and tasks/s at each work time; usage: summarize-3w.py FILE.json..."""
import json,sys,statistics as st
for f in sys.argv[1:]:
    d=json.load(open(f)); b=d['baseline']; out=[]
    for w in (0,5):
        rs=[r for r in d['runs'] if r['system']=='booblik' and r['work_ms']==w and r['workers']==3 and not r.get('chaos')]
        if not rs: continue
        p50=[r['claim_latency_us']['p50'] for r in rs]; p99=[r['claim_latency_us']['p99'] for r in rs]
        out.append(f"{w}ms p50 {st.median(p50):4.0f} ({min(p50):.0f}-{max(p50):.0f}) p99 {st.median(p99):5.0f} t {st.median(r['tasks_per_s'] for r in rs):5.0f}")
    print(f"{f:22s} rtt {b['rtt_us_p50']:5.1f} fsync {b['fsync_us_p50']:4.0f} | "+" | ".join(out))
