# Sourced by scripts/fit_*.sh after `set -eu` with `study` (the script's name) and `out` (its
# report folder under reports/) set, and the script's arguments [path/to/cnnpar [OUT_DIR]].
# Sets exe (cnnpar), out and platforms (where the fitted platforms go: scenarios/platforms, or
# OUT_DIR for both, as the held-out tests use it) and enters the project root.
root=$(cd "$(dirname "$0")/.." && pwd)
exe=${1:-$root/build/bin/cnnpar}
[ -x "$exe" ] || { echo "$study: no cnnpar at $exe (pass its path)" >&2; exit 1; }
cd "$root"
platforms=scenarios/platforms
if [ $# -ge 2 ]; then
  out=$2
  platforms=$2
fi
mkdir -p "$out"
