// Data-parallel builders: every rank runs N/P images and the same program.
#include <fmt/format.h>

#include "model/strategies/builders.hpp"
#include "model/strategies/emit.hpp"

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

namespace {

Schedule start_schedule(const Network& network, const StrategyOptions& options) {
  Schedule schedule;
  schedule.strategy = options.name;
  schedule.options = to_json(options);
  schedule.network = network.name;
  schedule.global_batch = options.global_batch;
  schedule.iterations = options.iterations;
  schedule.warmup_iterations = options.warmup_iterations;
  schedule.programs.resize(1);
  return schedule;
}

std::int64_t local_batch(const StrategyOptions& options) { return rank_batch(options.global_batch, options.ranks, 0); }
std::int64_t smaller_batch(const StrategyOptions& options) { return options.global_batch / options.ranks; }

}  // namespace

Schedule build_dp(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options);
  const LayerOps ops(network, local_batch(options), options.global_batch);
  const std::vector<int> parameter_layers = parameter_layers_backward(network);
  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
  const int layer_count = int(network.layers.size());
  for (int m = 0; m < options.iterations; ++m) {
    for (int l = 0; l < layer_count; ++l) append(program, ops.forward(l));
    for (int l = layer_count - 1; l >= 0; --l) {
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
  replicate_program(schedule, options, LayerOps(network, smaller_batch(options), options.global_batch));
  set_data_partitions(schedule, network);
  return schedule;
}

Schedule build_dp_layerwise(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options);
  const LayerOps ops(network, local_batch(options), options.global_batch);
  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
  const int layer_count = int(network.layers.size());
  for (int m = 0; m < options.iterations; ++m) {
    for (int l = 0; l < layer_count; ++l) append(program, ops.forward(l));
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
      append(program, ops.backward_data(l));
    }
    for (const auto& [layer, id] : posted) {
      program.push_back(Op::wait_op(id));
      append(program, ops.update(layer));
    }
    program.push_back(Op::mark_op(m));
  }
  replicate_program(schedule, options, LayerOps(network, smaller_batch(options), options.global_batch));
  set_data_partitions(schedule, network);
  return schedule;
}

Schedule build_dp_buckets(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options);
  const LayerOps ops(network, local_batch(options), options.global_batch);
  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
  const int layer_count = int(network.layers.size());
  for (int m = 0; m < options.iterations; ++m) {
    for (int l = 0; l < layer_count; ++l) append(program, ops.forward(l));
    std::vector<std::pair<std::vector<int>, int>> buckets;  // (layers, collective)
    std::vector<int> filling;
    const auto post_bucket = [&] {
      const std::string label = fmt::format("allreduce bucket{} [{}..{}]", buckets.size(),
                                            network.layers[std::size_t(filling.front())].spec.name,
                                            network.layers[std::size_t(filling.back())].spec.name);
      const int id = schedule.add_collective(gradient_allreduce(network, platform, options.ranks, filling, m, label));
      program.push_back(Op::post_op(id));
      buckets.emplace_back(std::move(filling), id);
      filling.clear();
    };
    for (int l = layer_count - 1; l >= 0; --l) {
      append(program, ops.backward_weight(l));
      if (network.layers[std::size_t(l)].has_parameters()) {
        filling.push_back(l);
        if (gradient_bytes(network, filling) >= options.bucket_bytes) post_bucket();
      }
      append(program, ops.backward_data(l));
    }
    if (!filling.empty()) post_bucket();
    for (const auto& [layers, id] : buckets) {
      program.push_back(Op::wait_op(id));
      for (int l : layers) append(program, ops.update(l));
    }
    program.push_back(Op::mark_op(m));
  }
  replicate_program(schedule, options, LayerOps(network, smaller_batch(options), options.global_batch));
  set_data_partitions(schedule, network);
  return schedule;
}

}  // namespace cnnpar::strategies
