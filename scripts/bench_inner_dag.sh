#!/usr/bin/env bash
# cnnpar-run --inner dag (BPT-CNN's inner-layer task DAG, real/inner_dag.hpp) against
# --inner gemm (im2col + one GEMM per conv op): the training iteration, and the conv layers'
# forward and weight-gradient time, on one rank.
#
#   scripts/bench_inner_dag.sh [--build DIR] [--network NAME] [--batch N] [--repeats R]
#                              [--iterations I] [--warmup W] [--threads LIST] [--gemm openblas|onednn]
#                              [--out DIR]
#   defaults: build, alexnet, 16, 3 repeats, 3 measured iterations (+1 warm-up), threads 1,2,
#             openblas, out bench-results/inner_dag
#
# Per thread count and repeat the two modes run one after the other, the first alternating
# between repeats (ABBA...), so a load change on this shared machine hits both alike. Reported
# per (threads, mode), as medians over the repeats: the measured iteration (each run's median
# over its measured iterations), images/s, and the conv time per iteration summed over the
# conv layers: forward (the .im2col and .fwd ops), weight gradient (.im2col_w and .bwd_w) and,
# for comparison, backward data (.bwd_d and .col2im, the same in both modes); in dag mode the
# im2col ops do nothing and their work is inside .fwd and .bwd_w. First the
# machine: CPU model, avx2 / avx512f, OpenBLAS's core (openblas_get_corename),
# OPENBLAS_THREAD_TIMEOUT (how long OpenBLAS's idle threads spin, 2^N
# cycles, default 28: they compete with the DAG's threads after a threaded GEMM); each case
# prints the load average before and after it. The machine is
# shared: before each pair of runs the script waits (at most MAX_WAIT s, default 60) for the
# 1-minute load to fall below LOAD_LIMIT (default 1.5), and records the load either way.
# Writes DIR/bench.json (the table, whole file, replaced at the end) and keeps the traces.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
build=build network=alexnet batch=16 repeats=3 iterations=3 warmup=1 threads_list=1,2 gemm=openblas
out=bench-results/inner_dag
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --network) network=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --threads) threads_list=$2; shift 2 ;;
    --gemm) gemm=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_inner_dag.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$batch" "$repeats" "$iterations" "$warmup"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench_inner_dag.sh: '$n' must be a positive integer" >&2; exit 2; }
done
[[ "$threads_list" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  { echo "bench_inner_dag.sh: --threads '$threads_list' must be a comma list of positive integers" >&2; exit 2; }
case "$build" in /*) ;; *) build="$root/$build" ;; esac
json="$root/scenarios/networks/$network.json"
[ -f "$json" ] || { echo "bench_inner_dag.sh: no network file $json" >&2; exit 2; }
run="$build/bin/cnnpar-run"
[ -x "$run" ] || { echo "bench_inner_dag.sh: build first: bash scripts/build.sh ($run missing)" >&2; exit 2; }
mkdir -p "$out"
traces="$out/traces"
mkdir -p "$traces"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
quiet() {
  local waited=0
  while (($(awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="${LOAD_LIMIT:-1.5}" 'BEGIN{print (l >= m)}'))) &&
        ((waited < ${MAX_WAIT:-60})); do sleep 5; waited=$((waited + 5)); done
}

echo "bench_inner_dag.sh: $network, batch $batch, $repeats repeats of $iterations iterations (+$warmup warm-up), GEMMs on $gemm"
echo "  cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; flags: $(grep -o -w 'avx2\|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' ')"
corename=$(python3 -c "import ctypes; l = ctypes.CDLL('libopenblas.so.0'); l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())" 2>/dev/null || echo unknown)
echo "  OpenBLAS core: $corename;" \
  "OPENBLAS_THREAD_TIMEOUT=${OPENBLAS_THREAD_TIMEOUT:-unset}; load average $(loadavg)"

one_run() {  # threads mode tag
  local trace="$traces/$3.json"
  OPENBLAS_NUM_THREADS=$1 OMP_NUM_THREADS=$1 mpiexec -n 1 "$run" --network "$json" --strategy dp --batch "$batch" \
    --iterations $((iterations + warmup)) --warmup "$warmup" --threads "$1" --gemm "$gemm" --inner "$2" \
    --trace "$trace" -q >"$traces/$3.log" 2>&1 || { cat "$traces/$3.log" >&2; exit 1; }
  echo "$trace"
}

results="$out/results.jsonl.tmp"
: >"$results"
IFS=, read -r -a thread_counts <<<"$threads_list"
for t in "${thread_counts[@]}"; do
  before="$(loadavg)"
  gemm_traces=() dag_traces=()
  for ((i = 0; i < repeats; i++)); do
    quiet
    echo "  threads $t repeat $((i + 1))/$repeats: load $(loadavg)" >&2
    if ((i % 2 == 0)); then
      gemm_traces+=("$(one_run "$t" gemm "t$t-gemm-$i")"); dag_traces+=("$(one_run "$t" dag "t$t-dag-$i")")
    else
      dag_traces+=("$(one_run "$t" dag "t$t-dag-$i")"); gemm_traces+=("$(one_run "$t" gemm "t$t-gemm-$i")")
    fi
  done
  python3 - "$json" "$batch" "$t" "$before" "$(loadavg)" "$repeats" "${gemm_traces[@]}" "${dag_traces[@]}" \
    >>"$results" <<'PY'
import json, statistics, sys
network, batch, threads, before, after, n = sys.argv[1:7]
n = int(n)
conv = {i for i, l in enumerate(json.load(open(network))["layers"]) if l["type"] == "conv"}

def measure(path):
    t = json.load(open(path))
    warm = t["warmup_iterations"]
    marks = [m["time"] for m in t["ranks"][0]["marks"]]
    iters = [marks[i] - marks[i - 1] for i in range(max(warm, 1), len(marks))]
    first = marks[max(warm, 1) - 1]
    fwd = wg = data = 0.0
    for op in t["ranks"][0]["compute"]:
        if op["layer"] not in conv or op["start"] < first:
            continue
        d = op["end"] - op["start"]
        if op["phase"] == "forward":
            fwd += d
        elif op["phase"] == "backward_weight":
            wg += d
        elif op["phase"] == "backward_data":
            data += d
    return statistics.median(iters), fwd / len(iters), wg / len(iters), data / len(iters)

med = statistics.median
for mode, paths in (("gemm", sys.argv[7:7 + n]), ("dag", sys.argv[7 + n:7 + 2 * n])):
    runs = [measure(p) for p in paths]
    it = [r[0] for r in runs]
    print(json.dumps({"threads": int(threads), "mode": mode, "iteration_s": med(it),
                      "iteration_s_runs": it, "images_per_s": int(batch) / med(it),
                      "conv_forward_s": med(r[1] for r in runs), "conv_weight_gradient_s": med(r[2] for r in runs),
                      "conv_backward_data_s": med(r[3] for r in runs),
                      "load_before": before, "load_after": after}))
PY
  echo "  threads $t done (load $before -> $(loadavg))" >&2
done

python3 - "$results" "$out/bench.json" "$network" "$batch" "$corename" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"\n{'threads':>7} {'mode':>5} {'iteration s':>12} {'images/s':>9} {'conv fwd s':>11} {'conv dW s':>10} "
      f"{'conv dE s':>10}  {'dag/gemm':>8}  load before -> after   iteration s per repeat")
by = {(r["threads"], r["mode"]): r for r in rows}
for r in rows:
    g = by[(r["threads"], "gemm")]
    ratio = r["iteration_s"] / g["iteration_s"]
    print(f"{r['threads']:>7} {r['mode']:>5} {r['iteration_s']:>12.4f} {r['images_per_s']:>9.2f} "
          f"{r['conv_forward_s']:>11.4f} {r['conv_weight_gradient_s']:>10.4f} {r['conv_backward_data_s']:>10.4f}  "
          f"{ratio:>8.3f}  "
          f"{r['load_before']} -> {r['load_after']}   " + " ".join(f"{x:.4f}" for x in r["iteration_s_runs"]))
doc = {"network": sys.argv[3], "batch": int(sys.argv[4]), "openblas_core": sys.argv[5],
       "openblas_thread_timeout": os.environ.get("OPENBLAS_THREAD_TIMEOUT", "unset"), "rows": rows}
tmp = sys.argv[2] + ".tmp"
with open(tmp, "w") as f:
    json.dump(doc, f, indent=1)
os.replace(tmp, sys.argv[2])
os.remove(sys.argv[1])
PY
