#include "analysis/loss_curve.hpp"

#include <algorithm>

#include "analysis/metrics.hpp"

namespace cnnpar {

std::optional<double> iteration_end_s(const Trace& trace, int iteration) {
  const std::vector<int> servers = server_ranks(trace);
  std::optional<double> end_s;
  for (const RankTrace& rank : trace.ranks) {
    if (std::find(servers.begin(), servers.end(), rank.rank) != servers.end()) continue;
    for (const MarkRecord& mark : rank.marks)
      if (mark.iteration == iteration) end_s = std::max(end_s.value_or(mark.time_s), mark.time_s);
  }
  return end_s;
}

std::vector<LossPoint> loss_curve(const Trace& measured) {
  std::vector<LossPoint> curve;
  const auto loss = measured.metadata.find("loss");
  if (loss == measured.metadata.end() || !loss->is_array()) return curve;
  for (std::size_t i = 0; i < loss->size(); ++i) {
    const std::optional<double> end_s = iteration_end_s(measured, int(i));
    if (!end_s || !(*loss)[i].is_number()) continue;
    curve.push_back({.iteration = int(i), .end_s = *end_s, .loss = (*loss)[i].get<double>()});
  }
  return curve;
}

std::optional<LossPoint> first_reaching(const std::vector<LossPoint>& curve, double target_loss) {
  for (const LossPoint& point : curve)
    if (point.loss <= target_loss) return point;
  return std::nullopt;
}

}  // namespace cnnpar
