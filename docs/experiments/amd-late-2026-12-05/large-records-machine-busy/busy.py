#!/usr/bin/env python3
"""The machine's CPU split in each 0.2 s interval of stat.log (lines: `epoch-seconds cpu user
nice system idle iowait irq softirq steal ...`, the first line of /proc/stat sampled every 0.2 s
during one `booblik-load produce` invocation, lr1.md). Ticks are USER_HZ (100/s) summed over both
vCPUs: about 40 per interval. Prints the intervals where anything ran."""
import os
import sys

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "stat.log")
prev = None
rows = []
for line in open(path):
    f = line.split()
    t, v = float(f[0]), list(map(int, f[2:10]))
    if prev:
        d = [a - b for a, b in zip(v, prev[1])]
        rows.append((t, d))
    prev = (t, v)
t0 = rows[0][0]
for t, d in rows:
    user, system, idle, iowait, irq, steal = d[0] + d[1], d[2], d[3], d[4], d[5] + d[6], d[7]
    if user + system + irq > 5:
        print(f"{t - t0:6.1f} s  user {user:3d}  sys {system:3d}  idle {idle:3d}  "
              f"iowait {iowait:3d}  irq {irq:3d}  steal {steal:3d}")
