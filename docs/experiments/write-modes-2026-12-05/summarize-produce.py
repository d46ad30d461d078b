"""Prints each produce invocation's baseline and the median (min-max) records/s per (ack, in flight, record size); usage: summarize-produce.py FILE.json..."""
import json,sys,statistics as st
for f in sys.argv[1:]:
    d=json.load(open(f)); b=d['baseline']; g={}
    for r in d['runs']:
        g.setdefault((r['ack'],r['in_flight'],r['record_bytes']),[]).append(r)
    parts=[]
    for k,v in sorted(g.items()):
        rs=[x['records_per_s'] for x in v]; w=[x['wire_mb_s'] for x in v]
        parts.append(f"{k[0][0]}{k[1]}/{k[2]}B {st.median(rs):9.0f} ({min(rs):.0f}-{max(rs):.0f}) wire {st.median(w):6.0f}")
    extra=""
    if ('forced',16,128) in g:
        extra=" ratio %.2f" % (st.median(x['records_per_s'] for x in g[('forced',16,128)])/st.median(x['records_per_s'] for x in g[('forced',1,128)]))
    print(f"{f:28s} rtt {b['rtt_us_p50']:5.1f} fsync {b['fsync_us_p50']:5.0f} tcp {b['tcp_mb_s']:5.0f} pc {b['page_cache_write_mb_s']:5.0f} | " + " | ".join(parts) + extra)
