#!/usr/bin/env bash
# The include check must fail on a planted upward include, a sibling include and a file outside
# every layer, and pass on the same tree without them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/cmake" "$work/model" "$work/analysis" "$work/sim/analytic" "$work/real" "$work/tests"
cp "$root/cmake/layers.txt" "$work/cmake/"
printf '#include "base/error.hpp"\n#include "model/network.hpp"\n' > "$work/model/network.cpp"
printf '#include "model/network.hpp"\n#include "workload/registry.hpp"\n' > "$work/analysis/metrics.cpp"
printf '#include "system/collective.hpp"\n' > "$work/sim/analytic/engine.cpp"
printf '#include "analysis/metrics.hpp"\n#include "real/kernels.hpp"\n' > "$work/tests/anything.cpp"
bash "$here/check_includes.sh" "$work" || { echo "selftest: a clean tree failed" >&2; exit 1; }

expect_failure() {
  local name=$1 file=$2 text=$3 expected=$4
  printf '%s\n' "$text" >> "$work/$file"
  if output=$(bash "$here/check_includes.sh" "$work" 2>&1); then
    echo "selftest: $name passed the check" >&2; exit 1
  fi
  grep -qF "$expected" <<< "$output" || { echo "selftest: $name: expected \"$expected\" in: $output" >&2; exit 1; }
  echo "selftest: $name refused: $(head -n 1 <<< "$output")"
  sed -i '$d' "$work/$file"
}
expect_failure "an upward include" model/network.cpp '#include "analysis/metrics.hpp"' \
  'model/network.cpp:3: includes "analysis/metrics.hpp": model/ may not see analysis/'
expect_failure "a sibling include" sim/analytic/engine.cpp '#include "real/kernels.hpp"' \
  'sim/analytic/engine.cpp:2: includes "real/kernels.hpp": sim/analytic/ may not see real/'
expect_failure "an include of tests/" analysis/metrics.cpp '#include "tests/analysis/hand_trace.hpp"' \
  'never includes tests/'
expect_failure "a climbing include" model/network.cpp '#include "../real/kernels.hpp"' 'climbs out of its folder'
mkdir -p "$work/cli"
expect_failure "a folder of no layer" cli/main.cpp 'int main() {}' 'cli/main.cpp: not in any layer'
rm -rf "$work/cli"
bash "$here/check_includes.sh" "$work" >/dev/null
echo "selftest: passed"
