// What every data-parallel builder shares: the gradient allreduce and the per-rank batches.
// Every rank runs N/P images and the same program.
#include "workload/strategies/data_parallel.hpp"

#include <fmt/format.h>

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

OptionSpec sync_bn_option() {
  return {.key = "sync_bn",
          .type = OptionType::choice,
          .default_text = "off",
          .choices = {"off", "on"},
          .help = "batch normalisation over all ranks' images (an allreduce of 2 sums per channel in forward "
                  "and in backward, as SyncBatchNorm) instead of each rank's own (DDP's default)"};
}

int add_statistics_allreduce(Schedule& schedule, const Network& network, const Platform& platform,
                             const StrategyOptions& options, int layer, Payload payload, int iteration) {
  const Layer& bn = network.layers[std::size_t(layer)];
  if (bn.spec.kind != LayerKind::batchnorm || options.text("sync_bn") != "on") return -1;
  Collective c;
  c.kind = CollectiveKind::allreduce;
  c.bytes = 2.0 * 4.0 * double(bn.out.c);  // two FP32 sums per channel
  c.group = all_ranks(options.ranks);
  c.algorithm = platform.algorithm_for("allreduce");
  c.label = fmt::format("allreduce {} {}", bn.spec.name,
                        payload == Payload::batch_statistics ? "batch statistics" : "error statistics");
  c.payload = payload;
  c.layers = {layer};
  c.iteration = iteration;
  return schedule.add_collective(std::move(c));
}

void append_statistics_allreduce(Schedule& schedule, std::vector<Op>& program, const Network& network,
                                 const Platform& platform, const StrategyOptions& options, int layer, Payload payload,
                                 int iteration) {
  const int id = add_statistics_allreduce(schedule, network, platform, options, layer, payload, iteration);
  if (id < 0) return;
  program.push_back(Op::post_op(id));
  program.push_back(Op::wait_op(id));
}

std::int64_t local_batch(const StrategyOptions& options) { return rank_batch(options.global_batch, options.ranks, 0); }

}  // namespace cnnpar::strategies
