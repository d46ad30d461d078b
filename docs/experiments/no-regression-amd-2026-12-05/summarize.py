#!/usr/bin/env python3
"""Issue 16's no-regression target from an alternated sitting of two builds (run.sh).

Usage: summarize.py [OUT_DIR]   (default: raw/ beside this script)

For every figure of docs/benchmarks.md's workloads (produce records/s, fetch MB/s, request and
end-to-end latency p50/p99) it prints each build's median and min-max over the rounds, the
ratio of the medians (new / old), and a verdict: a figure *regressed* when the new build's median
is worse than the old build's worst round (below its min for throughput, above its max for
latency): a drop larger than the old build's own spread.
"""
import glob
import json
import os
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "raw")


def load(workload, arm):
    runs = []
    for path in sorted(glob.glob(os.path.join(out, f"{workload}-{arm}-*.json"))):
        with open(path) as f:
            runs.append(json.load(f))
    return runs


def spread(values):
    return statistics.median(values), min(values), max(values)


def fmt(v, d):
    return f"{v:,.{d}f}".replace(",", " ")


rows = []  # (section, name, unit, higher_is_better, old values, new values)


def collect(section, unit, higher, key_of, values_of, workload):
    old, new = load(workload, "old"), load(workload, "new")
    table = {}
    for arm, invocations in (("old", old), ("new", new)):
        for inv in invocations:
            for run in inv["runs"]:
                for key, value in values_of(run):
                    table.setdefault(key, {"old": [], "new": []})[arm].append(value)
    for key, arms in table.items():
        if arms["old"] and arms["new"]:
            rows.append((section, key, unit, higher, arms["old"], arms["new"]))


def produce_values(run):
    if run["kind"] != "produce":
        return []
    key = f'{run["client"]}, {run["record_bytes"]} B, {run["ack"]}, {run["producers"]} producer(s)'
    return [(key, run["records_per_s"])]


def fetch_values(run):
    if run["kind"] != "fetch":
        return []
    return [(f'{run["mode"]}, {run["reader"]}', run["mb_s"])]


def request_values(run):
    if run["kind"] != "requests":
        return []
    out = []
    for kind in run["kinds"]:
        for q in ("p50", "p99"):
            out.append((f'{kind["request"]} {q}', kind["latency_us"][q]))
    return out


def e2e_values(run):
    if run["kind"] != "e2e":
        return []
    key = f'{run["client"]}, {run["rate_per_s"]}/s, linger {run["linger_ms"]} ms'
    return [(f"{key}, {q}", run["latency_us"][q]) for q in ("p50", "p99")]


collect("Produce", "records/s", True, None, produce_values, "produce")
collect("Fetch", "MB/s", True, None, fetch_values, "fetch")
collect("Request round trips", "µs", False, None, request_values, "e2e")
collect("End-to-end latency", "µs", False, None, e2e_values, "e2e")

section = None
counts = {"better": 0, "within": 0, "regressed": 0}
for sec, name, unit, higher, old, new in rows:
    if sec != section:
        section = sec
        print(f"\n### {sec} ({unit}; {'higher' if higher else 'lower'} is better)\n")
        print("| figure | 8aebce1 (old) | this tree (new) | new ÷ old | verdict |")
        print("|---|---:|---:|---:|---|")
    d = 0
    om, olo, ohi = spread(old)
    nm, nlo, nhi = spread(new)
    if higher:
        verdict = "regressed" if nm < olo else ("better" if nm > ohi else "within")
    else:
        verdict = "regressed" if nm > ohi else ("better" if nm < olo else "within")
    counts[verdict] += 1
    bold = "**" if verdict == "regressed" else ""
    print(
        f"| {name} | {fmt(om, d)} ({fmt(olo, d)}–{fmt(ohi, d)}) | {fmt(nm, d)} ({fmt(nlo, d)}–{fmt(nhi, d)}) "
        f"| {nm / om:.2f} | {bold}{verdict}{bold} |"
    )
print(f"\n{len(rows)} figures: {counts['better']} better beyond the old spread, "
      f"{counts['within']} within it, {counts['regressed']} regressed beyond it.")
for arm in ("old", "new"):
    for w in ("produce", "fetch", "e2e"):
        b = [inv["baseline"] for inv in load(w, arm)]
        if b:
            print(f"baseline {arm} {w}: RTT p50 {', '.join(fmt(x['rtt_us_p50'], 0) for x in b)} µs; "
                  f"TCP {', '.join(fmt(x['tcp_mb_s'], 0) for x in b)} MB/s; "
                  f"fsync p50 {', '.join(fmt(x['fsync_us_p50'], 0) for x in b)} µs")
