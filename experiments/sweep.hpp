#pragma once
// Predicting a strategy over a list of node counts: one row per P (analysis/rows.hpp), every
// configuration a job of one Engine::run_all batch.
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/metrics.hpp"
#include "analysis/rows.hpp"
#include "model/engine.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/trace.hpp"
#include "workload/node_list.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

using EngineFactory = std::function<std::unique_ptr<Engine>()>;
/** Called after each finished configuration with (done, total), one call at a time. */
using SweepProgress = std::function<void(int done, int total)>;

struct SweepOptions {
  int workers = 0;  ///< configurations at once (BatchOptions::workers): 0 = the cores, 1 = one after another
  SweepProgress progress;
  /** More than the row from each trace (the P = 1 baseline too), computed where the trace was
   *  made (a thread, or SimGrid's forked child); `on_extra` receives it here, one call at a time. */
  std::function<nlohmann::json(int nodes, const Trace& trace)> extra;
  std::function<void(int nodes, nlohmann::json& extra)> on_extra;
};

/** Builds the schedule of `base` with ranks = P for every P in `nodes`, replays them as one batch
 *  on an engine from `make_engine` and returns one row per P. The speedup baseline T_iter(1) is
 *  the row with P = 1, computed as well when `nodes` lacks it.
 *  @throws InputError from the builders (e.g. batch not divisible by P), the first in node order. */
std::vector<SweepRow> predict_sweep(const Network& network, const Platform& platform, const StrategyOptions& base,
                                    const std::vector<int>& nodes, const EngineFactory& make_engine,
                                    const SweepOptions& options = {});

/** The metrics of a row (make_sweep_row) as a job's summary, and back. */
nlohmann::json row_metrics_summary(const Trace& trace);
/** row_metrics_summary of ClassedTrace::expand(), without the expansion. */
nlohmann::json row_metrics_summary_classed(const ClassedTrace& trace);
TraceMetrics row_metrics_from_summary(const nlohmann::json& summary);

}  // namespace cnnpar
