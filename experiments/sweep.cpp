#include "experiments/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>

#include <tbb/parallel_for.h>

#include "base/error.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

std::vector<SweepRow> predict_sweep(const Network& network, const Platform& platform, const StrategyOptions& base,
                                    const std::vector<int>& nodes, const EngineFactory& make_engine,
                                    const SweepOptions& options) {
  std::vector<int> counts = nodes;
  const bool has_one = std::find(counts.begin(), counts.end(), 1) != counts.end();
  if (!has_one) counts.insert(counts.begin(), 1);  // speedup baseline
  std::vector<TraceMetrics> metrics(counts.size());
  std::atomic<int> done{0};
  std::mutex progress_mutex;
  const int total = int(counts.size());

  // Errors are kept per node count and the first in list order is rethrown, so the message
  // does not depend on thread timing.
  std::vector<std::exception_ptr> errors(counts.size());
  auto run_one = [&](Engine& engine, std::size_t i) {
    try {
      StrategyOptions strategy = counts[i] == 1 ? single_rank_baseline(base) : base;
      strategy.ranks = counts[i];
      const Schedule schedule = build_schedule(network, platform, strategy);
      const Trace trace = engine.run(schedule, platform);
      metrics[i] = compute_metrics(trace, MetricsDetail{false, false});
      if (options.on_trace) options.on_trace(counts[i], trace);
    } catch (...) {
      errors[i] = std::current_exception();
    }
    const int finished = ++done;
    if (options.progress) {
      std::lock_guard lock(progress_mutex);
      options.progress(finished, total);
    }
  };

  if (options.parallel && counts.size() > 1) {
    // Largest P first: those dominate the time.
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, counts.size(), 1), [&](const tbb::blocked_range<std::size_t>& range) {
      const std::unique_ptr<Engine> engine = make_engine();
      for (std::size_t k = range.begin(); k != range.end(); ++k) run_one(*engine, counts.size() - 1 - k);
    });
  } else {
    const std::unique_ptr<Engine> engine = make_engine();
    for (std::size_t i = 0; i < counts.size(); ++i) run_one(*engine, i);
  }

  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  const double iteration_1_s = metrics.front().iteration_s;  // counts[0] == 1
  if (!has_one) {
    counts.erase(counts.begin());
    metrics.erase(metrics.begin());
  }
  return sweep_rows(counts, metrics, iteration_1_s);
}

}  // namespace cnnpar
