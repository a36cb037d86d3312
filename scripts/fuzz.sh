#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang, ASan+UBSan) into ./build-fuzz, replays the
# regression inputs, then fuzzes each target with its seed corpus and the dictionary.
#
#   bash scripts/fuzz.sh [--seconds N] [--runs N] [--keep-going] [--ci] [--build DIR] [TARGET...]
#
#   --seconds N   fuzz each target N seconds (default 60)
#   --runs N      stop each target after N executions instead (libFuzzer -runs)
#   --keep-going  fork mode: keep fuzzing after a crash, timeout or OOM (for campaigns)
#   --no-regressions  skip replaying tests/fuzz/regressions (campaigns while they still fail)
#   --ci          5 s per target plus every regression input; exits 1 on any crash
#   --build DIR   fuzz with the targets of an existing build configured with CNNPAR_FUZZ=ON
#                 (CI: the clang ASan+UBSan build of scripts/sanitize.sh asan) instead of
#                 configuring ./build-fuzz
#   TARGET        network platform study trace schedule units compare run_spec (default: all)
#
# Crashes go to tests/fuzz/findings/ (gitignored); a minimised one becomes a regression input
# in tests/fuzz/regressions/TARGET/ (tests/fuzz/README.md). Prints executions per target and
# the total; exits 1 if any target crashed or any regression input failed.
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(network platform study trace schedule units compare run_spec)
seconds=60
runs=""
keep_going=0
regressions=1
targets=()
build=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --keep-going) keep_going=1; shift ;;
    --no-regressions) regressions=0; shift ;;
    --ci) seconds=5; regressions=1; shift ;;
    --build) build="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *)
      if [[ " ${all_targets[*]} " != *" $1 "* ]]; then
        echo "fuzz.sh: unknown target $1 (expected one of: ${all_targets[*]})" >&2
        exit 2
      fi
      targets+=("$1"); shift ;;
  esac
done
[[ ${#targets[@]} -gt 0 ]] || targets=("${all_targets[@]}")

fuzz_dir=tests/fuzz
findings="$fuzz_dir/findings"
mkdir -p "$findings"

# Debian packages clang and libclang-rt-14-dev (libFuzzer and the sanitizer runtimes).
source scripts/build_env.sh
if ! libfuzzer_available; then
  echo "fuzz.sh: needs clang++ and libFuzzer (apt-get install clang libclang-rt-14-dev)" >&2
  exit 2
fi
start=$SECONDS
if [[ -n $build ]]; then
  if ! grep -q '^CNNPAR_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "fuzz.sh: --build $build is not a build configured with -DCNNPAR_FUZZ=ON" >&2
    exit 2
  fi
else
  build=build-fuzz
  # -O1 -g1 without -DNDEBUG: assertions stay on, line tables name file:line in a crash; -O1
  # compiles faster than -O2 -g. Only the libraries the targets need are built.
  cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCNNPAR_FUZZ=ON -DCNNPAR_WITH_SIMGRID=OFF \
    -DCNNPAR_WITH_MPI=OFF -DCNNPAR_BUILD_TESTS=OFF -DCNNPAR_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "${launcher[@]}" >/dev/null
fi
cmake --build "$build" -j"$jobs" --target "${targets[@]/#/cnnpar_fuzz_}"
echo "fuzz.sh: build took $(( SECONDS - start )) s"

# Deep nesting needs 100,000+ bytes of "["; 1 MiB leaves room for large documents.
max_len=1048576
common=(-timeout=10 -rss_limit_mb=2048)
# An allocation input controls beyond 2 GiB fails at once with its stack, not after
# minutes of paging (libFuzzer's own -malloc_limit_mb missed a 16 GB std::vector).
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=1:max_allocation_size_mb=2048"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}print_stacktrace=1"

failed=()
# Regression inputs: one process per file, so every failing file is reported.
for target in "${targets[@]}"; do
  dir="$fuzz_dir/regressions/$target"
  [[ $regressions == 1 && -d $dir ]] || continue
  for input in "$dir"/*; do
    [[ -f $input ]] || continue
    log="$findings/regression-$target-$(basename "$input").log"
    if "$build/fuzz/cnnpar_fuzz_$target" "${common[@]}" "$input" >"$log" 2>&1; then
      rm -f "$log"
    else
      echo "REGRESSION FAILED: $target $input (log: $log)"
      grep -m3 -E "ERROR: |runtime error|fuzz invariant|terminate called|what\(\)" "$log" | sed 's/^/    /' || true
      failed+=("$target:$(basename "$input")")
    fi
  done
done

# Seeds: committed inputs, plus the scenario files for the targets that read them.
seed_dirs() {
  local target="$1"
  [[ -d $fuzz_dir/corpus/$target ]] && echo "$fuzz_dir/corpus/$target"
  case "$target" in
    network) echo scenarios/networks ;;
    platform) echo scenarios/platforms ;;
    study) echo scenarios/studies ;;
  esac
}

declare -A executions
total=0
for target in "${targets[@]}"; do
  # New inputs go to the first (working) corpus folder; the seed folders stay untouched.
  work="$build/corpus/$target"
  mkdir -p "$work"
  mapfile -t seeds < <(seed_dirs "$target")
  options=("${common[@]}" -max_len=$max_len -dict="$fuzz_dir/cnnpar.dict" -print_final_stats=1
           -artifact_prefix="$findings/$target-" -max_total_time="$seconds")
  [[ -n $runs ]] && options+=(-runs="$runs")
  [[ $keep_going == 1 ]] && options+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  log="$findings/$target.log"
  echo "== fuzzing $target (${seconds} s${runs:+, at most $runs runs})"
  before=$(find "$findings" -maxdepth 1 -name "$target-*" ! -name '*.log' | wc -l)
  status=0
  "$build/fuzz/cnnpar_fuzz_$target" "${options[@]}" "$work" "${seeds[@]}" >"$log" 2>&1 || status=$?
  # Plain mode prints stat::number_of_executed_units; fork mode only its "#N" progress lines.
  count=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)
  [[ -n $count ]] || count=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  count=${count:-0}
  executions[$target]=$count
  total=$((total + count))
  # Fork mode may exit 0 after ignored crashes: count the inputs it wrote instead.
  crashes=$(( $(find "$findings" -maxdepth 1 -name "$target-*" ! -name '*.log' | wc -l) - before ))
  if [[ $status -ne 0 || $crashes -gt 0 ]]; then
    echo "   $target: $crashes crash/timeout/OOM input(s) (exit $status; log $log)"
    grep -E "(Test unit written to|runtime error:|==ERROR|fuzz invariant failed|SUMMARY|terminate called|what\(\))" "$log" \
      | sort | uniq -c | sort -rn | head -20 | sed 's/^/    /' || true
    failed+=("$target")
  fi
  echo "   $target: $count executions"
done

echo "== executions"
for target in "${targets[@]}"; do printf '%-10s %12s\n' "$target" "${executions[$target]}"; done
printf '%-10s %12s\n' total "$total"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FAILED: ${failed[*]} (crash inputs and logs in $findings/)"
  exit 1
fi
echo "no crash, timeout or OOM"
