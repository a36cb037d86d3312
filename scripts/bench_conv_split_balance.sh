#!/usr/bin/env bash
# Real load balance of conv_split (Marques shares): 3 ranks on this machine, rank 1 made 2x slower
# (--slowdown 1:2), kernel shares from the timing probe (Marques Eq. 1) against uniform shares.
# Reports, per run, each rank's measured conv seconds per iteration (forward + backward of the
# conv layers, median over the measured iterations) and the spread max/min - 1 over the
# workers (ranks 1 and 2) and over every conv holder (master included). The two sides alternate
# and each is repeated; medians of the repeats and the load average are printed.
# Usage: scripts/bench_conv_split_balance.sh [BUILD_DIR=build] [REPEATS=3] [COMPUTE=real|sleep]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
compute=${3:-real}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq 1 "$repeats"); do
  order="probe uniform"
  [ $((rep % 2)) -eq 0 ] && order="uniform probe"
  for shares in $order; do
    OPENBLAS_NUM_THREADS=1 mpiexec -n 3 "$build/bin/cnnpar-run" --network marques-50-500 --strategy conv_split \
      --shares "$shares" --slowdown 1:2 --batch 32 --iterations 6 --warmup 2 --compute "$compute" -q \
      --trace "$out/$shares-$rep.json"
  done
done
python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
network = json.load(open("scenarios/networks/marques-50-500.json"))
conv_layer_ids = {i for i, layer in enumerate(network["layers"]) if layer["type"] == "conv"}
def conv_seconds(trace):
    per_rank = []
    warm = trace["warmup_iterations"]
    for rank in trace["ranks"]:
        marks = [m["time"] for m in rank["marks"]]
        per_iteration = []
        for i in range(warm, len(marks)):
            start = marks[i - 1] if i > 0 else 0.0
            total = sum(r["end"] - r["start"] for r in rank["compute"]
                        if r["layer"] in conv_layer_ids and start <= r["start"] < marks[i] and r["phase"] != "update")
            per_iteration.append(total)
        per_rank.append(statistics.median(per_iteration))
    return per_rank
for shares in ("probe", "uniform"):
    workers, holders = [], []
    for rep in range(1, repeats + 1):
        trace = json.load(open(f"{out}/{shares}-{rep}.json"))
        t = conv_seconds(trace)
        workers.append(max(t[1:]) / min(t[1:]) - 1)
        holders.append(max(t) / min(t) - 1)
        print(f"{shares:8s} run {rep}: conv s/iteration per rank " + ", ".join(f"{x:.4f}" for x in t)
              + f"; workers' spread {100 * workers[-1]:.1f} %, all ranks {100 * holders[-1]:.1f} %"
              + (f"; shares {trace['metadata']['options']['shares']}" if shares == "probe" else ""))
    print(f"{shares:8s} median spread: workers {100 * statistics.median(workers):.1f} %, "
          f"all ranks {100 * statistics.median(holders):.1f} %")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
