// What every data-parallel builder shares: the gradient allreduce and the per-rank batches.
// Every rank runs N/P images and the same program.
#include "workload/strategies/data_parallel.hpp"

#include "workload/emit.hpp"

namespace cnnpar::strategies {

Collective gradient_allreduce(const Network& network, const Platform& platform, int ranks, std::vector<int> layers,
                              int iteration, std::string label) {
  Collective c;
  c.kind = CollectiveKind::allreduce;
  c.bytes = gradient_bytes(network, layers);
  c.group = all_ranks(ranks);
  c.algorithm = platform.algorithm_for("allreduce");
  c.label = std::move(label);
  c.payload = Payload::gradients;
  c.layers = std::move(layers);
  c.iteration = iteration;
  return c;
}

std::int64_t local_batch(const StrategyOptions& options) { return rank_batch(options.global_batch, options.ranks, 0); }
std::int64_t smaller_batch(const StrategyOptions& options) { return options.global_batch / options.ranks; }

}  // namespace cnnpar::strategies
