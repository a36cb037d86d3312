#!/usr/bin/env bash
# cnnpar-run against PyTorch on the same network, batch and threads: training images/s and
# peak resident memory, side by side.
#
#   scripts/bench_pytorch.sh [--build DIR] [--network NAME] [--batch N] [--repeats R]
#                            [--iterations I] [--warmup W] [--gemm openblas|onednn]
#                            [--conv im2col|direct|winograd|auto|LAYERS] [--cases LIST] [--out DIR]
#                            [--no-efficiency]
#   defaults: build, vgg-a-32, 64, 3 repeats, 8 iterations (2 warm-up), openblas, auto,
#             cases 1x1,1x2,2x1 (processes x threads), out bench-results
#
# Both sides train the network of scenarios/networks/NAME.json: bench_pytorch.py builds its
# PyTorch model from that file, so the two cannot drift. Per case and repeat the two sides
# run one after the other, the first side alternating between repeats (ABBA...), so a load
# change on this shared machine hits both alike. Reported per case: the median over repeats
# of images/s (batch / the median measured iteration) and of peak RSS (/usr/bin/time -v;
# the largest process), the ratio cnnpar/pytorch, and the load average before and after.
#   1xT: one process, T threads (cnnpar-run --threads T; torch.set_num_threads(T))
#   2x1: 2 ranks x 1 thread of `dp` against DistributedDataParallel over gloo
# Unless --no-efficiency: `cnnpar calibrate` (1 rank, 1 thread, the same back-end), then
# tests/real/cnnpar_gemm_efficiency on every 1x1 trace: the medians of the GEMM efficiency
# against the calibrated sgemm rates of the same shapes, and of the non-GEMM share of an
# iteration.
# The machine goes with the numbers, on stdout and in bench.json: the CPU model and vector flags,
# OpenBLAS's core and oneDNN's ISA as cnnpar-run's trace records them, and PyTorch's CPU
# capability and the ISA of the oneDNN it bundles (ONEDNN_VERBOSE).
# Writes DIR/bench.json and DIR/bench.csv (whole files, replaced at the end). python3-torch
# is installed with apt when missing (about 830 MB; never a project dependency).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
build=build network=vgg-a-32 batch=64 repeats=3 iterations=8 warmup=2 gemm=openblas conv=auto
cases=1x1,1x2,2x1 out=bench-results efficiency=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --network) network=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --gemm) gemm=$2; shift 2 ;;
    --conv) conv=$2; shift 2 ;;
    --cases) cases=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-efficiency) efficiency=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "bench_pytorch.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$batch" "$repeats" "$iterations"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "bench_pytorch.sh: '$n' must be a positive integer" >&2; exit 2; }
done
[[ "$warmup" =~ ^[0-9]+$ ]] || { echo "bench_pytorch.sh: --warmup '$warmup' must be an integer >= 0" >&2; exit 2; }
case "$build" in /*) ;; *) build="$root/$build" ;; esac
json="$root/scenarios/networks/$network.json"
[ -f "$json" ] || { echo "bench_pytorch.sh: no network file $json" >&2; exit 2; }
run="$build/bin/cnnpar-run" cli="$build/bin/cnnpar" eff="$build/tests/real/cnnpar_gemm_efficiency"
for exe in "$run" "$cli"; do
  [ -x "$exe" ] || { echo "bench_pytorch.sh: build first: bash scripts/build.sh ($exe missing)" >&2; exit 2; }
done
# apt's torch lives in the system interpreter (a pyenv python3 on PATH would not see it).
py="${PYTHON:-/usr/bin/python3}"
if ! "$py" -c 'import torch' 2>/dev/null; then
  echo "bench_pytorch.sh: installing python3-torch (apt) ..." >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch >/dev/null
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
peak_kb() { sed -n 's/^\s*Maximum resident set size (kbytes): //p' "$1"; }

# One run of one side; prints "images_per_s peak_rss_kb".
run_cnnpar() {  # procs threads tag
  local trace="$work/cnnpar-$3.json"
  OPENBLAS_NUM_THREADS=$2 OMP_NUM_THREADS=$2 /usr/bin/time -v -o "$work/time" \
    mpiexec -n "$1" "$run" --network "$json" --strategy dp --batch "$batch" --iterations $((iterations + warmup)) \
    --warmup "$warmup" --threads "$2" --gemm "$gemm" --conv "$conv" --trace "$trace" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; exit 1; }
  "$cli" compare "$trace" "$trace" --json "$work/metrics.json" -q
  "$py" - "$work/metrics.json" "$batch" "$(peak_kb "$work/time")" <<'PY'
import json, sys
m = {x["name"]: x["measured"] for x in json.load(open(sys.argv[1]))["metrics"]}
print(int(sys.argv[2]) / m["iteration_s"], sys.argv[3])
PY
}
run_pytorch() {  # procs threads
  OMP_NUM_THREADS=$2 MKL_NUM_THREADS=$2 /usr/bin/time -v -o "$work/time" \
    "$py" "$root/scripts/bench_pytorch.py" --network "$json" --batch "$batch" --threads "$2" --ranks "$1" \
    --iterations "$iterations" --warmup "$warmup" >"$work/torch.json" 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
  "$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["images_per_s"], sys.argv[2])' "$work/torch.json" \
    "$(peak_kb "$work/time")"
}

results="$work/results.jsonl"
: >"$results"
echo "bench_pytorch.sh: $network, batch $batch, $repeats repeats of $iterations iterations (+$warmup warm-up), GEMMs on $gemm, conv $conv"
# PyTorch's side of the machine: ATen's CPU capability and its bundled oneDNN's ISA.
torch_machine="$("$py" - <<'PY'
import json, torch
capability = next((l.split(":", 1)[1].strip() for l in torch.__config__.show().splitlines() if "CPU capability" in l), "unknown")
print(json.dumps({"torch": torch.__version__, "cpu_capability": capability}))
PY
)"
# The first oneDNN primitive prints the ISA line (on stdout).
torch_isa="$(ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$py" -c 'import torch, torch.nn.functional as F; F.conv2d(torch.randn(8, 16, 32, 32), torch.randn(16, 16, 3, 3))' 2>&1 |
  sed -n 's/^[a-z]*_verbose,info,cpu,isa:\(.*\)$/\1/p' | head -n 1)"
torch_machine="$("$py" -c 'import json, sys; m = json.loads(sys.argv[1]); m["onednn_isa"] = sys.argv[2] or "unknown"; print(json.dumps(m))' "$torch_machine" "$torch_isa")"
echo "bench_pytorch.sh: pytorch $torch_machine"
IFS=, read -r -a case_list <<<"$cases"
for c in "${case_list[@]}"; do
  [[ "$c" =~ ^([12])x([1-9][0-9]*)$ ]] || { echo "bench_pytorch.sh: case '$c' is not PxT with P in {1,2}" >&2; exit 2; }
  procs=${BASH_REMATCH[1]} threads=${BASH_REMATCH[2]}
  load_before="$(loadavg)"
  ours=() theirs=()
  for ((i = 0; i < repeats; i++)); do
    if ((i % 2 == 0)); then
      ours+=("$(run_cnnpar "$procs" "$threads" "$c-$i")"); theirs+=("$(run_pytorch "$procs" "$threads")")
    else
      theirs+=("$(run_pytorch "$procs" "$threads")"); ours+=("$(run_cnnpar "$procs" "$threads" "$c-$i")")
    fi
    [ -n "${ours[-1]}" ] && [ -n "${theirs[-1]}" ] || { echo "bench_pytorch.sh: a run failed" >&2; exit 1; }
    echo "  $c repeat $((i + 1))/$repeats: cnnpar ${ours[-1]%% *} images/s, pytorch ${theirs[-1]%% *} images/s" >&2
  done
  "$py" - "$c" "$procs" "$threads" "$load_before" "$(loadavg)" "${#ours[@]}" "${ours[@]}" "${theirs[@]}" \
    >>"$results" <<'PY'
import json, statistics, sys
case, procs, threads, before, after, n = sys.argv[1:7]
n = int(n)
runs = [tuple(map(float, r.split())) for r in sys.argv[7:]]
ours, theirs = runs[:n], runs[n:]
med = lambda xs: statistics.median(xs)
row = {"case": case, "processes": int(procs), "threads": int(threads), "repeats": n,
       "cnnpar_images_per_s": med([r[0] for r in ours]), "pytorch_images_per_s": med([r[0] for r in theirs]),
       "cnnpar_peak_rss_mb": med([r[1] for r in ours]) * 1024 / 1e6,
       "pytorch_peak_rss_mb": med([r[1] for r in theirs]) * 1024 / 1e6,
       "cnnpar_runs_images_per_s": [r[0] for r in ours], "pytorch_runs_images_per_s": [r[0] for r in theirs],
       "load_average_before": before, "load_average_after": after}
row["ratio"] = row["cnnpar_images_per_s"] / row["pytorch_images_per_s"]
print(json.dumps(row))
PY
done

gemm_json="null"
if [ "$efficiency" = 1 ] && [[ ",$cases," == *",1x1,"* ]]; then
  if [ -x "$eff" ]; then
    OPENBLAS_NUM_THREADS=1 "$cli" calibrate --network "$json" --nodes 1 --threads 1 --batch "$batch" --gemm "$gemm" --repeats 9 \
      --out "$work/calibrated.json" >"$work/log" 2>&1 || { cat "$work/log" >&2; exit 1; }
    # Every 1x1 repeat against the same calibration; the medians are reported.
    for ((i = 0; i < repeats; i++)); do
      "$eff" "$work/cnnpar-1x1-$i.json" "$work/calibrated.json" 0 "$work/efficiency-$i.json" >"$work/efficiency-$i.txt"
    done
    cat "$work/efficiency-$((repeats / 2)).txt" >&2
    gemm_json="$("$py" - "$work"/efficiency-*.json <<'PY'
import json, statistics, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
out = {k: statistics.median(r[k] for r in runs) for k in ("gemm_efficiency", "non_gemm_share_of_iterations")}
out["runs"] = runs
out["gemm_backend"] = runs[0]["gemm_backend"]
print(json.dumps(out))
PY
)"
  else
    echo "bench_pytorch.sh: no $eff (CNNPAR_BUILD_TESTS=OFF): GEMM efficiency skipped" >&2
  fi
fi

mkdir -p "$out"
first_trace="$(ls "$work"/cnnpar-*.json | head -n 1)"
"$py" - "$results" "$out" "$network" "$batch" "$gemm" "$gemm_json" "$conv" "$first_trace" "$torch_machine" <<'PY'
import csv, json, os, platform, sys
results, out, network, batch, gemm, gemm_json, conv, trace, torch_machine = sys.argv[1:10]
rows = [json.loads(line) for line in open(results)]
metadata = json.load(open(trace))["metadata"]
doc = {"network": network, "batch": int(batch), "gemm_backend": gemm, "conv": conv, "host": platform.node(),
       "cpu": metadata.get("cpu"), "conv_chosen": metadata.get("options", {}).get("conv", "im2col"),
       "pytorch": json.loads(torch_machine), "cases": rows, "gemm_efficiency": json.loads(gemm_json)}
cpu = doc["cpu"] or {}
print(f"cpu: {cpu.get('model')}; flags {' '.join(cpu.get('flags', []))}; OpenBLAS core {cpu.get('openblas_core')}; "
      f"oneDNN ISA {cpu.get('onednn_isa')}; conv {conv} (ran: {doc['conv_chosen']})")
print(f"pytorch {doc['pytorch'].get('torch')}: CPU capability {doc['pytorch'].get('cpu_capability')}; "
      f"its oneDNN: {doc['pytorch'].get('onednn_isa')}")
def write(path, text):  # whole file or nothing
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
write(os.path.join(out, "bench.json"), json.dumps(doc, indent=1) + "\n")
keys = ["case", "processes", "threads", "repeats", "cnnpar_images_per_s", "pytorch_images_per_s", "ratio",
        "cnnpar_peak_rss_mb", "pytorch_peak_rss_mb", "load_average_before", "load_average_after"]
import io
buf = io.StringIO()
w = csv.DictWriter(buf, fieldnames=keys, extrasaction="ignore")
w.writeheader()
w.writerows(rows)
write(os.path.join(out, "bench.csv"), buf.getvalue())
print(f"{'case':<6}{'cnnpar img/s':>14}{'pytorch img/s':>15}{'ratio':>8}{'cnnpar MB':>11}{'pytorch MB':>12}  load before -> after")
for r in rows:
    print(f"{r['case']:<6}{r['cnnpar_images_per_s']:>14.2f}{r['pytorch_images_per_s']:>15.2f}{r['ratio']:>8.3f}"
          f"{r['cnnpar_peak_rss_mb']:>11.1f}{r['pytorch_peak_rss_mb']:>12.1f}  {r['load_average_before']} -> {r['load_average_after']}")
g = doc["gemm_efficiency"]
if g:
    print(f"1x1 GEMM efficiency {100 * g['gemm_efficiency']:.1f} % of calibrated {gemm} sgemm; "
          f"non-GEMM compute {100 * g['non_gemm_share_of_iterations']:.1f} % of an iteration "
          f"(medians over the {len(g['runs'])} 1x1 repeats)")
print(f"wrote {out}/bench.json and {out}/bench.csv")
PY
