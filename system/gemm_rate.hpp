#pragma once
// GEMM rate of any shape from a calibrated grid (docs/formats.md "Compute time of an op").
//
// `cnnpar calibrate` times the network's own GEMMs along lines of the per-rank batch (the
// batch scales one dimension of each GEMM: N of forward and backward-data GEMMs, K of
// weight-gradient GEMMs) and stores one FLOP rate per point, keyed "gemm MxNxK phase".
// A shape between points is interpolated multilinearly in (log M, log N, log K), the batch
// dimension last, so a calibration made at one batch prices any batch and node count it
// covered; a shape outside the measured range takes the rate of the nearest end (clamped)
// and says so.
#include <optional>

#include "model/cost.hpp"
#include "model/gemm_grid.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

struct GemmRate {
  double rate_flops = 0;
  /** some dimension lay outside the measured range of the points used: clamped there */
  bool out_of_range = false;
};

/** FLOP/s of `shape` in `phase` from `grid`: the points of that phase, else those without a
 *  phase; nullopt when there are none (the caller falls back to the roofline).
 *  Multilinear interpolation of the rate in (log M, log N, log K), resolving the two
 *  dimensions that do not scale with the batch first and the batch one (K for
 *  backward_weight, N otherwise) last: at each level the points whose value on that axis
 *  brackets the query are interpolated linearly in log(value); a value equal to a grid value
 *  keeps only the points on it; a value beyond the range keeps the points at the nearest end
 *  and sets out_of_range. On a full tensor grid this is exact for any rate that is
 *  multilinear in the logs; grid points are reproduced exactly. */
std::optional<GemmRate> gemm_rate(const GemmGrid& grid, const GemmShape& shape, Phase phase);

}  // namespace cnnpar
