#!/bin/sh
# Lee et al. held out: the other time models tried against Fig. 6 (reports/lee2017-heldout/
# README.md, "Every mechanism tried"). Each row refits two parameters on Fig. 6 only, from the
# committed cori-haswell-fitted, with the constants of its --set, and predicts Figs. 8 and 9;
# it prints the README's table (Markdown). Nothing in the tree is written.
# Usage: scripts/lee_alternatives.sh [path/to/cnnpar]   (default: build/bin/cnnpar)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
exe=${1:-$root/build/bin/cnnpar}
[ -x "$exe" ] || { echo "lee_alternatives: no cnnpar at $exe (pass its path)" >&2; exit 1; }
cd "$root"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "| run | constants (--set) | free: fitted | Fig. 6 lee, DP | N=128 | N=512 | VGG-128 | VGG-256 | VGG-512 |"
echo "|---|---|---|---|---:|---:|---:|---:|---:|"
# run LABEL FREE [SET...]
run() {
  label=$1 free=$2
  shift 2
  sets=""
  for set in "$@"; do sets="$sets --set $set"; done
  # shellcheck disable=SC2086  # the --set arguments are meant to split
  if ! "$exe" fit --quiet --platform cori-haswell-fitted --study lee2017-fig6-vgg-a --only nodes=128 --free "$free" $sets \
    --held-out lee2017-fig8-batch,lee2017-fig9-parameters --out "$work/platform.json" --json "$work/fit.json"; then
    echo "| $label | $* | did not converge | | | | | | |"
    return
  fi
  python3 - "$label" "$work/fit.json" "$*" <<'EOF'
import json, sys
label, path, sets = sys.argv[1], sys.argv[2], sys.argv[3]
report = json.load(open(path))
def value(p):
    v = p["fitted"]
    return f"{v / 1e9:.3g} GB/s" if p["unit"] == "Bps" else f"{v:.3g}"
free = ", ".join(f"{p['path']} {value(p)}" for p in report["free"])
seen = ", ".join(f"{o['predicted']:.2f}" for o in report["observations"])
held = {o["series"]: o for h in report["held_out"] for o in h["observations"]}
cells = [f"{held[s]['predicted']:.1f} ({held[s]['relative_error'] * 100:+.1f} %)"
         for s in ("N=128", "N=512", "VGG-128", "VGG-256", "VGG-512")]
print(f"| {label} | {sets or '—'} | {free} | {seen} | " + " | ".join(cells) + " |")
EOF
}

run "committed (E0)" network.bandwidth,nodes.memory_bandwidth
# Speedups fix only ratios of rates: DRAM fixed, the GEMM efficiency free gives the same predictions.
run "DRAM fixed (E1)" network.bandwidth,nodes.efficiency.gemm nodes.memory_bandwidth=124GBps
# Published per-core and DRAM figures of a Haswell-EP node (the README's sources).
run "per-core rate (E2)" network.bandwidth,nodes.efficiency.gemm nodes.memory_bandwidth=124GBps nodes.core_bandwidth=19.9GBps
run "per-core rate free (E3)" network.bandwidth,nodes.core_bandwidth=19.9GBps nodes.memory_bandwidth=124GBps
# A single communication thread adds what it receives: a += b moves 12 B per 4 B received.
run "reduction (E4)" network.bandwidth,nodes.memory_bandwidth network.reduction_rate=6.6GBps
run "E2 + reduction (E5)" network.bandwidth,nodes.efficiency.gemm nodes.memory_bandwidth=124GBps nodes.core_bandwidth=19.9GBps network.reduction_rate=6.6GBps
# Sign tests: not sourced values, they show which way each mechanism moves Fig. 9.
run "per-call cost (E6)" network.bandwidth,nodes.memory_bandwidth nodes.call_overhead=0.2ms
run "per-call cost (E7)" network.bandwidth,nodes.memory_bandwidth nodes.call_overhead=1ms
run "per-iteration cost (E8)" network.bandwidth,nodes.memory_bandwidth iteration_overhead=20ms
run "communication thread (E9)" network.bandwidth,nodes.memory_bandwidth comm_compute_slowdown=0.2
run "progress by polling (E10)" network.bandwidth,nodes.memory_bandwidth network.busy_bandwidth_fraction=0.5
run "no image loops (E11)" network.bandwidth,nodes.memory_bandwidth nodes.image_parallel_kernels=false
