// Data-parallel builders: every rank runs N/P images and the same program.
#include <fmt/format.h>

#include "base/error.hpp"
#include "workload/builders.hpp"
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

namespace {

std::int64_t local_batch(const StrategyOptions& options) { return rank_batch(options.global_batch, options.ranks, 0); }
std::int64_t smaller_batch(const StrategyOptions& options) { return options.global_batch / options.ranks; }

}  // namespace

Schedule build_dp(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options, 1);
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
  Schedule schedule = start_schedule(network, options, 1);
  const LayerOps ops(network, local_batch(options), options.global_batch);
  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
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
  replicate_program(schedule, options, LayerOps(network, smaller_batch(options), options.global_batch));
  set_data_partitions(schedule, network);
  return schedule;
}

Schedule build_dp_buckets(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options, 1);
  const double bucket_bytes = options.number("bucket_bytes");
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
        if (gradient_bytes(network, filling) >= bucket_bytes) post_bucket();
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

namespace {

int parameterised_layers(const Network& network) {
  int count = 0;
  for (const Layer& layer : network.layers) count += layer.has_parameters() ? 1 : 0;
  return count;
}

void validate_dp_layerwise(const Network& network, const StrategyOptions& options) {
  const std::int64_t defer = options.integer("defer");
  if (defer > parameterised_layers(network))
    throw InputError(options.origin, "/defer", std::to_string(defer),
                     fmt::format("defer must be in [0, {}] (the conv and fc layers of {})",
                                 parameterised_layers(network), network.name));
  if (defer > 0 && options.iterations < 2)
    throw InputError(options.origin, "/iterations", std::to_string(options.iterations),
                     "dp_layerwise with defer > 0 waits in the next iteration: at least 2 iterations are needed");
}

}  // namespace

StrategySpec dp_strategy() {
  return {"dp", "Lee et al. \"DP\": one allreduce per layer after the whole backward pass, then the updates",
          {}, nullptr, build_dp};
}

StrategySpec dp_layerwise_strategy() {
  return {"dp_layerwise",
          "Das et al. \"DP+Overlap\" (Lee et al.): each layer's allreduce posted as soon as its gradient is ready",
          {{"defer", OptionType::integer, "0", 0, 0, {}, "layers",
            "allreduces of the last N gradients of backward (nearest the input) are waited for in "
            "the next iteration's forward pass (Das et al.)"}},
          validate_dp_layerwise, build_dp_layerwise};
}

StrategySpec dp_buckets_strategy() {
  return {"dp_buckets", "PyTorch DDP style: gradients grouped into buckets in backward order, each posted when full",
          {{"bucket_bytes", OptionType::bytes, "25MiB", 1, 0, {}, "bytes", "bucket size, e.g. 25MiB"}},
          nullptr, build_dp_buckets};
}

}  // namespace cnnpar::strategies
