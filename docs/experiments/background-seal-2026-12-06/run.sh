#!/usr/bin/env bash
# The background seal, A/B on one host: the build before it (old) and after it (new), alternated
# round by round. One producer (the batching client), 100 B records, 6 s runs, so each run writes
# more than one 512 MiB segment and crosses a roll; WRITTEN and NONE acks.
# Usage: run.sh OUT_DIR OLD_BIN NEW_BIN FIRST_ROUND LAST_ROUND (odd rounds run old first)
set -euo pipefail
out=$1; old=$2; new=$3; first=${4:-1}; last=${5:-4}
mkdir -p "$out"
for r in $(seq "$first" "$last"); do
  if (( r % 2 )); then order=(old new); else order=(new old); fi
  for arm in "${order[@]}"; do
    bin=$old; [[ $arm == new ]] && bin=$new
    echo "$(date -u +%T) round $r $arm" >&2
    uptime > "$out/$arm-$r.uptime"
    "$bin" produce --produce-clients producer --record-bytes 100 --acks written,none --producers 1 \
      --produce-duration-ms 6000 --baseline-tcp-mib 16 --baseline-tcp-store-mib 0 \
      --json "$out/$arm-$r.json" > "$out/$arm-$r.md" 2> "$out/$arm-$r.err"
    uptime >> "$out/$arm-$r.uptime"
  done
done
