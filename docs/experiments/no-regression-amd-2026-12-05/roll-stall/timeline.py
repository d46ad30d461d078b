#!/usr/bin/env python3
"""Runs a command and prints, every 0.2 s, the machine's idle and iowait ticks (/proc/stat, both
cores together, USER_HZ = 100: 40 ticks per 0.2 s) and the CPU ticks each of the command's
threads used, summed by thread name (digits replaced by N).

Usage: timeline.py -- COMMAND [ARG...]
"""
import os
import re
import subprocess
import sys
import time

cmd = sys.argv[sys.argv.index("--") + 1 :]
proc = subprocess.Popen(cmd)


def threads():
    out = {}
    try:
        for tid in os.listdir(f"/proc/{proc.pid}/task"):
            with open(f"/proc/{proc.pid}/task/{tid}/stat") as f:
                s = f.read()
            comm = re.sub(r"\d+", "N", s[s.index("(") + 1 : s.rindex(")")])
            fields = s[s.rindex(")") + 2 :].split()
            out[tid] = (comm, int(fields[11]) + int(fields[12]))
    except (FileNotFoundError, ProcessLookupError):
        pass
    return out


def machine():
    with open("/proc/stat") as f:
        return list(map(int, f.readline().split()[1:9]))


started = time.time()
before, machine_before = threads(), machine()
while proc.poll() is None:
    time.sleep(0.2)
    now, machine_now = threads(), machine()
    by_name = {}
    for tid, (comm, ticks) in now.items():
        by_name[comm] = by_name.get(comm, 0) + ticks - before.get(tid, (comm, ticks))[1]
    d = [b - a for a, b in zip(machine_before, machine_now)]
    busy = " ".join(f"{k}={v}" for k, v in sorted(by_name.items()) if v > 0)
    print(f"{time.time() - started:5.1f} s  idle {d[3]:2d}  iowait {d[4]:2d}  {busy}", flush=True)
    before, machine_before = now, machine_now
