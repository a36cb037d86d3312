#!/bin/sh
# Marques et al. held out: fits marques-lab on Table 2's CPU column for the 500:1500 network at
# batch 1024 (2, 3 and 4 CPUs), then predicts the other networks, batch 64, the GPU column and
# Fig. 5 without refitting.
#   * free: network.bandwidth (the LAN) and nodes.default_efficiency, the fraction of peak of
#     every kernel class but gemm: the master's pooling, activation, normalisation, softmax and
#     update, which the paper's Matlab runs far from peak ("Comp. time" is 13 to 25 % of one
#     CPU's iteration, Fig. 2, where a roofline at 30 % of peak gives 0.3 to 1.6 %).
#   * marques-gpu and marques-sim take the same fitted values (--also): the GPU cluster's hosts
#     and the simulated cluster run the same Matlab code over the same LAN.
# Writes scenarios/platforms/marques-{lab,gpu,sim}-fitted.json (the three studies' platforms)
# and the fit report under reports/marques2018-heldout/. Then rebuild (the platforms are
# embedded), regenerate the three studies' reports and approve their goldens
# (scripts/approve_golden.sh), and review the diff.
# Usage: scripts/fit_marques.sh [path/to/cnnpar [OUT_DIR]]   (default: build/bin/cnnpar; OUT_DIR
# holds the platforms and the report instead of the tree, as tests/cli/heldout_fit.sh uses it)
set -eu
study=fit_marques
out=reports/marques2018-heldout
. "$(dirname "$0")/fit_prologue.sh"
"$exe" fit --platform marques-lab --study marques2018-table2-cpu --only "series=500:1500 batch 1024" \
  --free network.bandwidth,nodes.default_efficiency \
  --held-out marques2018-table2-cpu,marques2018-table2-gpu \
  --also "marques-gpu=$platforms/marques-gpu-fitted.json" --also "marques-sim=$platforms/marques-sim-fitted.json" \
  --out "$platforms/marques-lab-fitted.json" --json "$out/fit.json" > "$out/fit.txt"
[ $# -ge 2 ] || cat "$out/fit.txt"
