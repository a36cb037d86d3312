#pragma once
// Predicting a strategy over a list of node counts: one row per P (analysis/rows.hpp).
#include <functional>
#include <memory>
#include <vector>

#include "analysis/rows.hpp"
#include "model/engine.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/trace.hpp"
#include "workload/node_list.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

using EngineFactory = std::function<std::unique_ptr<Engine>()>;
/** Called after each finished node count with (done, total); may be called from worker threads
 *  but never concurrently. */
using SweepProgress = std::function<void(int done, int total)>;

struct SweepOptions {
  bool parallel = true;  ///< TBB over node counts (each worker gets its own engine)
  SweepProgress progress;
  /** Called with every replayed trace (the P = 1 baseline too), from worker threads and
   *  possibly concurrently: the callee synchronises. For metrics beyond the rows. */
  std::function<void(int nodes, const Trace& trace)> on_trace;
};

/** Builds the schedule of `base` with ranks = P for every P in `nodes`, replays it on an engine
 *  from `make_engine` and returns one row per P. The speedup baseline T_iter(1) is the row
 *  with P = 1, computed separately when `nodes` lacks it.
 *  @throws InputError from the builders (e.g. batch not divisible by P) before returning rows. */
std::vector<SweepRow> predict_sweep(const Network& network, const Platform& platform, const StrategyOptions& base,
                                    const std::vector<int>& nodes, const EngineFactory& make_engine,
                                    const SweepOptions& options = {});

}  // namespace cnnpar
