// dp, Lee et al.'s "DP": every rank runs N/P images; after the whole backward pass one
// allreduce per layer, then every update.
#include <fmt/format.h>

#include "base/error.hpp"
#include "workload/emit.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/data_parallel.hpp"

namespace cnnpar::strategies {

namespace {

Schedule build_dp(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options, 1);
  const LayerOps ops(network, local_batch(options), options.global_batch);
  const std::vector<int> parameter_layers = parameter_layers_backward(network);
  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
  reserve_program(program, ops, network, options.iterations);
  const int layer_count = int(network.layers.size());
  for (int m = 0; m < options.iterations; ++m) {
    for (int l = 0; l < layer_count; ++l) {
      append_statistics_allreduce(schedule, program, network, platform, options, l, Payload::batch_statistics, m);
      append(program, ops.forward(l));
    }
    for (int l = layer_count - 1; l >= 0; --l) {
      append_statistics_allreduce(schedule, program, network, platform, options, l, Payload::error_statistics, m);
      append(program, ops.backward_data(l));  // errors first, as in Lee's Algorithm 1
      append(program, ops.backward_weight(l));
    }
    std::vector<int> ids;
    for (int l : parameter_layers) {
      ids.push_back(schedule.add_collective(gradient_allreduce(
          network, platform, options.ranks, {l}, m, fmt::format("allreduce {}", network.layers[std::size_t(l)].spec.name))));
      program.push_back(Op::post_op(ids.back()));
    }
    // No overlap: every gradient is summed before any update starts.
    for (int id : ids) program.push_back(Op::wait_op(id));
    for (int l : parameter_layers) append(program, ops.update(l));
    program.push_back(Op::mark_op(m));
  }
  replicate_program(schedule, options, network);
  set_data_partitions(schedule, network);
  return schedule;
}

}  // namespace

StrategySpec dp_strategy() {
  return {.name = "dp",
          .summary = "Lee et al. \"DP\": one allreduce per layer after the whole backward pass, then the updates",
          .options = {sync_bn_option()},
          .build = build_dp,
          .graphs = true,
          .advise_baseline = true,
          .advise_gain_reference = true};
}

}  // namespace cnnpar::strategies

namespace cnnpar {

StrategyOptions plain_data_parallel(const StrategyOptions& like) {
  StrategyOptions options = like;
  options.name = "dp";
  options.values = nlohmann::json::object();
  return options;
}

}  // namespace cnnpar
