"""Claim latency of the zero-ahead A/B: medians (min-max) over every booblik run of each arm."""
import glob, json, statistics as st
for arm in ('zero', 'nozero'):
    p50, p99, p999, t = [], [], [], []
    for f in sorted(glob.glob(f'{arm}-*.json')):
        for r in json.load(open(f))['runs']:
            if r['kind'] == 'queue' and r['system'] == 'booblik':
                c = r['claim_latency_us']
                p50.append(c['p50']); p99.append(c['p99']); p999.append(c['p999']); t.append(r['tasks_per_s'])
    f = lambda v: '%.0f (%.0f-%.0f)' % (st.median(v), min(v), max(v))
    print(arm, len(p50), 'runs; p50', f(p50), 'p99', f(p99), 'p99.9', f(p999), 'tasks/s', f(t))
