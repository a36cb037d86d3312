// The observations of a fit: published numbers of studies (as `cnnpar report` compares them)
// and the mean iteration times of measured traces, each predicted on a candidate platform.
#include "experiments/fit_observations.hpp"

#include <algorithm>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "base/text.hpp"
#include "experiments/report.hpp"
#include "model/scenarios.hpp"
#include "workload/node_list.hpp"
#include "workload/registry.hpp"
#include "workload/run_spec.hpp"
#include "workload/trace_configuration.hpp"

namespace cnnpar {

std::string Observation::label() const {
  if (quantity == "max_speedup") return series + ": maximum speedup";
  const std::string what = quantity == "speedup" ? "speedup" : "iteration time";
  const std::string at = fmt::format("{} at {} node{}", what, nodes, nodes == 1 ? "" : "s");
  if (series.empty()) return fmt::format("{} (mean of {} measured)", at, measured_iterations);
  return fmt::format("{}: {}", series, at);
}

bool ObservationFilter::keeps(const std::string& series_label, const std::string& quantity, int at_nodes) const {
  const auto in = [](const auto& list, const auto& value) {
    return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
  };
  if (!nodes.empty() && quantity == "max_speedup") return false;  // a maximum has no node count of its own
  return in(series, series_label) && in(quantities, quantity) && in(nodes, at_nodes);
}

ObservationFilter parse_observation_filter(const std::vector<std::string>& texts, const std::string& origin,
                                           const std::string& flag) {
  ObservationFilter filter;
  for (const std::string& text : texts) {
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals + 1 == text.size())
      throw InputError(origin, flag, text, "expected KEY=VALUE[,VALUE...] with KEY series, nodes or quantity");
    const std::string key = text.substr(0, equals);
    const std::vector<std::string> values = split(text.substr(equals + 1), ',');
    if (key == "series") {
      filter.series.insert(filter.series.end(), values.begin(), values.end());
    } else if (key == "nodes") {
      for (int n : parse_node_list(text.substr(equals + 1), origin, flag)) filter.nodes.push_back(n);
    } else if (key == "quantity") {
      for (const std::string& value : values) {
        if (value != "speedup" && value != "iteration_s" && value != "max_speedup")
          throw InputError(origin, flag, text, "a quantity is speedup, iteration_s or max_speedup");
        filter.quantities.push_back(value);
      }
    } else {
      throw InputError(origin, flag, text, "expected KEY=VALUE[,VALUE...] with KEY series, nodes or quantity");
    }
  }
  return filter;
}

std::size_t Observations::add_study(const Study& study, const std::string& file, const ObservationFilter& filter) {
  StudyGroup group{study, observations_.size(), 0};
  group.study.series.clear();
  std::set<int> needed = {study.nodes.front()};  // a weak-scaling series' batches count from it
  const auto on_study_nodes = [&](int nodes) {
    return std::find(study.nodes.begin(), study.nodes.end(), nodes) != study.nodes.end();
  };
  for (std::size_t i = 0; i < study.series.size(); ++i) {
    const StudySeries& series = study.series[i];
    StudySeries kept = series;
    kept.paper_speedup_at.clear();
    kept.paper_iteration_s_at.clear();
    kept.paper_max_speedup = 0;
    std::string network;  // loaded once a number of the series is kept
    const auto add = [&](const std::string& quantity, int nodes, double value, const std::string& where) {
      if (network.empty()) network = load_network(series.network).name;
      Observation o;
      o.source = study.name;
      o.file = file;
      o.series = series.label;
      o.quantity = quantity;
      o.nodes = nodes;
      o.network = network;
      o.observed = value;
      o.path = fmt::format("/series/{}/paper/{}", i, where);
      o.configuration = fmt::format("{} {} {}{} {} at {}", network, to_json(series.strategy).dump(),
                                    series.weak_scaling ? "weak scaling " : "", quantity, series.strategy.global_batch,
                                    quantity == "max_speedup" ? fmt::format("{}", fmt::join(study.nodes, ",")) : std::to_string(nodes));
      o.network_path = fmt::format("/series/{}/network", i);
      observations_.push_back(std::move(o));
    };
    // In paper_comparisons' order: speedups, iteration times, the maximum.
    for (const auto& [nodes, value] : series.paper_speedup_at)
      if (on_study_nodes(nodes) && filter.keeps(series.label, "speedup", nodes)) {
        kept.paper_speedup_at[nodes] = value;
        needed.insert(nodes);
        add("speedup", nodes, value, fmt::format("speedup_at/{}", nodes));
      }
    for (const auto& [nodes, value] : series.paper_iteration_s_at)
      if (on_study_nodes(nodes) && filter.keeps(series.label, "iteration_s", nodes)) {
        kept.paper_iteration_s_at[nodes] = value;
        needed.insert(nodes);
        add("iteration_s", nodes, value, fmt::format("iteration_s_at/{}", nodes));
      }
    if (series.paper_max_speedup > 0 && filter.keeps(series.label, "max_speedup", 0)) {
      kept.paper_max_speedup = series.paper_max_speedup;
      needed.insert(study.nodes.begin(), study.nodes.end());
      add("max_speedup", 0, series.paper_max_speedup, "max_speedup");
    }
    if (!kept.paper_speedup_at.empty() || !kept.paper_iteration_s_at.empty() || kept.paper_max_speedup > 0)
      group.study.series.push_back(std::move(kept));
  }
  group.study.nodes.assign(needed.begin(), needed.end());  // only the node counts the numbers need
  group.count = observations_.size() - group.first;
  if (group.count > 0) studies_.push_back(std::move(group));
  return observations_.size() - group.first;
}

void Observations::add_trace(const Trace& trace, const std::string& file) {
  // The configuration `cnnpar trace --like` replays; its `set` is not applied: the platform
  // being fitted is the one predicted on.
  const TraceConfiguration run = trace_configuration(trace, file);
  const auto required = [&](const std::string& value, const char* key) {
    if (value.empty())
      throw InputError(file, fmt::format("/metadata/{}", key), "(missing)",
                       fmt::format("required member \"{}\" is missing: fit takes traces that cnnpar writes", key));
  };
  required(run.network, "network");
  required(run.strategy, "strategy");
  if (!run.global_batch) required("", "global_batch");
  TraceGroup group{load_network(run.network), StrategyOptions{}, run.slowdown, trace.engine == "real", observations_.size()};
  StrategyOptions& options = group.options;
  options.origin = file;
  options.name = run.strategy;
  options.global_batch = *run.global_batch;
  options.ranks = run.ranks;
  options.warmup_iterations = run.warmup_iterations;
  options.iterations = run.iterations.value_or(run.warmup_iterations + 1);
  options.uneven_batch = run.uneven_batch;
  options.recompute_columns = run.recompute_columns;
  options.conv = run.conv;
  options.values = run.strategy_values(strategy_spec(options.name, file));
  check_slowdown_ranks(group.slowdown, options.ranks, file, "/metadata/slowdown");
  const TraceMetrics metrics = compute_metrics(trace);
  if (metrics.iteration_times_s.empty())
    throw InputError(file, "/ranks", fmt::format("{} ranks", trace.ranks.size()),
                     "the trace has no measured iteration (marks after the warm-up) to fit on");
  Observation o;
  o.source = file;
  o.file = file;
  o.quantity = "iteration_s";
  o.nodes = options.ranks;
  o.network = group.network.name;
  o.observed = std::accumulate(metrics.iteration_times_s.begin(), metrics.iteration_times_s.end(), 0.0) /
               double(metrics.iteration_times_s.size());
  o.measured_iterations = int(metrics.iteration_times_s.size());
  o.path = "/ranks";
  o.network_path = "/metadata/network";
  o.configuration = fmt::format("{} {} iteration_s {} at {}", o.network, to_json(options).dump(), options.global_batch, options.ranks);
  if (!(o.observed > 0)) throw InputError(file, "/ranks", fmt::format("{}", o.observed), "the measured iteration time is not positive");
  observations_.push_back(std::move(o));
  traces_.push_back(std::move(group));
}

std::vector<double> Observations::observed() const {
  std::vector<double> values;
  for (const Observation& o : observations_) values.push_back(o.observed);
  return values;
}

std::vector<double> Observations::predict(const Platform& platform) const {
  std::vector<double> predicted(observations_.size(), 0.0);
  for (const StudyGroup& group : studies_) {
    // The report's own path from a study to its published quantities.
    const std::vector<PaperComparison> compared =
        paper_comparisons(group.study, predict_study(group.study, platform, make_engine_));
    CNNPAR_ASSERT(compared.size() == group.count, "one comparison per kept published number");
    for (std::size_t k = 0; k < group.count; ++k) predicted[group.first + k] = compared[k].predicted;
  }
  for (const TraceGroup& group : traces_) {
    Platform measured_on = platform;
    for (const auto& [rank, factor] : group.slowdown)
      if (rank < measured_on.nodes.count) measured_on.slow_down(rank, factor);
    if (group.executor_elements) measured_on.network.element_bytes = kExecutorElementBytes;
    const Trace trace = make_engine_()->run(build_schedule(group.network, measured_on, group.options), measured_on);
    const std::vector<double>& times = compute_metrics(trace).iteration_times_s;
    CNNPAR_ASSERT(!times.empty(), "a rebuilt schedule has the trace's measured iterations");
    predicted[group.index] = std::accumulate(times.begin(), times.end(), 0.0) / double(times.size());
  }
  return predicted;
}

}  // namespace cnnpar
