"""Prints, per scenario and system, claim p50/p99 µs and tasks/s (medians of the repetitions), one column per invocation; usage: summarize-queue.py FILE.json..."""
import json,sys,statistics as st,glob,collections
def qsum(files):
    out=collections.defaultdict(list)
    for f in files:
        d=json.load(open(f))
        for r in d['runs']:
            if r['kind']!='queue' or r.get('chaos') or r['arrival']!='backlog': continue
            name=r['system'] if r['system']!='booblik' else f"bk {r['pick']} pool{r['pool']} {r['pool_connection']}"
            out[(r['workers'],r['work_ms'],name,f)].append((r['claim_latency_us']['p50'],r['claim_latency_us']['p99'],r['tasks_per_s'],r.get('lost_race_pct') or 0))
    return out
files=sys.argv[1:]
o=qsum(files)
keys=sorted(set((w,wm,n) for (w,wm,n,f) in o))
for (w,wm,n) in keys:
    cells=[]
    for f in files:
        v=o.get((w,wm,n,f))
        if not v: cells.append("-"); continue
        cells.append("%4.0f/%5.0f/%6.0f" % (st.median(x[0] for x in v), st.median(x[1] for x in v), st.median(x[2] for x in v)))
    print(f"{w:2d}w {wm}ms {n:32s} " + " | ".join(cells))
