#include "system/gemm_rate.hpp"

#include <algorithm>
#include <cmath>

#include "base/error.hpp"

namespace cnnpar {

namespace {

// Two logs of integer dimensions are the same dimension when they differ by less than this.
constexpr double kSameLog = 1e-9;

using PointRef = const GemmGrid::Point*;

/** Interpolates over `points` along axes order[level..2] (see gemm_rate). */
double interpolate(const std::vector<PointRef>& points, const std::array<double, 3>& query,
                   const std::array<int, 3>& order, int level, bool& out_of_range) {
  CNNPAR_ASSERT(!points.empty(), "GEMM grid interpolation over no points");
  if (level == 3) {
    // Only equal shapes remain (keys are unique per group, so one point).
    double sum = 0;
    for (PointRef p : points) sum += p->rate_flops;
    return sum / double(points.size());
  }
  const int axis = order[std::size_t(level)];
  const double q = query[std::size_t(axis)];
  std::vector<double> values;
  for (PointRef p : points) values.push_back(p->log_mnk[std::size_t(axis)]);
  std::sort(values.begin(), values.end());
  const auto on = [&](double value) {
    std::vector<PointRef> kept;
    for (PointRef p : points)
      if (std::abs(p->log_mnk[std::size_t(axis)] - value) < kSameLog) kept.push_back(p);
    return interpolate(kept, query, order, level + 1, out_of_range);
  };
  if (q <= values.front() + kSameLog) {
    if (q < values.front() - kSameLog) out_of_range = true;
    return on(values.front());
  }
  if (q >= values.back() - kSameLog) {
    if (q > values.back() + kSameLog) out_of_range = true;
    return on(values.back());
  }
  const auto upper = std::lower_bound(values.begin(), values.end(), q - kSameLog);
  if (std::abs(*upper - q) < kSameLog) return on(*upper);
  const double hi = *upper, lo = *(upper - 1);
  const double t = (q - lo) / (hi - lo);  // linear in log(dimension)
  return (1 - t) * on(lo) + t * on(hi);
}

}  // namespace

std::optional<GemmRate> gemm_rate(const GemmGrid& grid, const GemmShape& shape, Phase phase) {
  if (shape.m < 1 || shape.n < 1 || shape.k < 1) return std::nullopt;
  const int own = GemmGrid::group_of(phase);
  const std::vector<GemmGrid::Point>& points = own < 3 && !grid.points(own).empty() ? grid.points(own) : grid.points(3);
  if (points.empty()) return std::nullopt;
  std::vector<PointRef> all;
  all.reserve(points.size());
  for (const auto& p : points) all.push_back(&p);
  // The per-rank batch scales N (forward, backward_data) or K (backward_weight): resolve the
  // layer's fixed dimensions first, so a query interpolates along its own layer's line.
  const std::array<int, 3> order = phase == Phase::backward_weight ? std::array<int, 3>{0, 1, 2} : std::array<int, 3>{0, 2, 1};
  const std::array<double, 3> query = {std::log(double(shape.m)), std::log(double(shape.n)), std::log(double(shape.k))};
  GemmRate out;
  out.rate_flops = interpolate(all, query, order, 0, out.out_of_range);
  return out;
}

}  // namespace cnnpar
