// The fidelity report summarised over a grid's results: MAPE, R error and causes per engine,
// MAPE by each grid dimension, and the strategy rankings.
#include "experiments/validation_summary.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "experiments/validation_causes.hpp"

namespace cnnpar {

using detail::kCauses;

namespace {

constexpr const char* kEngines[] = {"analytic", "simgrid"};

std::string group_label(const ConfigResult& r) {
  return fmt::format("{}, {}, batch {}, {} rank{}{}", r.network, r.link, r.batch, r.ranks, r.ranks == 1 ? "" : "s",
                     collectives_label_suffix(r.collectives));
}

/** The strategies of a group ordered by iteration time, fastest first (ties by name). */
std::vector<std::string> order_by(const std::vector<const ConfigResult*>& group,
                                  const std::function<double(const ConfigResult&)>& iteration_s) {
  std::vector<const ConfigResult*> sorted = group;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const ConfigResult* a, const ConfigResult* b) {
    return iteration_s(*a) < iteration_s(*b);
  });
  std::vector<std::string> out;
  for (const ConfigResult* r : sorted) out.push_back(r->strategy);
  return out;
}

RankingGroup rank_group(const std::vector<const ConfigResult*>& group, const std::vector<std::string>& engines) {
  RankingGroup g;
  g.label = group_label(*group.front());
  g.measured_order = order_by(group, [](const ConfigResult& r) { return r.measured.iteration_s; });
  for (const std::string& engine : engines) {
    g.predicted_order[engine] = order_by(group, [&](const ConfigResult& r) { return r.predicted.at(engine).iteration_s; });
    g.agreeing_pairs[engine] = 0;
  }
  for (std::size_t i = 0; i < group.size(); ++i)
    for (std::size_t j = i + 1; j < group.size(); ++j) {
      const ConfigResult& a = *group[i];
      const ConfigResult& b = *group[j];
      // Decided: the measured interquartile ranges do not overlap.
      const bool a_faster = a.measured.iteration_q75_s < b.measured.iteration_q25_s;
      const bool b_faster = b.measured.iteration_q75_s < a.measured.iteration_q25_s;
      if (!a_faster && !b_faster) continue;
      ++g.decided_pairs;
      for (const std::string& engine : engines) {
        const double pa = a.predicted.at(engine).iteration_s, pb = b.predicted.at(engine).iteration_s;
        if ((a_faster && pa < pb) || (b_faster && pb < pa)) ++g.agreeing_pairs[engine];
      }
    }
  for (const std::string& engine : engines) g.agrees[engine] = g.agreeing_pairs[engine] == g.decided_pairs;
  return g;
}

}  // namespace

ValidationReport summarize_validation(const ValidationGrid& grid, std::vector<ConfigResult> results) {
  ValidationReport report;
  report.grid_name = grid.name;
  report.grid_file = grid.file;
  report.description = grid.description;
  report.iteration_tolerance_percent = grid.iteration_tolerance_percent;
  report.overlap_tolerance_points = grid.overlap_tolerance_points;
  report.compute_speed_tolerance_percent = grid.compute_speed_tolerance_percent;
  report.run_attempts = grid.run_attempts;
  report.recalibrate_compute = grid.recalibrate_compute;
  report.configurations = int(validation_configs(grid).size());
  report.results = std::move(results);

  std::vector<std::string> engines;
  for (const char* engine : kEngines) {
    const bool everywhere = !report.results.empty() &&
                            std::all_of(report.results.begin(), report.results.end(),
                                        [&](const ConfigResult& r) { return r.predicted.count(engine) > 0; });
    if (everywhere) engines.push_back(engine);
  }
  for (const std::string& engine : engines) {
    EngineSummary& s = report.engines[engine];
    for (MissCause cause : kCauses) s.causes[to_string(cause)] = 0;  // every cause, so readers find each key
    double absolute_sum = 0, overlap_sum = 0;
    for (const ConfigResult& r : report.results) {
      const double error = std::abs(r.error_percent(engine));
      absolute_sum += error;
      s.max_abs_error_percent = std::max(s.max_abs_error_percent, error);
      if (error <= grid.iteration_tolerance_percent) ++s.within_tolerance;
      overlap_sum += std::abs(r.predicted.at(engine).overlap_ratio_percent - r.measured.overlap_ratio_percent);
      const auto d = r.diagnosis.find(engine);
      ++s.causes[to_string(d == r.diagnosis.end() ? MissCause::none : d->second.cause)];
    }
    s.mape_percent = absolute_sum / double(report.results.size());
    s.r_mae_points = overlap_sum / double(report.results.size());
  }

  // MAPE by one dimension of the grid.
  const std::vector<std::pair<std::string, std::function<std::string(const ConfigResult&)>>> dimensions = {
      {"network", [](const ConfigResult& r) { return r.network; }},
      {"strategy", [](const ConfigResult& r) { return r.strategy; }},
      {"link", [](const ConfigResult& r) { return r.link; }},
      {"batch", [](const ConfigResult& r) { return std::to_string(r.batch); }},
      {"ranks", [](const ConfigResult& r) { return std::to_string(r.ranks); }},
      {"collectives", [](const ConfigResult& r) { return r.collectives; }}};
  for (const auto& [dimension, value_of] : dimensions)
    for (const std::string& engine : engines) {
      std::map<std::string, std::pair<double, int>> sums;
      for (const ConfigResult& r : report.results) {
        auto& [sum, count] = sums[value_of(r)];
        sum += std::abs(r.error_percent(engine));
        ++count;
      }
      for (const auto& [value, sum_count] : sums)
        report.mape_by[dimension][value][engine] = sum_count.first / double(sum_count.second);
    }

  // Rankings: configurations that differ only in strategy.
  std::map<std::string, std::vector<const ConfigResult*>> groups;
  std::vector<std::string> group_order;
  for (const ConfigResult& r : report.results) {
    const std::string label = group_label(r);
    if (groups.count(label) == 0) group_order.push_back(label);
    groups[label].push_back(&r);
  }
  for (const std::string& label : group_order) {
    if (groups[label].size() < 2 || engines.empty()) continue;
    report.rankings.push_back(rank_group(groups[label], engines));
    for (const std::string& engine : engines)
      if (report.rankings.back().agrees[engine]) ++report.engines[engine].ranking_groups_agreeing;
  }
  return report;
}

}  // namespace cnnpar
