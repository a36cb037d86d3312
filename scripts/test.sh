#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test (unit, golden, CLI,
# SimGrid and MPI integration), then the fuzz targets (scripts/fuzz.sh --ci) and the sanitizer
# runs (scripts/sanitize.sh). .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
bash scripts/build.sh
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 900
cd ..
# libFuzzer targets (tests/fuzz): every regression input, then 15 s per target; any crash fails.
bash scripts/fuzz.sh --ci
# Sanitizers (issue 8): ASan+UBSan over the whole suite, TSan over the communication thread.
bash scripts/sanitize.sh asan
bash scripts/sanitize.sh tsan
