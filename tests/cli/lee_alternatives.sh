#!/bin/sh
# The table of reports/lee2017-heldout/README.md ("Every mechanism tried") is what
# scripts/lee_alternatives.sh prints now: a changed model shows up as a diff here. Rerun the
# script, review the rows and paste them into the README.
set -eu
cnnpar=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sh "$root/scripts/lee_alternatives.sh" "$cnnpar" | grep '^| .*(E[0-9]*) |' > "$work/now"
grep '^| .*(E[0-9]*) |' "$root/reports/lee2017-heldout/README.md" > "$work/committed"
[ -s "$work/now" ] || { echo "lee_alternatives: the script printed no rows" >&2; exit 1; }
if ! diff "$work/committed" "$work/now"; then
  echo "lee_alternatives: the README's table differs from scripts/lee_alternatives.sh (rerun it and review)" >&2
  exit 1
fi
echo "lee_alternatives: the README's table is the script's output ($(wc -l < "$work/now") rows)"
