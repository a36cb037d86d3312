#include "analysis/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "analysis/metrics.hpp"
#include "analysis/rows.hpp"
#include "base/error.hpp"

namespace cnnpar {
namespace {

MetricComparison make_comparison(std::string name, double predicted, double measured) {
  MetricComparison c;
  c.name = std::move(name);
  c.predicted = predicted;
  c.measured = measured;
  c.absolute_error = std::abs(predicted - measured);
  if (measured != 0) c.relative_error = c.absolute_error / std::abs(measured);
  else c.relative_error = c.absolute_error == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return c;
}

std::string metadata_text(const Trace& trace, const char* key) {
  const auto it = trace.metadata.find(key);
  if (it == trace.metadata.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

}  // namespace

void check_comparable(const Trace& predicted, const Trace& measured, const std::string& predicted_file,
                      const std::string& measured_file, bool allow_other_strategy) {
  const auto refuse = [&](const std::string& path, const std::string& p, const std::string& m, const std::string& what) {
    throw InputError(measured_file, path, fmt::format("{} here, {} in {}", m, p, predicted_file),
                     fmt::format("the traces are of different {}: nothing to compare op by op", what));
  };
  if (predicted.ranks.size() != measured.ranks.size())
    refuse("/ranks", fmt::format("{} ranks", predicted.ranks.size()), fmt::format("{} ranks", measured.ranks.size()),
           "rank counts");
  // Traces without metadata (hand-written) are compared as they are.
  for (const char* key : {"network", "global_batch"}) {
    const std::string p = metadata_text(predicted, key), m = metadata_text(measured, key);
    if (!p.empty() && !m.empty() && p != m)
      refuse(fmt::format("/metadata/{}", key), p, m, key == std::string("network") ? "networks" : "global batches");
  }
  if (allow_other_strategy) return;
  for (const char* key : {"strategy", "options"}) {
    const std::string p = metadata_text(predicted, key), m = metadata_text(measured, key);
    if (!p.empty() && !m.empty() && p != m)
      throw InputError(measured_file, fmt::format("/metadata/{}", key), fmt::format("{} here, {} in {}", m, p, predicted_file),
                       "the traces ran different strategies or strategy options (compare them anyway with "
                       "--allow-other-strategy)");
  }
}

CompareReport compare_traces(const Trace& predicted, const Trace& measured, int top_ops) {
  const TraceMetrics p = compute_metrics(predicted);
  const TraceMetrics m = compute_metrics(measured);
  CompareReport report;
  report.predicted_engine = predicted.engine;
  report.measured_engine = measured.engine;
  report.metrics = {
      make_comparison("iteration_s", p.iteration_s, m.iteration_s),
      make_comparison("compute_max_s", p.compute_max_s, m.compute_max_s),
      make_comparison("compute_mean_s", p.compute_mean_s, m.compute_mean_s),
      make_comparison("comm_s", p.comm_s, m.comm_s),
      make_comparison("exposed_comm_s", p.exposed_comm_s, m.exposed_comm_s),
      make_comparison("overlap_ratio_percent", p.overlap_ratio_percent, m.overlap_ratio_percent),
  };

  std::vector<OpDeviation> deviations;
  const std::size_t ranks = std::min(predicted.ranks.size(), measured.ranks.size());
  for (std::size_t r = 0; r < ranks; ++r) {
    // (label, occurrence) -> duration in the measured trace
    std::map<std::pair<std::string, int>, double> measured_ops;
    std::map<std::string, int> seen;
    for (const ComputeRecord& op : measured.ranks[r].compute)
      measured_ops[{op.label, seen[op.label]++}] = op.end_s - op.start_s;
    seen.clear();
    int matched_here = 0;
    for (const ComputeRecord& op : predicted.ranks[r].compute) {
      const auto found = measured_ops.find({op.label, seen[op.label]++});
      if (found == measured_ops.end()) {
        ++report.unmatched_ops;
        continue;
      }
      ++matched_here;
      OpDeviation d;
      d.rank = int(r);
      d.op = op.op;
      d.label = op.label;
      d.predicted_s = op.end_s - op.start_s;
      d.measured_s = found->second;
      d.deviation_s = d.predicted_s - d.measured_s;
      deviations.push_back(std::move(d));
    }
    report.matched_ops += matched_here;
    report.unmatched_ops += int(measured_ops.size()) - matched_here;
  }
  for (std::size_t r = ranks; r < predicted.ranks.size(); ++r) report.unmatched_ops += int(predicted.ranks[r].compute.size());
  for (std::size_t r = ranks; r < measured.ranks.size(); ++r) report.unmatched_ops += int(measured.ranks[r].compute.size());

  const std::size_t keep = std::min(deviations.size(), std::size_t(std::max(0, top_ops)));
  std::partial_sort(deviations.begin(), deviations.begin() + std::ptrdiff_t(keep), deviations.end(),
                    [](const OpDeviation& a, const OpDeviation& b) {
                      return std::abs(a.deviation_s) > std::abs(b.deviation_s);
                    });
  deviations.resize(keep);
  report.largest_deviations = std::move(deviations);
  return report;
}

std::string format_compare_table(const CompareReport& report) {
  std::string out = fmt::format("{:<24} {:>14} {:>14} {:>14} {:>10}\n", "metric",
                                "predicted(" + report.predicted_engine + ")",
                                "measured(" + report.measured_engine + ")", "abs error", "rel error");
  for (const MetricComparison& c : report.metrics) {
    const std::string rel = std::isinf(c.relative_error) ? "inf" : fmt::format("{:.1f}%", 100 * c.relative_error);
    out += fmt::format("{:<24} {:>14.6g} {:>14.6g} {:>14.6g} {:>10}\n", c.name, c.predicted, c.measured,
                       c.absolute_error, rel);
  }
  out += fmt::format("\ncompute ops matched: {}, unmatched: {}\n", report.matched_ops, report.unmatched_ops);
  if (!report.largest_deviations.empty()) {
    out += fmt::format("largest deviations:\n{:>5} {:>6} {:<32} {:>12} {:>12} {:>12}\n", "rank", "op", "label",
                       "predicted_s", "measured_s", "deviation_s");
    for (const OpDeviation& d : report.largest_deviations)
      out += fmt::format("{:>5} {:>6} {:<32} {:>12.6g} {:>12.6g} {:>12.6g}\n", d.rank, d.op, d.label,
                         d.predicted_s, d.measured_s, d.deviation_s);
  }
  return out;
}

std::string compare_csv(const Trace& predicted, const Trace& measured) {
  std::string out = std::string(kRowCsvHeader) + "\n";
  for (const Trace* trace : {&predicted, &measured}) {
    const TraceMetrics metrics = compute_metrics(*trace);
    out += row_csv_line(config_columns(*trace), make_sweep_row(int(trace->ranks.size()), metrics, metrics.iteration_s), false);
  }
  return out;
}

std::vector<std::string> measurement_warnings(const Trace* predicted, const Trace& measured) {
  std::vector<std::string> warnings;
  const nlohmann::json& m = measured.metadata;
  if (!m.is_object()) return warnings;
  const std::optional<double> start_load = run_load_average(measured);
  if (start_load && m.contains("cores") && m.at("cores").is_number()) {
    const double load = *start_load;
    const double cores = m.at("cores").get<double>();
    if (cores > 0 && load > 0.5 * cores)
      warnings.push_back(fmt::format("the machine was busy: load average {:.2f} on {:.0f} cores when the run started, "
                                     "so other work shared the cores; measure again on an idle machine",
                                     load, cores));
  }
  const TraceMetrics measured_metrics = compute_metrics(measured);
  if (const double spread = iteration_spread_percent(measured_metrics); spread > 10)
    warnings.push_back(fmt::format("measured iteration times spread {:.1f} % around their median over {} iterations; "
                                   "more --iterations give a steadier median",
                                   spread, measured_metrics.iteration_times_s.size()));
  if (predicted != nullptr && measured.ranks.size() > 1 && m.contains("hosts") && m.at("hosts").is_array()) {
    const nlohmann::json& hosts = m.at("hosts");
    bool one_host = !hosts.empty();
    for (const nlohmann::json& host : hosts) one_host = one_host && host == hosts.front();
    const double predicted_comm_s = compute_metrics(*predicted).comm_s;
    if (one_host && measured_metrics.comm_s > 2 * predicted_comm_s)
      warnings.push_back(fmt::format(
          "all {} ranks ran on one host ({}), so MPI moved data through shared memory on the cores that compute: "
          "measured communication {:.4f} s against {:.4f} s predicted is not the network's time (use the namespace "
          "testbed or a cluster to measure a network)",
          measured.ranks.size(), hosts.front().is_string() ? hosts.front().get<std::string>() : hosts.front().dump(),
          measured_metrics.comm_s, predicted_comm_s));
  }
  return warnings;
}

nlohmann::json to_json(const CompareReport& report) {
  nlohmann::json metrics = nlohmann::json::array();
  for (const MetricComparison& c : report.metrics) {
    nlohmann::json entry = {{"name", c.name}, {"predicted", c.predicted}, {"measured", c.measured},
                            {"absolute_error", c.absolute_error}};
    if (std::isinf(c.relative_error)) entry["relative_error"] = nullptr;  // JSON has no infinity
    else entry["relative_error"] = c.relative_error;
    metrics.push_back(std::move(entry));
  }
  nlohmann::json ops = nlohmann::json::array();
  for (const OpDeviation& d : report.largest_deviations)
    ops.push_back({{"rank", d.rank}, {"op", d.op}, {"label", d.label}, {"predicted_s", d.predicted_s},
                   {"measured_s", d.measured_s}, {"deviation_s", d.deviation_s}});
  return {{"predicted_engine", report.predicted_engine}, {"measured_engine", report.measured_engine},
          {"metrics", std::move(metrics)},           {"matched_ops", report.matched_ops},
          {"unmatched_ops", report.unmatched_ops},   {"largest_deviations", std::move(ops)}};
}

}  // namespace cnnpar
