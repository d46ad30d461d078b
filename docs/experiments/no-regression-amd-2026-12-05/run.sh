#!/usr/bin/env bash
# Issue 16's no-regression target: the tree the issue was filed against (8aebce1) and this one,
# alternated round by round on one host, each workload of docs/benchmarks.md with its defaults
# (produce, fetch, e2e) and a 256 MiB TCP baseline; the new build skips its TCP-into-the-page-
# cache probe, which the old one does not have. Odd rounds run old first, even rounds new first.
# Usage: run.sh OUT_DIR OLD_BIN NEW_BIN FIRST_ROUND LAST_ROUND
# (the sitting ran `run.sh out old new 1 3`, then `run.sh out old new 4 6`)
set -euo pipefail
out=$1; old=$2; new=$3; first=${4:-1}; last=${5:-3}
mkdir -p "$out"
for r in $(seq "$first" "$last"); do
  if (( r % 2 )); then order=(old new); else order=(new old); fi
  for w in produce fetch e2e; do
    for arm in "${order[@]}"; do
      echo "$(date -u +%T) round $r $arm $w" >&2
      bin=$old; extra=(--baseline-tcp-mib 256)
      [[ $arm == new ]] && { bin=$new; extra=(--baseline-tcp-mib 256 --baseline-tcp-store-mib 0); }
      uptime > "$out/$w-$arm-$r.uptime"
      "$bin" "$w" "${extra[@]}" --json "$out/$w-$arm-$r.json" > "$out/$w-$arm-$r.md" 2> "$out/$w-$arm-$r.err"
      uptime >> "$out/$w-$arm-$r.uptime"
    done
  done
done
