#!/bin/sh
# Lee et al. held out: fits cori-haswell on Fig. 6 only (the DP and lee k=9 f=2
# speedups at 128 nodes, N = 256), then predicts Figs. 8-11 without refitting.
#   * --set nodes.image_parallel_kernels=true: Lee's non-GEMM loops run over the images of a
#     node ("non-kernel loops are parallelized using OpenMP", Sec. IV), so a node with fewer
#     images than cores leaves cores idle in im2col, col2im, pooling and element-wise kernels.
#   * free: network.bandwidth (what the DP allreduce gets) and nodes.memory_bandwidth (what
#     the non-GEMM loops get), one number each for the whole platform.
# Writes scenarios/platforms/cori-haswell-fitted.json (the Lee studies' platform) and the fit
# report under reports/lee2017-heldout/. Then regenerate the Lee reports and approve their
# goldens (scripts/approve_golden.sh), and review the diff.
# Usage: scripts/fit_lee.sh [path/to/cnnpar [OUT_DIR]]   (default: build/bin/cnnpar; OUT_DIR
# holds the platform and the report instead of the tree, as tests/cli/lee_fit.sh uses it)
set -eu
study=fit_lee
out=reports/lee2017-heldout
. "$(dirname "$0")/fit_prologue.sh"
# The held-out studies name the fitted platform: fit predicts them on it with the fitted
# values of the free paths (and the --set), the same numbers as written.
"$exe" fit --platform cori-haswell --study lee2017-fig6-vgg-a --only nodes=128 \
  --set nodes.image_parallel_kernels=true --free network.bandwidth,nodes.memory_bandwidth \
  --held-out lee2017-fig8-batch,lee2017-fig9-parameters,lee2017-fig10-f,lee2017-fig11-k \
  --out "$platforms/cori-haswell-fitted.json" --json "$out/fit.json" > "$out/fit.txt"
[ $# -ge 2 ] || cat "$out/fit.txt"
