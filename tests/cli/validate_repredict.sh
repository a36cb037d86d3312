#!/usr/bin/env bash
# `cnnpar validate --repredict` prices finished runs again without running them: on unchanged
# calibrations it gives the predictions the validation gave; on changed ones it gives what
# `cnnpar trace --like` (which rebuilds the configuration from the measured trace, not from the
# run's spec) predicts on them, the measurements unchanged; also in a work folder that moved.
# Usage: validate_repredict.sh CNNPAR (needs mpiexec and cnnpar-run beside CNNPAR; about 10 s)
set -euo pipefail
cnnpar=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "validate_repredict: $*" >&2; exit 1; }

# A validation on this host (a cluster of one: links "native"), two small configurations.
cat > grid.json <<'GRID'
{"name": "repredict", "networks": ["lenet-5"], "strategies": ["dp", "dp_layerwise"], "batches": [8], "ranks": [2],
 "iterations": 3, "warmup": 1, "calibration": {"repeats": 1}}
GRID
"$cnnpar" validate grid.json --mpiexec mpiexec --out v -q
cp -r v validated

# Unchanged calibrations: the same predictions, to the last digit the JSON keeps.
"$cnnpar" validate grid.json --repredict --out v -q
for result in validated/runs/*/result.json; do
  cmp "$result" "v/${result#validated/}" || fail "a prediction again on the same calibration differs: $result"
done

# Slower links in every calibration (half the bandwidth, ten times the latency), in a work
# folder that moved (the specs name the old calibration paths).
mv v moved
python3 - moved/calibration <<'EOF'
import glob, json, re, sys
for name in glob.glob(f"{sys.argv[1]}/*.json"):
    platform = json.load(open(name))
    network = platform.get("network", {})
    for key, factor in (("bandwidth", 0.5), ("latency", 10.0)):
        if key in network:
            value, unit = re.fullmatch(r"([0-9.eE+-]+)(\D+)", network[key]).groups()
            network[key] = f"{float(value) * factor!r}{unit}"
    json.dump(platform, open(name, "w"), indent=2)
EOF
"$cnnpar" validate grid.json --repredict --out moved --report moved-report -q

for folder in moved/runs/*/; do
  key=$(basename "$folder")
  platform=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["platform"])' "$folder/result.json")
  [ -f "$platform" ] || fail "$key: result names the calibration $platform, not in the moved folder"
  cmp "$folder/measured.json" "validated/runs/$key/measured.json" || fail "$key: the measurement changed"
  for engine in analytic simgrid; do
    "$cnnpar" trace --like "$folder/measured.json" --platform "$platform" --engine "$engine" --out "like-$engine.json" -q
    python3 - "$folder" "$engine" "validated/runs/$key" <<'EOF' || fail "$key, $engine: see above"
import json, sys
folder, engine, before = sys.argv[1:4]
def last_marks(file):
    return [rank["marks"][-1]["time"] for rank in json.load(open(file))["ranks"]]
like, again, old = last_marks(f"like-{engine}.json"), last_marks(f"{folder}/{engine}.json"), last_marks(f"{before}/{engine}.json")
# As trace --like predicts the measured configuration on the changed platform (only the JSON's
# rounding between them), and slower than on the calibrated one.
tolerance = 1e-12
if any(abs(a - b) > tolerance * abs(b) for a, b in zip(again, like)):
    sys.exit(f"{engine}: predicted again {again}, trace --like {like}")
if not all(a > b for a, b in zip(again, old)):
    sys.exit(f"{engine}: on slower links {again}, not slower than {old}")
result = json.load(open(f"{folder}/result.json"))
measured = json.load(open(f"{before}/result.json"))["measured"]
if result["measured"] != measured:
    sys.exit(f"{engine}: the result's measured metrics changed")
report = json.load(open("moved-report/report.json"))
row = next(r for r in report["results"] if r["key"] == result["key"])
if row["predicted"][engine] != result["predicted"][engine]:
    sys.exit(f"{engine}: the report's prediction is not the result's")
EOF
  done
done

# A finished run without its spec cannot be priced again: status 2 naming the file.
rm moved/runs/lenet-5_dp_native_b8_p2/spec.json
status=0
"$cnnpar" validate grid.json --repredict --out moved -q 2> missing.txt || status=$?
[ $status -eq 2 ] || fail "a run without spec.json gave status $status, not 2"
grep -q "runs/lenet-5_dp_native_b8_p2/spec.json" missing.txt || fail "the message does not name spec.json: $(cat missing.txt)"
echo "validate_repredict: the same predictions on the same calibrations, trace --like's on changed ones"
