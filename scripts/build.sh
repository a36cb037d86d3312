#!/usr/bin/env bash
# Configures and builds cnnpar into ./build (Release). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
cmake --build build -j"$jobs"
