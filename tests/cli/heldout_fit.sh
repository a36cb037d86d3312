#!/bin/sh
# A seed study held out: re-running scripts/fit_NAME.sh must give the fitted values of the
# committed fit (reports/DIR/fit.json and the fitted platform it wrote). A changed model shows up
# here as a diff; rerun scripts/fit_NAME.sh and review it (the approve step).
# Usage: heldout_fit.sh CNNPAR NAME REPORT_DIR   e.g. heldout_fit.sh build/bin/cnnpar veeriah veeriah2017-heldout
set -eu
cnnpar=$1
name=$2
report=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sh "$root/scripts/fit_$name.sh" "$cnnpar" "$work"
# Every fitted value the observations determine (1 sigma below the value itself) within 1e-6,
# relative: another compiler or optimisation level may move the last digits of a converged
# least-squares fit, not more. A value they do not determine may move along its flat direction,
# which moves the predictions only slightly: every prediction of the fit (fitted and held-out
# observations) within 1e-5.
python3 - "$root/reports/$report/fit.json" "$work/fit.json" "$name" <<'PY'
import json, sys
committed, fresh = (json.load(open(path)) for path in sys.argv[1:3])
name = sys.argv[3]
def close(a, b, tolerance):
    return abs(a - b) <= tolerance * abs(a)
problems = []
if [p["path"] for p in committed["free"]] != [p["path"] for p in fresh["free"]]:
    problems.append("the free paths differ")
else:
    for old, new in zip(committed["free"], fresh["free"]):
        sigma = old.get("sigma")
        if sigma is not None and sigma > abs(old["fitted"]):
            print(f"heldout_fit: {name}: {old['path']} not determined (sigma {sigma:.3g}), not compared")
            continue
        if not close(old["fitted"], new["fitted"], 1e-6):
            problems.append(f"{old['path']}: committed {old['fitted']!r}, now {new['fitted']!r}")
def predictions(report):
    rows = list(report["observations"])
    for study in report["held_out"]:
        rows += study["observations"]
    return [(row["source"], row["label"], row["predicted"]) for row in rows]
old_rows, new_rows = predictions(committed), predictions(fresh)
if [row[:2] for row in old_rows] != [row[:2] for row in new_rows]:
    problems.append("the observations differ")
else:
    for (source, label, old), (_, _, new) in zip(old_rows, new_rows):
        if not close(old, new, 1e-5):
            problems.append(f"{source} {label}: committed {old!r}, now {new!r}")
for problem in problems:
    print(f"heldout_fit: {name}: the fit changed: {problem} (rerun scripts/fit_{name}.sh and review)", file=sys.stderr)
sys.exit(1 if problems else 0)
PY
echo "heldout_fit: $name: the fit reproduces reports/$report/fit.json"
