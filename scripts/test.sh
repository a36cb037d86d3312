#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test (unit, golden, CLI,
# SimGrid and MPI integration), then the sanitizer runs (scripts/sanitize.sh) and the fuzz
# targets (scripts/fuzz.sh --ci). .ci/run calls this. Each stage prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $(( SECONDS - start )) s"
}
source scripts/build_env.sh
stage setup bash scripts/setup.sh --test
stage build bash scripts/build.sh
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
stage tests bash -c "cd build && ctest --output-on-failure -j$jobs --timeout 900"
# Sanitizers: ASan+UBSan over the whole suite (a clang build that also holds the
# libFuzzer targets), TSan over the communication thread.
stage asan bash scripts/sanitize.sh asan
# libFuzzer targets (tests/fuzz) from that build: every regression input, then 5 s per target.
stage fuzz bash scripts/fuzz.sh --ci --build build-asan
stage tsan bash scripts/sanitize.sh tsan
echo "test.sh: all stages passed in $SECONDS s"
