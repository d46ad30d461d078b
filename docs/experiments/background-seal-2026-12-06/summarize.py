#!/usr/bin/env python3
"""The background-seal A/B: medians and ranges per ack and build (reads raw-rolls/*.json, and the
first sitting's raw/*.json, whose binaries did not report rolls yet)."""
import glob
import json
import os
import statistics

here = os.path.dirname(os.path.abspath(__file__))


def load(folder):
    runs = {}
    for path in sorted(glob.glob(os.path.join(here, folder, "*.json"))):
        arm = os.path.basename(path).split("-")[0]
        for run in json.load(open(path))["runs"]:
            if run.get("kind") == "produce":
                runs.setdefault((run["ack"], arm), []).append(run)
    return runs


def spread(values, scale=1.0, digits=2):
    m = statistics.median(values)
    return f"{m / scale:.{digits}f} ({min(values) / scale:.{digits}f}–{max(values) / scale:.{digits}f})"


for folder in ("raw-rolls", "raw"):
    runs = load(folder)
    if not runs:
        continue
    print(f"\n## {folder}\n")
    print("| ack | build | runs | records/s, M | seconds | rolls per run | longest roll hold, ms | longest seal, ms |")
    print("|---|---|---:|---|---|---|---|---|")
    for (ack, arm), rs in sorted(runs.items()):
        rolls = [r["storage"] for r in rs if r.get("storage")]
        hold = spread([s["longest_roll_ms"] for s in rolls], digits=1) if rolls else "not reported"
        seal = (spread([s["longest_seal_ms"] for s in rolls], digits=1)
                if rolls and any(s["seals"] for s in rolls) else "—")
        count = ",".join(sorted({str(s["rolls"]) for s in rolls})) if rolls else "—"
        print(f"| {ack} | {arm} | {len(rs)} | {spread([r['records_per_s'] for r in rs], 1e6)} "
              f"| {spread([r['seconds'] for r in rs])} | {count} | {hold} | {seal} |")
    for ack in sorted({a for a, _ in runs}):
        old = statistics.median(r["records_per_s"] for r in runs[(ack, "old")])
        new = statistics.median(r["records_per_s"] for r in runs[(ack, "new")])
        print(f"\n{ack}: records/s, new ÷ old (medians) = {new / old:.2f}")
