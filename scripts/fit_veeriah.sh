#!/bin/sh
# Veeriah & Modi held out: fits veeriah-node on Table 1, scheme a, MNIST, at K = 2 and 3 (4 and 6
# ranks), then predicts every other Table 1 number without refitting.
#   * free: nodes.kinds.0.device.default_efficiency (the GPU's rate) and network.bandwidth (the
#     GPU-to-GPU path: veeriah-node's messages are direct, GPU-aware MPI through PCIe), one
#     number each for the whole platform.
#   * K = 4 is not fitted: there the paper's 8 ranks share 4 GPUs and one memory bus, which the
#     platform does not model (its source says so); reports/veeriah2017-heldout/README.md shows
#     from the paper's Tables 4 and 5 that no rate the model has can reach it.
# Writes scenarios/platforms/veeriah-node-fitted.json (the study's platform) and the fit report
# under reports/veeriah2017-heldout/. Then regenerate the study's report and approve its golden
# (scripts/approve_golden.sh), and review the diff.
# Usage: scripts/fit_veeriah.sh [path/to/cnnpar [OUT_DIR]]   (default: build/bin/cnnpar; OUT_DIR
# holds the platform and the report instead of the tree, as tests/cli/heldout_fit.sh uses it)
set -eu
study=fit_veeriah
out=reports/veeriah2017-heldout
. "$(dirname "$0")/fit_prologue.sh"
"$exe" fit --platform veeriah-node --study veeriah2017-table1 --only "series=mnist scheme a" --only nodes=4,6 \
  --free nodes.kinds.0.device.default_efficiency,network.bandwidth \
  --held-out veeriah2017-table1 \
  --out "$platforms/veeriah-node-fitted.json" --json "$out/fit.json" > "$out/fit.txt"
[ $# -ge 2 ] || cat "$out/fit.txt"
