#!/usr/bin/env bash
# BPT-CNN's orderings, predicted and measured on a heterogeneous set-up: a parameter server and 3
# workers on the namespace testbed (4 nodes, 1 Gbit/s each way), worker rank 1 computing twice as
# slowly (--slowdown 1:2), ops sleeping their modelled times (4 ranks on 2 cores). For each of
# idpa|udpa x sgwu|agwu: `cnnpar run` measures, `cnnpar trace --like` predicts the run as it ran
# (the per-sample times it resolved) with the analytic and the SimGrid engine. Repeats alternate
# the order of the four. Then scripts/bpt_orderings_summary.py tabulates time per epoch (the
# last worker's last mark / K), T_SGWU (Eq. 8) and time per iteration, medians over repeats
# (cnnpar compare --json gives the components and metrics of each prediction beside the run).
# Usage: scripts/bpt_orderings.sh OUT_DIR [REPEATS]   (root; the testbed `bpt` is made and removed)
set -euo pipefail
out=${1:?usage: bpt_orderings.sh OUT_DIR [REPEATS]}
repeats=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
cnnpar=${CNNPAR:-$here/build/bin/cnnpar}
platform=$here/reports/bpt-cnn-orderings/testbed-4x1gbps.json
mkdir -p "$out"
"$cnnpar" testbed create --nodes 4 --bandwidth 1Gbps --name bpt --quiet 2>/dev/null || true
trap '"$cnnpar" testbed destroy --name bpt --quiet || true' EXIT
# The machine (ops sleep, so no BLAS runs: the CPU matters only through the TCP stack and timers).
{ date -u; echo "load average $(cut -d' ' -f1-3 /proc/loadavg)"; lscpu | grep 'Model name'
  echo "cpu flags: $(grep -o -w 'avx2\|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' ')"; } > "$out/machine.txt"
combos=(idpa:sgwu udpa:sgwu idpa:agwu udpa:agwu)
for ((r = 1; r <= repeats; ++r)); do
  order=("${combos[@]}")
  if ((r % 2 == 0)); then order=(udpa:agwu idpa:agwu udpa:sgwu idpa:sgwu); fi
  for combo in "${order[@]}"; do
    partition=${combo%%:*} update=${combo##*:}
    name=${partition}_${update}_r$r
    echo "run $name (load average $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$out/machine.txt" >&2
    (cd "$out" && "$cnnpar" run --testbed bpt --nodes 4 --network veeriah-cifar10 --platform "$platform" \
       --compute sleep --slowdown 1:2 --strategy param_server --partition "$partition" --update "$update" \
       --batch 960 --iterations 12 --warmup 2 --trace "$name.real.json" -q)
    (cd "$out" && "$cnnpar" trace --like "$name.real.json" --engine analytic --out "$name.analytic.json" -q)
    (cd "$out" && "$cnnpar" trace --like "$name.real.json" --engine simgrid --out "$name.simgrid.json" -q)
    for engine in analytic simgrid; do
      (cd "$out" && "$cnnpar" compare "$name.$engine.json" "$name.real.json" --json "$name.compare-$engine.json" >/dev/null 2>&1)
    done
  done
done
python3 "$here/scripts/bpt_orderings_summary.py" "$out" | tee "$out/summary.md"
