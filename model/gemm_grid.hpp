#pragma once
// The calibrated GEMM grid a platform holds (docs/formats.md "Compute time of an op"):
// `cnnpar calibrate` stores one FLOP rate per measured shape, keyed "gemm MxNxK phase";
// system/gemm_rate.hpp prices any shape from it.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/cost.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

/** One measured point: FLOP/s of the GEMM (m, n, k) in `phase` (nullopt: any phase). */
struct GemmGridPoint {
  GemmShape shape;
  std::optional<Phase> phase;
  double rate_flops = 0;
};

/** "gemm MxNxK" or "gemm MxNxK forward|backward_data|backward_weight" (the key of
 *  calibration.gemm_flops). @throws std::invalid_argument naming what is wrong. */
GemmGridPoint parse_gemm_key(const std::string& key, double rate_flops);
/** The key of a point: GemmShape::to_string(), then " phase" when it has one. */
std::string gemm_key(const GemmShape& shape, std::optional<Phase> phase);

/** The measured points, grouped by phase for interpolation (built once per platform). */
class GemmGrid {
 public:
  /** @throws std::invalid_argument for a key parse_gemm_key rejects or a rate <= 0. */
  explicit GemmGrid(const std::map<std::string, double>& rates_flops);

  struct Point {
    std::array<double, 3> log_mnk;  ///< natural logs of m, n, k
    double rate_flops;
  };
  /** The group of a phase's points: 0..2 = forward, backward_data, backward_weight; 3 =
   *  keys without a phase (and the update phase, which has no GEMMs). */
  static int group_of(Phase phase);
  /** Points of one group (group_of), index 3 for keys without a phase. */
  const std::vector<Point>& points(int group) const { return groups_[std::size_t(group)]; }

 private:
  std::array<std::vector<Point>, 4> groups_;
};

}  // namespace cnnpar
