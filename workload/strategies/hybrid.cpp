// hybrid, Krizhevsky's "one weird trick" and the Intel note's: data-parallel conv layers,
// model-parallel fc layers; a preset of per_layer's assignments.
#include "workload/registry.hpp"
#include "workload/strategies/data_parallel.hpp"
#include "workload/strategies/lee_chunks.hpp"
#include "workload/strategies/per_layer.hpp"

namespace cnnpar::strategies {

LayerAssignment hybrid_assignment(const Network& network, int ranks) {
  LayerAssignment assignment;
  assignment.kinds.assign(network.layers.size(), PartitionKind::data);
  // fc layers model-parallel; one with fewer output neurons than ranks (a small classifier)
  // cannot give every rank a slice and is replicated instead.
  for (int l : network.fc_layers())
    assignment.kinds[std::size_t(l)] =
        network.layers[std::size_t(l)].out.c >= ranks ? PartitionKind::model : PartitionKind::replicated;
  return assignment;
}

namespace {

Schedule build_hybrid(const Network& network, const Platform& platform, const StrategyOptions& options) {
  return build_per_layer_assignment(network, platform, options, hybrid_assignment(network, options.ranks), options.origin);
}

}  // namespace

StrategySpec hybrid_strategy() {
  return {.name = "hybrid",
          .summary = "Krizhevsky; Intel note: data-parallel conv layers, model-parallel fc layers",
          .options = {sync_option(), chunk_k_option(), sync_bn_option()},
          .validate = validate_per_layer,
          .build = build_hybrid,
          .graphs = true,
          .advise_baseline = true};
}

}  // namespace cnnpar::strategies
