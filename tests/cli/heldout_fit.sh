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
# The fitted values within 1e-6 (relative), in the order of the free paths: another compiler or
# optimisation level may move the last digits of a converged least-squares fit, not more.
fitted() { grep '"fitted":' "$1" | sed 's/^[^:]*: *\([0-9.eE+-]*\).*/\1/'; }
fitted "$root/reports/$report/fit.json" > "$work/committed.txt"
fitted "$work/fit.json" > "$work/fresh.txt"
if ! paste "$work/committed.txt" "$work/fresh.txt" |
    awk -F'\t' '{ if ($1 == "" || $2 == "") exit 1; d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > 1e-6) exit 1 }
                END { if (NR == 0) exit 1 }'; then
  echo "heldout_fit: $name: the fit changed: committed" $(cat "$work/committed.txt") "now" $(cat "$work/fresh.txt") \
    "(rerun scripts/fit_$name.sh and review)" >&2
  exit 1
fi
echo "heldout_fit: $name: the fit reproduces reports/$report/fit.json"
