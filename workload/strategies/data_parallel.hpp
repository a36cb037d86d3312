#pragma once
// What the data-parallel builders (dp, dp_layerwise, dp_buckets) share.
#include <cstdint>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::strategies {

/** Collective template for a gradient allreduce over all ranks. */
Collective gradient_allreduce(const Network& network, const Platform& platform, int ranks, std::vector<int> layers,
                              int iteration, std::string label);

/** The option `sync_bn` ("off" | "on") of the three builders: batch normalisation with the
 *  statistics of every rank's images (PyTorch's SyncBatchNorm) instead of each rank's own. */
OptionSpec sync_bn_option();
/** Before the forward (payload batch_statistics) or backward-data (error_statistics) ops of
 *  layer `layer`: when it is a batchnorm layer and sync_bn is on, the id of a new allreduce of
 *  its 2·C per-channel sums over all ranks, to post and wait for at once (its normalisation
 *  needs them); else -1. */
int add_statistics_allreduce(Schedule& schedule, const Network& network, const Platform& platform,
                             const StrategyOptions& options, int layer, Payload payload, int iteration);
/** The same, appended to `program` as a post and its wait. */
void append_statistics_allreduce(Schedule& schedule, std::vector<Op>& program, const Network& network,
                                 const Platform& platform, const StrategyOptions& options, int layer, Payload payload,
                                 int iteration);

/** Images of rank 0, the largest share of the global batch (images). */
std::int64_t local_batch(const StrategyOptions& options);

}  // namespace cnnpar::strategies
