#!/usr/bin/env bash
# Configures and builds cnnpar into ./build (Release). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# nproc honours OMP_NUM_THREADS (test.sh sets it to 1 for the tests): count the cores.
jobs=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j"$jobs"
