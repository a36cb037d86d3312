#!/bin/sh
# Speed and memory of the SimGrid engine:
# VGG-A, lee (k = 9, f = 2), ring allreduce/allgather, crossbar, one measured iteration after
# one warm-up iteration, at 128 and 1024 nodes. The builders need N >= P, so the 1024-node
# run uses N = 1024 (one image per rank); message sizes of the allreduces do not depend on N.
# The engine's automatic ring batching sends every step as its own message at 128 nodes and
# 8 (allreduce) / 4 (allgather) steps per message at 1024 nodes (SimgridOptions::ring_step_batch;
# add --ring-step-batch 1 to the 1024 line for one message per step).
# Targets: 128 nodes <= 10 s wall; 1024 nodes <= 120 s wall and <= 2 GiB maximum resident set.
#
#   tests/bench/simgrid_bench.sh [BUILD_DIR]      (default: build)
set -eu
build=${1:-build}
bench="$build/tests/simgrid/simgrid_bench"
[ -x "$bench" ] || { echo "no $bench: build the simgrid_bench target first" >&2; exit 2; }
run() {
  label=$1; shift
  log=$(mktemp)
  /usr/bin/time -v "$bench" "$@" 2>"$log" | sed "s/^/$label: /"
  grep -E "Elapsed \(wall clock\)|Maximum resident set size|User time" "$log" | sed "s/^[[:space:]]*/$label: /"
  rm -f "$log"
}
run "128 nodes" --ranks 128 --batch 256 --strategy lee --k 9 --f 2
run "1024 nodes" --ranks 1024 --batch 1024 --strategy lee --k 9 --f 2
