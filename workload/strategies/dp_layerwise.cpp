// dp_layerwise, Das et al.'s "DP+Overlap" (Lee et al.): each layer's allreduce posted as soon as
// its gradient is ready; the last `defer` of them waited for in the next forward pass.
#include <fmt/format.h>

#include "base/error.hpp"
#include "workload/emit.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/data_parallel.hpp"

namespace cnnpar::strategies {

namespace {

Schedule build_dp_layerwise(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options, 1);
  const LayerOps ops(network, local_batch(options), options.global_batch);
  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
  reserve_program(program, ops, network, options.iterations);
  const int layer_count = int(network.layers.size());
  // Das et al.: the allreduces of the last `defer` gradients of the backward pass (the layers
  // nearest the input) are waited for in the next iteration's forward pass, right before each
  // layer's forward, so they overlap that pass instead of ending this iteration.
  std::vector<int> deferred_id(std::size_t(layer_count), -1);
  const auto deferred_update = [&](int l) {
    program.push_back(Op::wait_op(deferred_id[std::size_t(l)]));
    append(program, ops.update(l));
    deferred_id[std::size_t(l)] = -1;
  };
  for (int m = 0; m < options.iterations; ++m) {
    for (int l = 0; l < layer_count; ++l) {
      if (deferred_id[std::size_t(l)] >= 0) deferred_update(l);
      append_statistics_allreduce(schedule, program, network, platform, options, l, Payload::batch_statistics, m);
      append(program, ops.forward(l));
    }
    std::vector<std::pair<int, int>> posted;  // (layer, collective)
    for (int l = layer_count - 1; l >= 0; --l) {
      // Weight gradient first so its allreduce starts as early as possible.
      append(program, ops.backward_weight(l));
      if (network.layers[std::size_t(l)].has_parameters()) {
        const int id = schedule.add_collective(gradient_allreduce(
            network, platform, options.ranks, {l}, m, fmt::format("allreduce {}", network.layers[std::size_t(l)].spec.name)));
        program.push_back(Op::post_op(id));
        posted.emplace_back(l, id);
      }
      append_statistics_allreduce(schedule, program, network, platform, options, l, Payload::error_statistics, m);
      append(program, ops.backward_data(l));
    }
    const std::size_t waited_now = posted.size() - std::min(posted.size(), std::size_t(options.integer("defer")));
    for (std::size_t i = 0; i < posted.size(); ++i) {
      const auto& [layer, id] = posted[i];
      if (i < waited_now) {
        program.push_back(Op::wait_op(id));
        append(program, ops.update(layer));
      } else {
        deferred_id[std::size_t(layer)] = id;
      }
    }
    program.push_back(Op::mark_op(m));
  }
  // Flush: the last iteration's deferred updates, outside every measured iteration.
  for (int l = 0; l < layer_count; ++l)
    if (deferred_id[std::size_t(l)] >= 0) deferred_update(l);
  replicate_program(schedule, options, network);
  set_data_partitions(schedule, network);
  return schedule;
}

int parameterised_layers(const Network& network) {
  int count = 0;
  for (const Layer& layer : network.layers) count += layer.has_parameters() ? 1 : 0;
  return count;
}

void validate_dp_layerwise(const Network& network, const StrategyOptions& options) {
  const std::int64_t defer = options.integer("defer");
  if (defer > parameterised_layers(network))
    throw InputError(options.origin, "/defer", std::to_string(defer),
                     fmt::format("defer must be in [0, {}] (the layers with parameters of {})",
                                 parameterised_layers(network), network.name));
  if (defer > 0 && options.iterations < 2)
    throw InputError(options.origin, "/iterations", std::to_string(options.iterations),
                     "dp_layerwise with defer > 0 waits in the next iteration: at least 2 iterations are needed");
}

}  // namespace

StrategySpec dp_layerwise_strategy() {
  return {.name = "dp_layerwise",
          .summary = "Das et al. \"DP+Overlap\" (Lee et al.): each layer's allreduce posted as soon as its gradient is ready",
          .options = {{.key = "defer",
                       .type = OptionType::integer,
                       .default_text = "0",
                       .unit = "layers",
                       .help = "allreduces of the last N gradients of backward (nearest the input) are waited for in "
                               "the next iteration's forward pass (Das et al.)"},
                      sync_bn_option()},
          .validate = validate_dp_layerwise,
          .build = build_dp_layerwise,
          .graphs = true};
}

}  // namespace cnnpar::strategies
