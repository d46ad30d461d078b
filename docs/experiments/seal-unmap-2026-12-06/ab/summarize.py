"""Summarize the A/B of the large-record command: per arm, over runs 2-7 of every invocation,
CPU s per GB of wire, wire MB/s, ratio to the invocation's TCP baseline, and the rolls' holds."""
import json, statistics as st, sys
arms = sys.argv[1:] or ['old', 'payload', 'unmap', 'roll']
def fmt(xs, f='%.2f'):
    return (f + ' (' + f + '–' + f + ')') % (st.median(xs), min(xs), max(xs))
for arm in arms:
    cpg, wire, ratio, hold, seal = [], [], [], [], []
    r = 1
    while True:
        try:
            d = json.load(open(f'{arm}-{r}.json'))
        except FileNotFoundError:
            break
        tcp = d['baseline']['tcp_mb_s']
        for x in d['runs'][1:]:
            gb = x['wire_mb_s'] * x['seconds'] / 1000
            cpg.append(x['process_cpu_s'] / gb)
            wire.append(x['wire_mb_s'])
            ratio.append(x['wire_mb_s'] / tcp)
            s = x['storage']
            if s['rolls']:
                hold.append(s['longest_roll_ms'])
            if s['seals']:
                seal.append(s['longest_seal_ms'])
        r += 1
    print(f"{arm:8} CPU s/GB {fmt(cpg)}  wire MB/s {fmt(wire, '%.0f')}  ÷ TCP {fmt(ratio, '%.3f')}  "
          f"longest roll hold ms {fmt(hold, '%.0f') if hold else '-'}  seals finished in-run {len(seal)}/{len(hold)} {fmt(seal, '%.0f') if seal else ''}")
