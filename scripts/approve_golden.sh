#!/bin/sh
# The approve step for golden predictions: regenerates tests/golden/<name>.csv for every case in
# tests/golden/cases.txt and tests/golden/studies/<study>/*.csv for every study in
# scenarios/studies with the current cnnpar. Run it only after a deliberate model change,
# then review `git diff tests/golden` and commit the new files with the change.
# Usage: scripts/approve_golden.sh [path/to/cnnpar]   (default: build/bin/cnnpar)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
exe=${1:-$root/build/bin/cnnpar}
[ -x "$exe" ] || { echo "approve_golden: no cnnpar at $exe (pass its path)" >&2; exit 1; }
grep -v '^#' "$root/tests/golden/cases.txt" | while IFS='|' read -r name args; do
  name=$(echo "$name" | tr -d '[:space:]')
  [ -n "$name" ] || continue
  # shellcheck disable=SC2086  # the arguments are meant to split
  "$exe" $args --quiet --serial --csv "$root/tests/golden/$name.csv"
  echo "approved tests/golden/$name.csv"
done
rm -rf "$root/tests/golden/studies"
for study in "$root"/scenarios/studies/*.json; do
  name=$(basename "$study" .json)
  tmp=$(mktemp -d)
  "$exe" report --quiet --serial --no-plot --study "$study" --out "$tmp"
  mkdir -p "$root/tests/golden/studies/$name"
  cp "$tmp/$name"/*.csv "$root/tests/golden/studies/$name/"
  rm -rf "$tmp"
  echo "approved tests/golden/studies/$name"
done
