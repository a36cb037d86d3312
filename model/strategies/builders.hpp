#pragma once
// Individual strategy builders; build_schedule() validates options and dispatches here.
#include "model/strategies/strategy.hpp"

namespace cnnpar::strategies {

/** Collective template for a gradient allreduce over all ranks. */
Collective gradient_allreduce(const Network& network, const Platform& platform, int ranks, std::vector<int> layers,
                              int iteration, std::string label);

/** Lee "DP": one allreduce per layer after the whole backward pass, then all updates. */
Schedule build_dp(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Lee "DP+Overlap" (Das et al.): each layer's allreduce posted when its gradient is ready. */
Schedule build_dp_layerwise(const Network& network, const Platform& platform, const StrategyOptions& options);
/** PyTorch DDP style: gradients grouped into buckets of options.bucket_bytes in backward order. */
Schedule build_dp_buckets(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Lee et al. Algorithm 2: two gradient chunks (k) and f replicated fc layers. */
Schedule build_lee(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Any layer -> data | model | replicated assignment (options.assign), transitions inserted. */
Schedule build_per_layer(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Data-parallel conv, model-parallel fc layers (Krizhevsky; Intel note): a per_layer preset. */
Schedule build_hybrid(const Network& network, const Platform& platform, const StrategyOptions& options);

}  // namespace cnnpar::strategies
