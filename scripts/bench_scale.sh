#!/usr/bin/env bash
# How far the engines scale: wall seconds and peak RSS of one VGG-A prediction by
# `cnnpar simulate` (SimGrid; dp and lee) at each rank count, on the Cori dragonfly grown to fit
# (1,152 nodes: 3 groups; 4,224 nodes: 11 groups) and on a fat tree grown to fit (256, 1,024 or
# 4,096 nodes: building SimGrid's 4,096-node tree alone takes about 0.6 s); then
# the analytic engine's configurations per second per core (scripts/bench_sweep.sh on core 0).
# The global batch is 256 images, or one per rank beyond 256 ranks. Medians of REPEATS runs;
# a run past TIMEOUT_S is killed and shown as "> TIMEOUT_S".
# Targets: <= 0.5 s at 128 ranks, <= 10 s at 1,024, <= 60 s at 4,096, <= 4 GiB; analytic
# >= 25,000 configurations/s/core.
# Usage: scripts/bench_scale.sh [CNNPAR] [REPEATS] [RANKS] [TIMEOUT_S] [TOPOLOGIES]
#   e.g. scripts/bench_scale.sh build/bin/cnnpar 3 128,1024,4096 600 dragonfly,fat_tree
set -euo pipefail
cnnpar=${1:-build/bin/cnnpar}
repeats=${2:-3}
IFS=, read -ra rank_counts <<<"${3:-128,1024,4096}"
timeout_s=${4:-600}
IFS=, read -ra topologies <<<"${5:-dragonfly,fat_tree}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p'); avx512f: $(grep -q avx512f /proc/cpuinfo && echo yes || echo no)"

platform_sets() {  # TOPOLOGY RANKS -> the --set flags of a platform that holds RANKS nodes
  case $1 in
    dragonfly)
      if [ "$2" -le 1152 ]; then echo "--set network.dragonfly=3,4;6,3;16,1;4 --set nodes.count=1152"
      else echo "--set network.dragonfly=11,4;6,3;16,1;4 --set nodes.count=4224"; fi ;;
    fat_tree)
      local tree="--set network.topology=fat_tree --set network.fat_tree"
      if [ "$2" -le 256 ]; then echo "$tree=2;16,16;1,16;1,1 --set nodes.count=256"
      elif [ "$2" -le 1024 ]; then echo "$tree=3;16,8,8;1,8,8;1,1,1 --set nodes.count=1024"
      else echo "$tree=3;16,16,16;1,16,16;1,1,1 --set nodes.count=4096"; fi ;;
    *) echo "bench_scale: unknown topology $1" >&2; exit 2 ;;
  esac
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

printf '%-10s %-9s %6s %12s %12s %10s\n' topology strategy ranks "wall s" "peak MiB" "simulated s"
for topology in "${topologies[@]}"; do
  for ranks in "${rank_counts[@]}"; do
    for strategy in dp lee; do
      read -ra sets <<<"$(platform_sets "$topology" "$ranks")"
      walls=() rss=() simulated="-"
      for ((r = 0; r < repeats; r++)); do
        out=$(mktemp)
        status=0
        /usr/bin/time -f "%e %M" -o "$out.time" timeout "$timeout_s" "$cnnpar" simulate --network vgg-a \
          --strategy "$strategy" --nodes "$ranks" --batch $((ranks > 256 ? ranks : 256)) "${sets[@]}" \
          --json "$out" -q || status=$?
        if [ $status -eq 124 ]; then walls+=(">$timeout_s"); rss+=("-"); rm -f "$out" "$out.time"; break; fi
        [ $status -eq 0 ] || { echo "bench_scale: cnnpar simulate failed ($status)" >&2; exit 1; }
        read -r wall kb <"$out.time"
        walls+=("$wall"); rss+=("$((kb / 1024))")
        simulated=$(grep -o '"iteration_s": *[0-9.e+-]*' "$out" | head -n 1 | sed 's/.*: *//')
        rm -f "$out" "$out.time"
      done
      if [[ ${walls[0]} == ">"* ]]; then wall_median=${walls[0]}; rss_median="-"
      else wall_median=$(printf '%s\n' "${walls[@]}" | median); rss_median=$(printf '%s\n' "${rss[@]}" | median); fi
      printf '%-10s %-9s %6s %12s %12s %10s\n' "$topology" "$strategy" "$ranks" "$wall_median" "$rss_median" "$simulated"
    done
  done
done
sweep=$(taskset -c 0 bash "$(dirname "$0")/bench_sweep.sh" "$cnnpar" "$repeats" 2>/dev/null |
  sed -n 's/^median of [0-9]*: \([0-9.]*\) s.*/\1/p')
awk -v s="$sweep" 'BEGIN { printf "analytic: 1000 configurations in %.3f s on one core = %.0f configurations/s/core\n",
                           s, 1000 / s }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
