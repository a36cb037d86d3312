#pragma once
// What the data-parallel builders (dp, dp_layerwise, dp_buckets) share.
#include <cstdint>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::strategies {

/** Collective template for a gradient allreduce over all ranks. */
Collective gradient_allreduce(const Network& network, const Platform& platform, int ranks, std::vector<int> layers,
                              int iteration, std::string label);

/** Images of rank 0, the largest share of the global batch (images). */
std::int64_t local_batch(const StrategyOptions& options);
/** Images of the ranks with the smaller share when N % P != 0 (images). */
std::int64_t smaller_batch(const StrategyOptions& options);

}  // namespace cnnpar::strategies
