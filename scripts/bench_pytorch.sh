#!/usr/bin/env bash
# Compares one-process training throughput (images/s) of cnnpar's real Runtime with
# PyTorch on the same network, batch and thread count.
#
#   scripts/bench_pytorch.sh [build-dir] [network] [batch]
#   defaults: build-real, vgg-a-32, 64
#
# python3-torch is installed here with apt if it is missing (about 830 MB; never a
# project dependency). The C++ side is cnnpar_real_bench from the build directory.
# Prints the best JSON object of each side and a ratio line per thread count (REPEAT runs
# each, alternating; ITERATIONS/WARMUP per run); exit 1 on failure.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-build-real}"
network="${2:-vgg-a-32}"
batch="${3:-64}"
iterations="${ITERATIONS:-6}"
warmup="${WARMUP:-2}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
# apt's torch lives in the system interpreter (a pyenv python3 on PATH would not see it).
py="${PYTHON:-/usr/bin/python3}"
json="$root/scenarios/networks/$network.json"
bench="$build/real/cnnpar_real_bench"

[ -f "$json" ] || { echo "no network file $json" >&2; exit 1; }
[ -x "$bench" ] || { echo "build cnnpar_real_bench first: cmake --build $build --target cnnpar_real_bench" >&2; exit 1; }

if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "installing python3-torch (apt) ..." >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi

ratio() { "$py" -c 'import json,sys; a=json.loads(sys.argv[1]); b=json.loads(sys.argv[2]); print("%.3f" % (a["images_per_s"] / b["images_per_s"]))' "$1" "$2"; }

# The machine may be shared: alternate the two programs REPEAT times and compare the best
# (highest images/s) run of each, the usual way to take interference out of a timing.
repeat="${REPEAT:-3}"
best() { "$py" -c 'import json,sys; runs=[json.loads(x) for x in sys.argv[1:]]; print(json.dumps(max(runs, key=lambda r: r["images_per_s"])))' "$@"; }
for threads in 1 2; do
  export OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads"
  ours_runs=() theirs_runs=()
  for ((i = 0; i < repeat; i++)); do
    ours_runs+=("$("$bench" --network "$json" --batch "$batch" --threads "$threads" --iterations "$iterations" --warmup "$warmup")")
    theirs_runs+=("$("$py" "$root/scripts/bench_pytorch.py" --network "$json" --batch "$batch" --threads "$threads" \
                   --iterations "$iterations" --warmup "$warmup")")
  done
  ours="$(best "${ours_runs[@]}")"
  theirs="$(best "${theirs_runs[@]}")"
  echo "$ours"
  echo "$theirs"
  echo "threads=$threads best of $repeat: cnnpar $("$py" -c 'import json,sys; print("%.2f" % json.loads(sys.argv[1])["images_per_s"])' "$ours") images/s," \
       "pytorch $("$py" -c 'import json,sys; print("%.2f" % json.loads(sys.argv[1])["images_per_s"])' "$theirs") images/s," \
       "ratio cnnpar/pytorch $(ratio "$ours" "$theirs")"
done
