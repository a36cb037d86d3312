#!/usr/bin/env bash
# README command 1: install what is missing, build, and run the main job on the embedded
# default scenario (VGG-A on Cori Haswell, Lee et al. k = 9, f = 2, batch 256, 1-128 nodes).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
mkdir -p out
./build/bin/cnnpar predict --json out/predict.json --csv out/predict.csv "$@"
echo "cnnpar: wrote out/predict.json and out/predict.csv" >&2
