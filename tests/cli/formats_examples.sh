#!/usr/bin/env bash
# Keeps docs/formats.md honest. The fenced block after a line `<!-- example: NAME -->` is an
# input: it is written to a file and given to the tool that reads it, which must accept it.
# The block after `<!-- output: NAME -->` is an output: the same command is run afresh on the
# same small case, and every key of the example (at every depth; an array element must match
# some element of the fresh array) must be in the fresh output; a CSV example must have the
# fresh header. Every tag below must be present, and no other.
# The run-spec, dataset, measured-trace, compare and calibrated checks start cnnpar-run under
# mpiexec (2 ranks) and are skipped without them; simulate is skipped without SimGrid.
# Usage: formats_examples.sh [FORMATS_MD [BIN_DIR]]   (BIN_DIR also from the environment)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
doc=${1:-$here/../../docs/formats.md}
bin=${2:-${BIN_DIR:-$here/../../build/bin}}
source_dir=$(cd "$(dirname "$doc")/.." && pwd)
cnnpar=$bin/cnnpar
run=$bin/cnnpar-run
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
[ -x "$cnnpar" ] || { echo "formats_examples: no $cnnpar" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/in" "$work/out" "$work/fresh"

failures=0
fail() { echo "formats_examples: FAIL: $*" >&2; failures=$((failures + 1)); }
skip() { echo "formats_examples: skipped: $*"; }
# Runs a command that must succeed; its stderr is shown on failure.
must() {
  local what=$1; shift
  if ! "$@" > "$work/log" 2>&1; then
    fail "$what: $* exited non-zero:"; sed 's/^/    /' "$work/log" >&2
    return 1
  fi
}
have_mpi=0
if [ -x "$run" ] && command -v mpiexec > /dev/null; then have_mpi=1; fi

# ---- extract the tagged blocks ------------------------------------------------------------
python3 - "$doc" "$work" <<'EOF' || exit 1
import json, re, sys
doc, work = sys.argv[1], sys.argv[2]
inputs = {"network", "network-graph", "platform", "platform-kinds", "assign", "study", "validation-grid", "run-spec", "schedule"}
outputs = {"trace", "measured-trace", "chrome", "predict", "simulate", "predict-csv", "compare",
           "balance", "layers", "list", "calibrated", "fit", "validation-report", "validation-csv"}
lines = open(doc, encoding="utf-8").read().split("\n")
found, errors = {}, []
tag = re.compile(r"^<!-- (example|output): ([a-z0-9-]+) -->$")
i = 0
while i < len(lines):
    m = tag.match(lines[i].strip())
    if not m:
        i += 1
        continue
    kind, name = m.groups()
    if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
        errors.append(f"line {i + 1}: the tag {name} is not followed by a ``` fence")
        i += 1
        continue
    lang = lines[i + 1][3:].strip()
    j = i + 2
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    body = "\n".join(lines[i + 2:j]) + "\n"
    expected = inputs if kind == "example" else outputs
    if name not in expected:
        errors.append(f"line {i + 1}: unknown {kind} tag {name} (formats_examples.sh checks {sorted(expected)})")
    elif (kind, name) in found:
        errors.append(f"line {i + 1}: {kind} {name} appears twice")
    else:
        found[(kind, name)] = True
        if lang == "json":
            try:
                json.loads(body)
            except ValueError as e:
                errors.append(f"line {i + 1}: {kind} {name} is not valid JSON: {e}")
        folder = "in" if kind == "example" else "out"
        with open(f"{work}/{folder}/{name}.{lang}", "w", encoding="utf-8") as f:
            f.write(body)
    i = j + 1
for name in sorted(inputs):
    if ("example", name) not in found: errors.append(f"no <!-- example: {name} --> block")
for name in sorted(outputs):
    if ("output", name) not in found: errors.append(f"no <!-- output: {name} --> block")
for e in errors: print(f"formats_examples: FAIL: {doc}: {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
EOF
in=$work/in
out=$work/out
fresh=$work/fresh
cd "$work"

# ---- inputs: each must be accepted --------------------------------------------------------
must "network example" "$cnnpar" predict --network "$in/network.json" --batch 16 --nodes 1,2 -q || true
must "network-graph example" "$cnnpar" predict --network "$in/network-graph.json" --strategy dp_buckets --batch 16 \
     --nodes 1,2 -q || true
must "platform example" "$cnnpar" predict --network lenet-5 --platform "$in/platform.json" --nodes 1-4 -q || true
must "platform-kinds example" "$cnnpar" predict --network lenet-5 --platform "$in/platform-kinds.json" --nodes 1-3 -q || true
must "assign example" "$cnnpar" predict --strategy per_layer --assign "$in/assign.json" --nodes 1,2 -q || true
must "study example" "$cnnpar" report --study "$in/study.json" --out "$work/report" --no-plot -q || true
must "validation-grid example" "$cnnpar" validate "$in/validation-grid.json" --report-only --out "$work/validation" -q || true
# No command reads a schedule: its keys must be ones model/schedule.cpp's parser accepts.
if [ -f "$source_dir/model/schedule.cpp" ]; then
  python3 - "$in/schedule.json" "$source_dir/model/schedule.cpp" <<'EOF' || failures=$((failures + 1))
import json, re, sys
example = json.load(open(sys.argv[1]))
source = open(sys.argv[2]).read()
accepted = set()
for group in re.findall(r"check_keys\(\s*\{([^}]*)\}", source):
    accepted.update(re.findall(r'"([^"]+)"', group))
bad = []
def walk(value, path):
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in accepted: bad.append(f"{path}/{key}")
            if key != "options": walk(item, f"{path}/{key}")  # options: the strategy's own keys
    elif isinstance(value, list):
        for n, item in enumerate(value): walk(item, f"{path}/{n}")
walk(example, "")
for b in bad: print(f"formats_examples: FAIL: schedule example: {b} is not a key model/schedule.cpp reads", file=sys.stderr)
sys.exit(1 if bad else 0)
EOF
else
  skip "schedule example (no model/schedule.cpp beside $doc)"
fi
if [ $have_mpi = 1 ]; then
  must "run-spec example" mpiexec -n 2 "$run" --spec "$in/run-spec.json" --trace "$work/spec-trace.json" -q || true
  # The dataset layouts: a 16-record CIFAR-10 file and MNIST idx files of 16 images.
  python3 - "$work" <<'EOF'
import os, struct, sys
work = sys.argv[1]
with open(f"{work}/cifar.bin", "wb") as f:
    for i in range(16): f.write(bytes([i % 10]) + bytes((i * 7 + j) % 256 for j in range(3072)))
os.makedirs(f"{work}/mnist")
with open(f"{work}/mnist/train-images-idx3-ubyte", "wb") as f:
    f.write(struct.pack(">IIII", 2051, 16, 28, 28) + bytes((i * 3) % 256 for i in range(16 * 784)))
with open(f"{work}/mnist/train-labels-idx1-ubyte", "wb") as f:
    f.write(struct.pack(">II", 2049, 16) + bytes(i % 10 for i in range(16)))
EOF
  must "dataset cifar10:FILE" mpiexec -n 2 "$run" --network veeriah-cifar10 --dataset "cifar10:$work/cifar.bin" \
    --batch 8 --iterations 2 -q || true
  must "dataset mnist:DIR" mpiexec -n 2 "$run" --network veeriah-mnist --dataset "mnist:$work/mnist" \
    --batch 8 --iterations 2 -q || true
else
  skip "run-spec and dataset examples (no cnnpar-run or mpiexec)"
fi

# ---- outputs: the same commands afresh ------------------------------------------------------
must "trace output" "$cnnpar" trace --network lenet-5 --nodes 2 --iterations 2 --out "$fresh/trace.json" \
  --chrome "$fresh/chrome.json" -q || true
must "predict output" "$cnnpar" predict --network "$in/network.json" --platform "$in/platform.json" --batch 16 \
  --nodes 1,2 --json "$fresh/predict.json" --csv "$fresh/predict-csv.csv" -q || true
if "$cnnpar" simulate --network "$in/network.json" --platform "$in/platform.json" --batch 16 --nodes 1,2 \
     --json "$fresh/simulate.json" -q > "$work/log" 2>&1; then :
elif grep -q "built without SimGrid" "$work/log"; then
  skip "simulate output (built without SimGrid)"; cp "$out/simulate.json" "$fresh/simulate.json"
else
  fail "simulate output:"; sed 's/^/    /' "$work/log" >&2
fi
must "balance output" "$cnnpar" balance --network lenet-5 --nodes 2 --json "$fresh/balance.json" -q || true
must "layers output" "$cnnpar" layers --network lenet-5 --json "$fresh/layers.json" -q || true
must "list output" "$cnnpar" list --json "$fresh/list.json" || true
if "$cnnpar" fit --help > /dev/null 2>&1; then
  must "fit output" "$cnnpar" fit --study "$in/study.json" --free network.bandwidth --held-out lee2017-fig6-vgg-a \
    --out "$work/fitted.json" --json "$fresh/fit.json" -q || true
else
  skip "fit output (built without GSL)"; cp "$out/fit.json" "$fresh/fit.json"
fi
if [ $have_mpi = 1 ]; then
  must "measured trace output" mpiexec -n 2 "$run" --network lenet-5 --batch 8 --iterations 2 \
    --trace "$fresh/measured-trace.json" -q || true
  must "compare output (trace --like)" "$cnnpar" trace --like "$fresh/measured-trace.json" --out "$work/predicted.json" -q || true
  must "compare output" "$cnnpar" compare "$work/predicted.json" "$fresh/measured-trace.json" --json "$fresh/compare.json" -q || true
  must "calibrated output" "$cnnpar" calibrate --network lenet-5 --nodes 2 --batch 8 --repeats 1 --max-message 1048576 \
    --out "$fresh/calibrated.json" || true
  # A validation on this host (a cluster of one: links "native"), two small configurations.
  cat > "$work/validation-grid.json" <<'GRID'
{"name": "formats", "networks": ["lenet-5"], "strategies": ["dp", "dp_layerwise"], "batches": [8], "ranks": [2],
 "iterations": 3, "warmup": 1, "calibration": {"repeats": 1}}
GRID
  if must "validation report" "$cnnpar" validate "$work/validation-grid.json" --mpiexec mpiexec --out "$work/validation-run" -q; then
    cp "$work/validation-run/report.json" "$fresh/validation-report.json"
    cp "$work/validation-run/report.csv" "$fresh/validation-csv.csv"
  fi
else
  skip "measured-trace, compare, calibrated and validation outputs (no cnnpar-run or mpiexec)"
  for name in measured-trace compare calibrated validation-report; do cp "$out/$name.json" "$fresh/$name.json"; done
  cp "$out/validation-csv.csv" "$fresh/validation-csv.csv"
fi

python3 - "$out" "$fresh" <<'EOF' || failures=$((failures + 1))
import csv, io, json, os, sys
out, fresh = sys.argv[1], sys.argv[2]
problems = []
def covers(example, actual):
    """Keys of `example` missing from `actual`, as JSON paths (empty: covered)."""
    if isinstance(example, dict):
        if not isinstance(actual, dict): return ["(not an object)"]
        missing = []
        for key, item in example.items():
            if key not in actual: missing.append(f"/{key}")
            else: missing += [f"/{key}{m}" for m in covers(item, actual[key])]
        return missing
    if isinstance(example, list):
        if not isinstance(actual, list): return ["(not an array)"]
        missing = []
        for n, item in enumerate(example):
            if not isinstance(item, (dict, list)): continue
            tries = [covers(item, candidate) for candidate in actual]
            if not tries: missing.append(f"/{n} (the fresh array is empty)")
            elif not any(not t for t in tries): missing += [f"/{n}{m}" for m in min(tries, key=len)]
        return missing
    return []
for file in sorted(os.listdir(out)):
    name, lang = file.rsplit(".", 1)
    example_text = open(f"{out}/{file}").read()
    fresh_file = f"{fresh}/{name}.{lang}"
    if not os.path.exists(fresh_file):
        problems.append(f"output {name}: no fresh output to compare with")
        continue
    fresh_text = open(fresh_file).read()
    if lang == "json":
        for path in covers(json.loads(example_text), json.loads(fresh_text)):
            problems.append(f"output {name}: {path} is in the example but not in a fresh output")
    elif lang == "csv":
        rows = list(csv.reader(io.StringIO(example_text)))
        header = next(csv.reader(io.StringIO(fresh_text)))
        if rows[0] != header:
            problems.append(f"output {name}: header {','.join(rows[0])} differs from the fresh {','.join(header)}")
        for n, row in enumerate(rows[1:], start=2):
            if len(row) != len(header): problems.append(f"output {name}: row {n} has {len(row)} fields, not {len(header)}")
    else:
        problems.append(f"output {name}: no check for ```{lang} blocks")
for p in problems: print(f"formats_examples: FAIL: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF

if [ $failures -gt 0 ]; then
  echo "formats_examples: $failures failure(s) in $doc" >&2
  exit 1
fi
echo "formats_examples: $(ls "$in" | wc -l) input and $(ls "$out" | wc -l) output examples of $doc checked"
