#!/usr/bin/env bash
# validate.sh CNNPAR GRID
# `cnnpar validate` on the CI subset of the shipped grid (scenarios/validation/ci.json: one
# network, two strategies, 1 Gbit/s, 2 ranks), on a testbed of its own (tba-val), in three steps:
#  1. SIGINT once the first calibration has begun: status 130, no namespace or state folder
#     of the testbed left, no finished result yet;
#  2. the same command again: status 0, both configurations measured, a report whose JSON has
#     mape_percent and r_mae_points per engine, errors that are numbers;
#  3. once more: nothing runs again (both kept: resumed), the same results;
#  4. one configuration with a compute speed tolerance of 0: compute is calibrated again;
#  5. one configuration over MPICH's own collectives (collectives "mpi"): calibrated in that
#     mode into its own file, priced as MPICH 4.0 selects its algorithms, reported by mode.
# After each step the testbed is gone. Exits 77 (skipped) when not root.
set -u
cnnpar=$(realpath "$1"); grid=$(realpath "$2")
[ "$(id -u)" -eq 0 ] || { echo "validate: skipped, the testbed needs root"; exit 77; }
name=tba-val
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "validate: FAIL: $*"; "$cnnpar" testbed destroy --name "$name" -q; exit 1; }
nothing_left() {
  ip netns list | grep -q "^$name-" && fail "$1: namespaces of $name are left: $(ip netns list | grep "^$name-" | tr '\n' ' ')"
  [ -e "/run/cnnpar-testbed/$name" ] && fail "$1: its state folder is left"
  pgrep -f "/run/cnnpar-testbed/$name/" >/dev/null && fail "$1: processes of its runs are left"
  return 0
}
# Runs "$@" with its output into LOG and returns its status; still running after BOUND seconds,
# it shows what runs (the process tree, the newest logs), is interrupted (validate removes the
# testbed) and the test fails. A hang then tells where it is before ctest's timeout cuts it short.
bounded() {
  local what=$1 bound_s=$2 log=$3 waited_s=0
  shift 3
  "$@" >"$log" 2>&1 &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null && [ "$waited_s" -lt "$bound_s" ]; do sleep 1; waited_s=$((waited_s + 1)); done
  if kill -0 "$pid" 2>/dev/null; then
    echo "validate: $what still running after $bound_s s; the processes:"
    ps -eo pid,ppid,etime,stat,wchan:24,args --forest
    cat "$log"
    for f in $(ls -t "$work"/*/calibration/*.log "$work"/*/runs/*/run.log 2>/dev/null | head -3); do
      echo "== the end of $f"; tail -20 "$f"
    done
    kill -INT "$pid"; wait "$pid"
    fail "$what: still running after $bound_s s"
  fi
  wait "$pid"
}
export OPENBLAS_NUM_THREADS=1
# A testbed of this name left up (an earlier run killed) would be reused and left up again.
"$cnnpar" testbed destroy --name "$name" -q
command=("$cnnpar" validate "$grid" --out "$work/v" --testbed "$name")

# 1. Interrupted during the first calibration.
"${command[@]}" >"$work/interrupted.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do grep -q "calibrating" "$work/interrupted.log" && break; sleep 0.1; done
grep -q "calibrating" "$work/interrupted.log" || { cat "$work/interrupted.log"; fail "no calibration began"; }
sleep 1
kill -INT "$pid"
wait "$pid"; status=$?
[ "$status" -eq 130 ] || { cat "$work/interrupted.log"; fail "interrupted: status $status (wanted 130)"; }
nothing_left "after SIGINT"
ls "$work"/v/runs/*/result.json >/dev/null 2>&1 && fail "a result was kept from an interrupted calibration"

# 2. The whole subset (about 45 s on 2 cores; a hung run is ended at its limit, 125 s, and run again).
bounded "the run" 420 "$work/run.log" "${command[@]}"; status=$?
cat "$work/run.log"
[ "$status" -eq 0 ] || fail "status $status (wanted 0)"
nothing_left "after the run"
python3 - "$work/v/report.json" <<'PY' || fail "report.json"
import json, math, sys
r = json.load(open(sys.argv[1]))
assert r["configurations"] == 2 and r["finished"] == 2, (r["configurations"], r["finished"])
for engine in ("analytic", "simgrid"):
    mape = r["mape_percent"][engine]
    assert isinstance(mape, (int, float)) and math.isfinite(mape), (engine, mape)
    # A gross-breakage guard, not the acceptance: CI machines are noisy. The subset was within
    # 15 % on the machines of 11-28; on that of 11-29 17-29 % short while the executor posted
    # each step's receive before its send, 6 and 14 % after; another schedule or platform is off
    # by far more.
    assert mape < 50, (engine, mape)
    assert math.isfinite(r["r_mae_points"][engine]), engine
for result in r["results"]:
    assert result["measured"]["iteration_s"] > 0, result["key"]
    assert set(result["error_percent"]) == {"analytic", "simgrid"}, result["key"]
    # Real compute: each run's undisturbed ops were timed; a run off by more than the tolerance
    # was measured again, up to run_attempts, and the one nearest the calibration is kept. An
    # off first run calibrated compute again, and is not kept.
    ratios = result["attempt_compute_speed_ratios"]
    counted = ratios[1:] if result["compute_recalibrated"] else ratios
    assert 1 <= len(counted) <= r["run_attempts"] and all(x > 0 for x in ratios), (result["key"], ratios)
    assert result["compute_speed_ratio"] == min(counted, key=lambda x: abs(x - 1)), result["key"]
    tolerance = r["tolerance"]["compute_speed_percent"] / 100
    assert all(abs(x - 1) > tolerance for x in ratios[:-1]), (result["key"], ratios)
    # A recalibrated result is predicted on the new file; so are the later configurations of its
    # group, which were not recalibrated themselves.
    assert "-recalibrated-" in result["platform"] or not result["compute_recalibrated"], result["key"]
assert r["ranking_groups"] == 1
# The testbed's tbf bucket is part of every calibrated platform, with the rate its burst passes
# at (measured: never below the link's bandwidth).
burst = r["environment"]["target"]["burst_bytes"]
for result in r["results"]:
    network = json.load(open(result["platform"]))["network"]
    assert network["link_burst"] == f"{burst:g}B", (network.get("link_burst"), burst)
    peak = float(network["link_peak_bandwidth"].removesuffix("Bps"))
    assert peak >= float(network["bandwidth"].removesuffix("Bps")), network
PY
[ -s "$work/v/report.md" ] && [ -s "$work/v/report.csv" ] || fail "report.md or report.csv missing"
cp "$work/v/report.json" "$work/first.json"

# 3. Resumed: nothing to run.
bounded "the resumed run" 120 "$work/again.log" "${command[@]}"; status=$?
[ "$status" -eq 0 ] || { cat "$work/again.log"; fail "resumed: status $status"; }
grep -q "2 finished, 0 to run" "$work/again.log" || { cat "$work/again.log"; fail "the finished configurations ran again"; }
python3 - "$work/first.json" "$work/v/report.json" <<'PY' || fail "the resumed report differs"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a["results"] == b["results"] and a["mape_percent"] == b["mape_percent"]
PY
nothing_left "after the resumed run"

# 4. Compute calibrated again: with a compute speed tolerance of 0 every first run is off, so
#    compute is measured again over the group's calibration (kept from step 2: nothing else is
#    calibrated), the configuration predicted again, and run_attempts more runs made.
mkdir -p "$work/r" && cp -r "$work/v/calibration" "$work/r/"
python3 - "$grid" "$work/zero.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
g["strategies"] = g["strategies"][:1]
g.setdefault("tolerance", {})["compute_speed_percent"] = 0
json.dump(g, open(sys.argv[2], "w"))
PY
bounded "the recalibrated run" 420 "$work/recalibrated.log" "$cnnpar" validate "$work/zero.json" --out "$work/r" --testbed "$name"; status=$?
[ "$status" -eq 0 ] || { cat "$work/recalibrated.log"; fail "recalibration: status $status"; }
grep -q "calibrating compute again" "$work/recalibrated.log" || { cat "$work/recalibrated.log"; fail "no recalibration"; }
grep -q "calibrating veeriah-cifar10 on" "$work/recalibrated.log" && fail "the kept network calibration was measured again"
python3 - "$work/r/report.json" <<'PY' || fail "recalibrated report.json"
import json, os, re, sys
r = json.load(open(sys.argv[1]))
(result,) = r["results"]
assert result["compute_recalibrated"], result
# Numbered after any recalibration step 2 made (its folder was copied).
assert re.search(r"_1Gbps_p2-recalibrated-[0-9]+\.json$", result["platform"]), result["platform"]
assert os.path.exists(result["platform"]), result["platform"]
assert len(result["attempt_compute_speed_ratios"]) == r["run_attempts"] + 1, result["attempt_compute_speed_ratios"]
assert r["compute_speed_check"]["recalibrated"] == 1, r["compute_speed_check"]
# The new platform kept the group's network calibration and replaced its compute.
old = json.load(open(re.sub(r"-recalibrated-[0-9]+", "", result["platform"])))
new = json.load(open(result["platform"]))
assert new["network"] == old["network"], "network changed"
assert new["calibration"]["gemm_flops"] != old["calibration"]["gemm_flops"], "compute not measured again"
PY
nothing_left "after the recalibrated run"

# 5. MPICH's own collectives: the network calibrated again in that mode (compute kept).
mkdir -p "$work/m/calibration" && cp "$work"/v/calibration/*_compute.json "$work/m/calibration/" || fail "no compute calibration"
python3 - "$grid" "$work/mpi.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))
g["strategies"] = ["dp_layerwise"]
g["collectives"] = ["mpi"]
json.dump(g, open(sys.argv[2], "w"))
PY
compute_before=$(md5sum "$work"/m/calibration/*_compute.json)
bounded "the mpi collectives run" 420 "$work/mpi.log" "$cnnpar" validate "$work/mpi.json" --out "$work/m" --testbed "$name"; status=$?
[ "$status" -eq 0 ] || { cat "$work/mpi.log"; fail "mpi collectives: status $status"; }
[ "$(md5sum "$work"/m/calibration/*_compute.json)" = "$compute_before" ] || fail "the kept compute calibration was measured again"
python3 - "$work/m/report.json" <<'PY' || { cat "$work/mpi.log"; fail "mpi collectives report.json"; }
import json, sys
r = json.load(open(sys.argv[1]))
(result,) = r["results"]
assert result["collectives"] == "mpi" and result["key"].endswith("_mpi"), result["key"]
assert result["label"].endswith(", mpi collectives"), result["label"]
assert "_p2_mpi" in result["platform"], result["platform"]
for engine in ("analytic", "simgrid"):
    assert r["mape_percent"][engine] < 50, (engine, r["mape_percent"])
    assert set(r["mape_percent_by"]["collectives"]) == {"mpi"}, r["mape_percent_by"]
network = json.load(open(result["platform"]))["network"]
# Debian's MPICH is 4.0: the library's collectives are priced as its selection picks them.
assert all(network["algorithms"].get(k) == "mpich" for k in ("allreduce", "allgather", "reduce_scatter")), network["algorithms"]
PY
nothing_left "after the mpi collectives run"
echo "validate: interrupted, measured, resumed, recalibrated, over MPICH's collectives; nothing left behind"
