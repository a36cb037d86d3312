#!/usr/bin/env bash
# The sweep benchmark: 1,000 analytic configurations (VGG-A on Cori, 5 bandwidths × 4
# strategies × 50 node counts) in <= 5 s. Runs the sweep REPEATS times (default 5) into fresh
# files and prints each wall time, the median and the load average.
# Usage: scripts/bench_sweep.sh [CNNPAR] [REPEATS]
set -euo pipefail
cnnpar=${1:-build/bin/cnnpar}
repeats=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
times=()
for i in $(seq "$repeats"); do
  start=$(date +%s.%N)
  "$cnnpar" sweep --axis network.bandwidth=1Gbps,2Gbps,5Gbps,10Gbps,100Gbps \
    --axis strategy=dp,dp_layerwise,lee,hybrid --nodes 1-50:1 --uneven-batch --csv "$work/s$i.csv" -q
  end=$(date +%s.%N)
  rows=$(($(wc -l < "$work/s$i.csv") - 1))
  [ "$rows" -eq 1000 ] || { echo "bench_sweep: $rows rows, expected 1000" >&2; exit 1; }
  times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")
  printf 'run %d: %.3f s\n' "$i" "${times[-1]}"
done
median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
printf 'median of %d: %.4f s for 1000 configurations (target <= 5 s)\n' "$repeats" "$median"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
