#!/bin/sh
# Runs the README's quick tour exactly as written (with B set to this build's bin folder), in
# an empty folder: every command must exit 0.
# Usage: quick_tour.sh README.md BIN_DIR
set -eu
readme=$1
bin=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# The lines between "## Quick tour"'s ```sh fence and the closing fence.
awk '/^## Quick tour/ {tour = 1; next} tour && /^```sh/ {inside = 1; next} inside && /^```/ {exit} inside' "$readme" \
  | sed "s|^B=build/bin\$|B=$bin|" > "$work/tour.sh"
grep -q "^B=$bin\$" "$work/tour.sh" || { echo "quick_tour: no 'B=build/bin' line in $readme" >&2; exit 1; }
cd "$work"
sh -eux tour.sh
echo "quick_tour: $(grep -c . tour.sh) commands ran"
