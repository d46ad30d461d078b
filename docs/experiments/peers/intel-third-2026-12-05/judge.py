"""Issue 19's latency/throughput/floor targets per invocation, for the pooled headline (random pool3 own at 3 w, random pool30 shared at 30 w)."""
import json,sys,statistics as st
for f in sys.argv[1:]:
    d=json.load(open(f)); b=d['baseline']; floor=1.5*(b['rtt_us_p50']+b['fsync_us_p50'])
    g={}
    for r in d['runs']:
        if r['kind']!='queue' or r.get('chaos') or r['arrival']!='backlog': continue
        if r['system']=='booblik':
            head=(r['workers']==3 and r['pool']==3 and r['pool_connection']=='own') or (r['workers']==30 and r['pool']==30 and r['pool_connection']=='shared')
            if r['pick']!='random' or not head: continue
        g.setdefault((r['workers'],r['work_ms'],r['system']),[]).append(r)
    out=[]
    for (w,wm) in sorted(set((k[0],k[1]) for k in g)):
        def m(sys_,key):
            v=g[(w,wm,sys_)]
            return st.median(x['claim_latency_us'][key] if key in('p50','p99') else x['tasks_per_s'] for x in v)
        bk50,bk99,bkt=m('booblik','p50'),m('booblik','p99'),m('booblik','t')
        best50=min(m(s,'p50') for s in ('redis-fsync','postgres')); best99=min(m(s,'p99') for s in ('redis-fsync','postgres'))
        rt=m('redis-fsync','t')
        miss=[]
        if bk50>best50: miss.append(f"p50 {bk50/best50:.2f}x")
        if bk99>best99: miss.append(f"p99 {bk99/best99:.2f}x")
        if bkt<rt: miss.append(f"tasks/s {bkt/rt:.2f}x")
        if w==3 and bk50>floor: miss.append(f"floor {bk50/floor:.2f}x")
        out.append(f"{w}w{wm}ms " + ("ok" if not miss else "MISS "+",".join(miss)) + f" [p50 {bk50:.0f}/{best50:.0f} p99 {bk99:.0f}/{best99:.0f} t {bkt:.0f}/{rt:.0f}" + (f" floor {floor:.0f}" if w==3 else "") + "]")
    print(f.split('/')[-1], "rtt %.1f fsync %.0f"%(b['rtt_us_p50'],b['fsync_us_p50']), " | ".join(out))
