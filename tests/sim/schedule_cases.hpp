#pragma once
// Strategy schedules the analytic engine's tests replay whole: 3 iterations, the global batch
// split unevenly where the rank count does not divide it (so dp has two rank classes).
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::test {

inline Schedule uneven_schedule(const Network& network, const Platform& platform, const char* strategy, int ranks) {
  StrategyOptions options;
  options.name = strategy;
  options.ranks = ranks;
  options.iterations = 3;
  options.uneven_batch = true;
  return build_schedule(network, platform, options);
}

}  // namespace cnnpar::test
