#!/usr/bin/env bash
# README command 2: install what is missing, build, and run every test (unit, golden, CLI,
# SimGrid and MPI integration). .ci/run calls this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
bash scripts/build.sh
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
cd build
ctest --output-on-failure -j"$(nproc 2>/dev/null || echo 2)" --timeout 900
# libFuzzer targets (tests/fuzz): every regression input, then 15 s per target; any crash fails.
cd ..
bash scripts/fuzz.sh --ci
