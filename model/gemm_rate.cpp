#include "model/gemm_rate.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "model/error.hpp"

namespace cnnpar {

namespace {

// Two logs of integer dimensions are the same dimension when they differ by less than this.
constexpr double kSameLog = 1e-9;

std::int64_t parse_dimension(std::string_view text, const std::string& key) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1)
    throw std::invalid_argument(fmt::format("\"{}\" is not \"gemm MxNxK[ phase]\" with dimensions >= 1", key));
  return value;
}

int group_of(Phase phase) {
  switch (phase) {
    case Phase::forward: return 0;
    case Phase::backward_data: return 1;
    case Phase::backward_weight: return 2;
    case Phase::update: break;
  }
  return 3;
}

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

GemmGridPoint parse_gemm_key(const std::string& key, double rate_flops) {
  const std::string_view text(key);
  const std::string_view prefix = "gemm ";
  if (text.substr(0, prefix.size()) != prefix)
    throw std::invalid_argument(fmt::format("\"{}\" is not \"gemm MxNxK[ phase]\"", key));
  std::string_view rest = text.substr(prefix.size());
  GemmGridPoint point;
  point.rate_flops = rate_flops;
  if (const auto space = rest.find(' '); space != std::string_view::npos) {
    const std::string phase_text(rest.substr(space + 1));
    Phase phase{};
    try {
      phase = phase_from_string(phase_text);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(fmt::format("\"{}\": the phase must be forward, backward_data or backward_weight", key));
    }
    if (phase == Phase::update)
      throw std::invalid_argument(fmt::format("\"{}\": the phase must be forward, backward_data or backward_weight", key));
    point.phase = phase;
    rest = rest.substr(0, space);
  }
  const auto x1 = rest.find('x');
  const auto x2 = x1 == std::string_view::npos ? x1 : rest.find('x', x1 + 1);
  if (x2 == std::string_view::npos) throw std::invalid_argument(fmt::format("\"{}\" is not \"gemm MxNxK[ phase]\"", key));
  point.shape.m = parse_dimension(rest.substr(0, x1), key);
  point.shape.n = parse_dimension(rest.substr(x1 + 1, x2 - x1 - 1), key);
  point.shape.k = parse_dimension(rest.substr(x2 + 1), key);
  return point;
}

std::string gemm_key(const GemmShape& shape, std::optional<Phase> phase) {
  return phase ? shape.to_string() + " " + to_string(*phase) : shape.to_string();
}

GemmGrid::GemmGrid(const std::map<std::string, double>& rates_flops) {
  for (const auto& [key, rate] : rates_flops) {
    const GemmGridPoint point = parse_gemm_key(key, rate);
    if (!(rate > 0) || !std::isfinite(rate))
      throw std::invalid_argument(fmt::format("\"{}\": the rate must be positive and finite", key));
    const int group = point.phase ? group_of(*point.phase) : 3;
    groups_[std::size_t(group)].push_back(
        Point{{std::log(double(point.shape.m)), std::log(double(point.shape.n)), std::log(double(point.shape.k))}, rate});
  }
}

std::optional<GemmRate> gemm_rate(const GemmGrid& grid, const GemmShape& shape, Phase phase) {
  if (shape.m < 1 || shape.n < 1 || shape.k < 1) return std::nullopt;
  const int own = group_of(phase);
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
