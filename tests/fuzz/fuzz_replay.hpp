#pragma once
// What `cnnpar predict` does with a parsed network and platform, for the network and
// platform targets: a dp schedule on 2 ranks, the analytic replay, the metrics.
#include <cmath>
#include <string>

#include "analysis/metrics.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "tests/fuzz/fuzz_common.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::fuzz {

/** Replays dp on 2 ranks (2 iterations, 1 warm-up); the iteration time must be finite.
 *  @throws InputError for what the strategy refuses. */
inline void replay_dp_on_two_ranks(const Network& network, const Platform& platform) {
  StrategyOptions options;
  options.name = "dp";
  options.global_batch = 2;
  options.ranks = 2;
  options.iterations = 2;
  options.warmup_iterations = 1;
  options.origin = kOrigin;
  const Schedule schedule = build_schedule(network, platform, options);
  const TraceMetrics metrics = compute_metrics(analytic::analytic_replay(schedule, platform));
  FUZZ_REQUIRE(std::isfinite(metrics.iteration_s) && metrics.iteration_s >= 0, std::to_string(metrics.iteration_s));
}

}  // namespace cnnpar::fuzz
