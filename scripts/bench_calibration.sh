#!/usr/bin/env bash
# Is a calibration trustworthy on this machine (the calibration side of the held-out fits)?
#  1. `cnnpar calibrate` once (vgg-a-32, global batch 128, 2 ranks so the network is measured
#     too, 1 BLAS thread per rank);
#  2. `cnnpar run` of vgg-a-32 on 1 rank (1 BLAS thread) at batches 16, 32, 64 and 128 with
#     that platform: the measured iteration time against the analytic prediction. The batch
#     order alternates between repeats (up, then down) so load drifts hit every batch alike;
#     each run records `uptime`; the table gives the median over the repeats;
#  3. a second calibration, and how far the two agree on every fitted latency and bandwidth
#     (network.latency, network.bandwidth, nodes.memory_bandwidth, nodes.call_overhead, the
#     message factors) and on the GEMM grid.
# Acceptance: every batch's |error| <= 5 %; the two calibrations within 20 %.
# Usage: scripts/bench_calibration.sh [OUT_DIR]
#   env: BUILD (./build), REPEATS (3), ITERATIONS (5: measured iterations per run), BATCHES
#        ("16 32 64 128"), CAL_BATCH (128), MAX_MESSAGE (bytes, 268435456), NETWORK (vgg-a-32),
#        LOAD_LIMIT (1.5) and MAX_WAIT (90 s): wait for a quieter machine before each step
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
cli=$build/bin/cnnpar
out=${1:-/tmp/cnnpar-bench-calibration}
repeats=${REPEATS:-3}
iterations=${ITERATIONS:-5}
batches=(${BATCHES:-16 32 64 128})
cal_batch=${CAL_BATCH:-128}
max_message=${MAX_MESSAGE:-268435456}
network=${NETWORK:-vgg-a-32}
[ -x "$cli" ] || { echo "bench_calibration: build first (no $cli)" >&2; exit 1; }
export CNNPAR_RUN=${CNNPAR_RUN:-$build/bin/cnnpar-run}
mkdir -p "$out"
log=$out/log.txt
: >"$log"
note() { echo "$*" | tee -a "$log"; }
load() { uptime | sed 's/.*load average: //'; }
# The machine is shared: before each calibration and run wait (at most MAX_WAIT s) for the
# 1-minute load to fall below LOAD_LIMIT, so both sides see a similar machine; the load
# each one started at is recorded either way.
quiet() {
  local waited=0
  while (($(awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v m="${LOAD_LIMIT:-1.5}" 'BEGIN{print (l >= m)}'))) &&
        ((waited < ${MAX_WAIT:-90})); do sleep 5; waited=$((waited + 5)); done
}

calibrate() {  # $1 = output platform
  local start end
  quiet
  start=$(date +%s.%N)
  note "calibrate -> $1 (load $(load))"
  "$cli" calibrate --network "$network" --nodes 2 --threads 1 --batch "$cal_batch" --repeats 5 \
    --max-message "$max_message" --out "$1" >"$1.stdout" 2>&1 || { cat "$1.stdout" >&2; exit 1; }
  end=$(date +%s.%N)
  note "  took $(python3 -c "print(f'{$end - $start:.0f}')") s; load after $(load)"
}

calibrate "$out/cal1.json"
for ((r = 1; r <= repeats; r++)); do
  order=("${batches[@]}")
  if ((r % 2 == 0)); then order=($(printf '%s\n' "${batches[@]}" | sort -rn)); fi
  for b in "${order[@]}"; do
    quiet
    l=$(load)
    "$cli" run --network "$network" --nodes 1 --threads 1 --batch "$b" --iterations "$((iterations + 1))" \
      --warmup 1 --platform "$out/cal1.json" --compare-json "$out/compare-b$b-r$r.json" -q \
      >"$out/run-b$b-r$r.stdout" 2>&1 || { cat "$out/run-b$b-r$r.stdout" >&2; exit 1; }
    note "run batch $b repeat $r (load $l)"
  done
done
calibrate "$out/cal2.json"

python3 - "$out" "$repeats" "${batches[@]}" <<'EOF' | tee -a "$log"
import json, statistics, sys
out, repeats, batches = sys.argv[1], int(sys.argv[2]), [int(b) for b in sys.argv[3:]]
print()
print(f"{'batch':>6} {'measured s':>11} {'predicted s':>12} {'error %':>8}  per-repeat measured s")
worst = 0.0
for b in batches:
    measured, predicted = [], []
    for r in range(1, repeats + 1):
        doc = json.load(open(f"{out}/compare-b{b}-r{r}.json"))
        m = next(x for x in doc["metrics"] if x["name"] == "iteration_s")
        measured.append(m["measured"]); predicted.append(m["predicted"])
    med_m, med_p = statistics.median(measured), statistics.median(predicted)
    error = 100 * (med_p / med_m - 1)
    worst = max(worst, abs(error))
    print(f"{b:>6} {med_m:>11.4f} {med_p:>12.4f} {error:>+8.1f}  " + " ".join(f"{x:.4f}" for x in measured))
print(f"worst |error| {worst:.1f} % (acceptance <= 5 %): {'PASS' if worst <= 5 else 'FAIL'}")

def fitted(path):
    p = json.load(open(path))
    def quantity(text):  # "123Bps", "4.5e-06s"
        return float(text.rstrip("Bpsf"))
    values = {"network.latency": quantity(p["network"]["latency"]),
              "network.bandwidth": quantity(p["network"]["bandwidth"]),
              "nodes.memory_bandwidth": quantity(p["nodes"]["memory_bandwidth"]),
              "nodes.call_overhead": quantity(p["nodes"].get("call_overhead", "0s")),
              "iteration_overhead": quantity(p.get("iteration_overhead", "0s"))}
    return values, p["network"].get("message_factors", []), p.get("calibration", {}).get("gemm_flops", {})

a, fa, ga = fitted(f"{out}/cal1.json")
b, fb, gb = fitted(f"{out}/cal2.json")
print()
print(f"{'fitted value':<24} {'calibration 1':>14} {'calibration 2':>14} {'difference %':>13}")
worst_fit = 0.0
for key in a:
    diff = 100 * abs(b[key] - a[key]) / max(abs(a[key]), abs(b[key]), 1e-300)
    if key != "iteration_overhead": worst_fit = max(worst_fit, diff)
    print(f"{key:<24} {a[key]:>14.4g} {b[key]:>14.4g} {diff:>13.1f}")
print(f"message factors: {len(fa)} and {len(fb)} pieces")
# The factors price a message: compare the two calibrations' modelled one-message times.
def message_s(values, factors, n):
    piece = {"latency": 1, "bandwidth": 1}
    for f in factors:
        if float(f["from"].rstrip("B")) <= n: piece = f
    return values["network.latency"] * piece["latency"] + n / (values["network.bandwidth"] * piece["bandwidth"])
worst_msg = 0.0
for n in [2 ** k for k in range(10, 29, 2)]:
    ta, tb = message_s(a, fa, n), message_s(b, fb, n)
    d = 100 * abs(tb - ta) / max(ta, tb)
    worst_msg = max(worst_msg, d)
    print(f"  message {n:>10} B: {ta:.4g} s vs {tb:.4g} s ({d:.1f} %)")
common = sorted(set(ga) & set(gb))
gemm = [100 * abs(gb[k] - ga[k]) / max(ga[k], gb[k]) for k in common]
print(f"GEMM grid: {len(common)} common points, median difference {statistics.median(gemm):.1f} %, "
      f"largest {max(gemm):.1f} %")
print(f"worst latency/bandwidth difference {worst_fit:.1f} %, worst modelled message time difference "
      f"{worst_msg:.1f} % (acceptance <= 20 %): {'PASS' if max(worst_fit, worst_msg) <= 20 else 'FAIL'}")
EOF
note "load at the end: $(load)"
