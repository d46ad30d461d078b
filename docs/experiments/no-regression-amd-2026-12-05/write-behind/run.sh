#!/usr/bin/env bash
set -euo pipefail
out=$1; bin=$2
mkdir -p "$out"
for r in 1 2 3; do
  if (( r % 2 )); then order=(0 16); else order=(16 0); fi
  for w in roll large; do
    for mib in "${order[@]}"; do
      echo "$(date -u +%T) round $r wb=$mib $w" >&2
      if [[ $w == roll ]]; then
        args=(--record-bytes 100 --acks none,written --producers 1 --produce-clients producer --repeats 3 --baseline-tcp-mib 64)
      else
        args=(--record-bytes 1024 --acks written --producers 4 --produce-clients producer --repeats 3 --baseline-tcp-mib 256)
      fi
      BOOBLIK_WRITE_BEHIND_MIB=$mib "$bin" produce "${args[@]}" --baseline-tcp-store-mib 0 --json "$out/$w-wb$mib-$r.json" > "$out/$w-wb$mib-$r.md" 2> "$out/$w-wb$mib-$r.err"
    done
  done
done
