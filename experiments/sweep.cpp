#include "experiments/sweep.hpp"

#include <algorithm>
#include <memory>

#include "base/error.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

namespace {

nlohmann::json row_summary(const TraceMetrics& m) {
  // Key by key: an initializer list builds and copies a temporary per entry, which a sweep's
  // every row paid for.
  nlohmann::json summary = nlohmann::json::object();
  summary["iteration_s"] = m.iteration_s;
  summary["compute_max_s"] = m.compute_max_s;
  summary["comm_s"] = m.comm_s;
  summary["exposed_comm_s"] = m.exposed_comm_s;
  summary["overlap_ratio_percent"] = m.overlap_ratio_percent;
  return summary;
}

}  // namespace

nlohmann::json row_metrics_summary(const Trace& trace) {
  return row_summary(compute_metrics(trace, MetricsDetail{false, false}));
}

nlohmann::json row_metrics_summary_classed(const ClassedTrace& trace) {
  return row_summary(compute_metrics(trace, MetricsDetail{false, false}));
}

TraceMetrics row_metrics_from_summary(const nlohmann::json& summary) {
  TraceMetrics m;
  m.iteration_s = summary.at("iteration_s").get<double>();
  m.compute_max_s = summary.at("compute_max_s").get<double>();
  m.comm_s = summary.at("comm_s").get<double>();
  m.exposed_comm_s = summary.at("exposed_comm_s").get<double>();
  m.overlap_ratio_percent = summary.at("overlap_ratio_percent").get<double>();
  return m;
}

std::vector<SweepRow> predict_sweep(const Network& network, const Platform& platform, const StrategyOptions& base,
                                    const std::vector<int>& nodes, const EngineFactory& make_engine,
                                    const SweepOptions& options) {
  std::vector<int> counts = nodes;
  const bool has_one = std::find(counts.begin(), counts.end(), 1) != counts.end();
  if (!has_one) counts.insert(counts.begin(), 1);  // speedup baseline
  std::vector<EngineJob> jobs;
  for (int p : counts) {
    jobs.push_back({.schedule =
                        [&network, &platform, &base, p] {
                          StrategyOptions strategy = p == 1 ? single_rank_baseline(base) : base;
                          strategy.ranks = p;
                          return std::make_shared<const Schedule>(build_schedule(network, platform, strategy));
                        },
                    .platform = &platform,
                    .summarize = [&options, p](const Trace& trace) {
                      nlohmann::json summary = {{"row", row_metrics_summary(trace)}};
                      if (options.extra) summary["extra"] = options.extra(p, trace);
                      return summary;
                    }});
    if (!options.extra)
      jobs.back().summarize_classed = [](const ClassedTrace& trace) {
        return nlohmann::json{{"row", row_metrics_summary_classed(trace)}};
      };
  }
  BatchOptions batch{.workers = options.workers, .progress = options.progress};
  if (options.extra && options.on_extra)
    batch.finished = [&](std::size_t job, nlohmann::json& summary) { options.on_extra(counts[job], summary["extra"]); };
  const std::vector<nlohmann::json> summaries = make_engine()->run_all(jobs, batch);
  std::vector<TraceMetrics> metrics;
  for (const nlohmann::json& summary : summaries) metrics.push_back(row_metrics_from_summary(summary.at("row")));
  const double iteration_1_s = metrics.front().iteration_s;  // counts[0] == 1
  if (!has_one) {
    counts.erase(counts.begin());
    metrics.erase(metrics.begin());
  }
  return sweep_rows(counts, metrics, iteration_1_s);
}

}  // namespace cnnpar
