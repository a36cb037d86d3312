#!/bin/sh
# Lee et al. held out: re-running scripts/fit_lee.sh must give the fitted
# values of the committed platform (scenarios/platforms/cori-haswell-fitted.json). A changed
# model shows up here as a diff; rerun scripts/fit_lee.sh and review it (the approve step).
set -eu
cnnpar=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sh "$root/scripts/fit_lee.sh" "$cnnpar" "$work"
# The fitted values within 1e-6 (relative): another compiler or optimisation level may move
# the last digits of a converged least-squares fit, not more.
number() { grep "\"$1\":" "$2" | head -1 | sed 's/^[^:]*: *"\{0,1\}\([0-9.eE+-]*\).*/\1/'; }
status=0
for key in bandwidth memory_bandwidth; do
  committed=$(number "$key" "$root/scenarios/platforms/cori-haswell-fitted.json")
  fresh=$(number "$key" "$work/cori-haswell-fitted.json")
  if ! awk -v a="$committed" -v b="$fresh" 'BEGIN { d = (a - b) / a; if (d < 0) d = -d; exit !(d <= 1e-6) }'; then
    echo "lee_fit: $key changed: committed $committed, now $fresh (rerun scripts/fit_lee.sh and review)" >&2
    status=1
  fi
done
grep -q '"image_parallel_kernels": true' "$work/cori-haswell-fitted.json" || { echo "lee_fit: the fit lost --set" >&2; status=1; }
[ $status -eq 0 ] && echo "lee_fit: the fit reproduces cori-haswell-fitted.json"
exit $status
