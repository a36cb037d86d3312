#pragma once
// Individual strategy builders; build_schedule() validates options and dispatches here.
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::strategies {

/** The registered units (registry.cpp lists them): name, option schema, validate, build. */
StrategySpec dp_strategy();
StrategySpec dp_layerwise_strategy();
StrategySpec dp_buckets_strategy();
StrategySpec lee_strategy();
StrategySpec per_layer_strategy();
StrategySpec hybrid_strategy();
StrategySpec veeriah_strategy();
StrategySpec conv_split_strategy();

/** Lee et al.'s `k` (counted layers in the first gradient chunk), shared by lee, per_layer and
 *  hybrid; its range depends on the network, checked by check_chunk_k. */
OptionSpec chunk_k_option();
/** k as given, or the default capped at the network's counted layers (so the default works on
 *  small networks); likewise lee's f capped at its fc layers. */
std::int64_t chunk_k(const Network& network, const StrategyOptions& options);
std::int64_t replicated_f(const Network& network, const StrategyOptions& options);
/** @throws InputError (options.origin, "/k") unless 1 <= k <= the network's counted layers. */
void check_chunk_k(const Network& network, const StrategyOptions& options);

/** Collective template for a gradient allreduce over all ranks. */
Collective gradient_allreduce(const Network& network, const Platform& platform, int ranks, std::vector<int> layers,
                              int iteration, std::string label);

/** Lee "DP": one allreduce per layer after the whole backward pass, then all updates. */
Schedule build_dp(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Lee "DP+Overlap" (Das et al.): each layer's allreduce posted when its gradient is ready. */
Schedule build_dp_layerwise(const Network& network, const Platform& platform, const StrategyOptions& options);
/** PyTorch DDP style: gradients grouped into buckets of `bucket_bytes` in backward order. */
Schedule build_dp_buckets(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Lee et al. Algorithm 2: two gradient chunks (k) and f replicated fc layers. */
Schedule build_lee(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Any layer -> data | model | replicated assignment (options.assign), transitions inserted. */
Schedule build_per_layer(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Veeriah & Modi: K conv workers (data parallel) and K fc workers (model parallel), schemes a/b/c. */
Schedule build_veeriah(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Marques et al.: conv layers split by kernels over a master and workers. */
Schedule build_conv_split(const Network& network, const Platform& platform, const StrategyOptions& options);
/** conv_split's shares per rank (master first): uniform, Eq. 1 of the engines' probe, or the
 *  option's list. @throws InputError (options.origin, "/shares/I") for a bad list. */
std::vector<double> conv_split_shares(const Network& network, const Platform& platform, const StrategyOptions& options);
/** Probe seconds of `rank`: one forward pass of every conv layer at `batch` images (op_time_s). */
double engine_probe_s(const Network& network, const Platform& platform, std::int64_t batch, int rank);

/** Data-parallel conv, model-parallel fc layers (Krizhevsky; Intel note): a per_layer preset. */
Schedule build_hybrid(const Network& network, const Platform& platform, const StrategyOptions& options);

}  // namespace cnnpar::strategies
