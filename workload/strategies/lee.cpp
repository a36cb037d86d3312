// Lee et al. (HiPC 2017) Algorithm 2: data-parallel training with two gradient chunks and
// f fully-connected layers that replicate the gradient calculation.
//
// Per iteration m, on every rank:
//   forward:  for a replicated fc layer l (m > 0): wait for iteration m-1's allgathers of
//             A^{l-1} and E^l, compute l's weight gradient over the full batch N and update l
//             (the update delayed from m-1); after the layer feeding l: post allgather A^{l-1}.
//   backward: per layer, the weight gradient (non-replicated layers), then the errors of the
//             layer below; right after the weight gradient of the lowest of the top k counted
//             layers, post the allreduce of chunk 1 (those layers' gradients); after the
//             backward, post chunk 2 (the rest).
//   update:   wait chunk 1, update its layers; wait chunk 2, post allgather E^l of every
//             replicated layer, update chunk 2's layers.
// After the last iteration's mark, a flush applies the last delayed fc updates so that the
// final weights equal sequential SGD's (the flush is outside every measured iteration).
#include <algorithm>

#include <fmt/format.h>

#include "base/error.hpp"
#include "workload/emit.hpp"
#include "workload/strategies/data_parallel.hpp"
#include "workload/strategies/lee_chunks.hpp"

namespace cnnpar::strategies {

namespace {

Schedule build_lee(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options, 1);

  const int ranks = options.ranks;
  // Rank 0 has the larger share when N % P != 0; allgathers are sized for it.
  const std::int64_t batch = rank_batch(options.global_batch, ranks, 0);
  const LayerOps ops(network, batch, options.global_batch);
  const int layer_count = int(network.layers.size());

  // k counts from the output end of the counted layers (conv, pool, fc).
  const std::vector<int> counted = network.counted_layers();
  const int boundary = counted[counted.size() - std::size_t(chunk_k(network, options))];
  const std::vector<int> fc = network.fc_layers();
  std::vector<char> replicated(std::size_t(layer_count), 0);
  const std::int64_t f = replicated_f(network, options);
  schedule.options["k"] = chunk_k(network, options);
  schedule.options["f"] = f;
  for (int i = 0; i < int(f); ++i) replicated[std::size_t(fc[std::size_t(i)])] = 1;

  std::vector<int> chunk1, chunk2;  // backward order
  for (int l : parameter_layers_backward(network)) {
    if (replicated[std::size_t(l)]) continue;
    (l >= boundary ? chunk1 : chunk2).push_back(l);
  }
  std::vector<int> replicated_layers;
  for (int l = 0; l < layer_count; ++l)
    if (replicated[std::size_t(l)]) replicated_layers.push_back(l);

  const auto allgather = [&](int layer, Payload payload, double bytes_per_rank, int m) {
    Collective c;
    c.kind = CollectiveKind::allgather;
    c.bytes = bytes_per_rank;
    c.group = all_ranks(ranks);
    c.algorithm = platform.algorithm_for("allgather");
    c.label = fmt::format("allgather {} {}", payload == Payload::activations ? "A" : "E",
                          network.layers[std::size_t(layer)].spec.name);
    c.payload = payload;
    c.layers = {layer};
    c.iteration = m;
    return schedule.add_collective(std::move(c));
  };
  const auto activation_bytes = [&](int l) { return 4.0 * double(network.layers[std::size_t(l)].in.elements()) * double(batch); };
  const auto error_bytes = [&](int l) { return 4.0 * double(network.layers[std::size_t(l)].out.elements()) * double(batch); };

  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
  reserve_program(program, ops, network, options.iterations);
  std::vector<int> previous_a(std::size_t(layer_count), -1), previous_e(std::size_t(layer_count), -1);
  std::vector<int> current_a(std::size_t(layer_count), -1), current_e(std::size_t(layer_count), -1);
  const auto post_activation_gather = [&](int l, int m) {
    current_a[std::size_t(l)] = allgather(l, Payload::activations, activation_bytes(l), m);
    program.push_back(Op::post_op(current_a[std::size_t(l)]));
  };
  const auto delayed_update = [&](int l) {
    program.push_back(Op::wait_op(previous_a[std::size_t(l)]));
    program.push_back(Op::wait_op(previous_e[std::size_t(l)]));
    append(program, ops.backward_weight_full(l));
    append(program, ops.update(l));
  };

  for (int m = 0; m < options.iterations; ++m) {
    // Feed-forward (Algorithm 2 lines 5-12).
    if (layer_count > 0 && replicated[0]) post_activation_gather(0, m);
    for (int l = 0; l < layer_count; ++l) {
      if (replicated[std::size_t(l)] && m > 0) delayed_update(l);
      append(program, ops.forward(l));
      if (l + 1 < layer_count && replicated[std::size_t(l + 1)]) post_activation_gather(l + 1, m);
    }
    // Backpropagation (lines 13-20).
    int chunk1_id = -1, chunk2_id = -1;
    for (int l = layer_count - 1; l >= 0; --l) {
      // Algorithm 2 lines 13-19: at step l, E^l (our backward_data of layer l+1, emitted one
      // step earlier), then ΔW^l, then the post when l is the boundary; E^{l-1} follows.
      if (!replicated[std::size_t(l)]) append(program, ops.backward_weight(l));
      if (l == boundary && !chunk1.empty()) {
        chunk1_id = schedule.add_collective(gradient_allreduce(network, platform, ranks, chunk1, m, "allreduce chunk1"));
        program.push_back(Op::post_op(chunk1_id));
      }
      append(program, ops.backward_data(l));
    }
    if (!chunk2.empty()) {
      chunk2_id = schedule.add_collective(gradient_allreduce(network, platform, ranks, chunk2, m, "allreduce chunk2"));
      program.push_back(Op::post_op(chunk2_id));
    }
    // Parameter update (lines 21-28).
    if (chunk1_id >= 0) program.push_back(Op::wait_op(chunk1_id));
    for (int l : chunk1) append(program, ops.update(l));
    if (chunk2_id >= 0) program.push_back(Op::wait_op(chunk2_id));
    for (int l : replicated_layers) {
      current_e[std::size_t(l)] = allgather(l, Payload::errors, error_bytes(l), m);
      program.push_back(Op::post_op(current_e[std::size_t(l)]));
    }
    for (int l : chunk2) append(program, ops.update(l));
    program.push_back(Op::mark_op(m));
    std::swap(previous_a, current_a);
    std::swap(previous_e, current_e);
  }
  // Flush: the last iteration's delayed fc gradients and updates.
  for (int l : replicated_layers) delayed_update(l);

  replicate_program(schedule, options, network);
  set_data_partitions(schedule, network, replicated_layers);
  return schedule;
}

void validate_lee(const Network& network, const StrategyOptions& options) {
  check_chunk_k(network, options);
  const std::int64_t f = replicated_f(network, options);
  const int fc = int(network.fc_layers().size());
  if (f > fc)
    throw InputError(options.origin, "/f", std::to_string(f),
                     fmt::format("f must be in [0, {}] (the fc layers of {}); set --f", fc, network.name));
  if (f > 0 && options.iterations < 2)
    throw InputError(options.origin, "/iterations", std::to_string(options.iterations),
                     "lee with f > 0 delays fc updates into the next iteration: at least 2 iterations are needed");
}

}  // namespace

StrategySpec lee_strategy() {
  return {.name = "lee",
          .summary = "Lee et al. Algorithm 2: two gradient chunks split by k, the first f fc layers replicate the "
                     "gradient calculation",
          .options = {chunk_k_option(),
                      {.key = "f",
                       .type = OptionType::integer,
                       .default_text = "2",
                       .unit = "fc layers",
                       .help = "the first f fc layers replicate the gradient calculation (allgathers of activations "
                               "and errors)"}},
          .validate = validate_lee,
          .build = build_lee,
          .advise_baseline = true,
          .advise_gain_reference = true};
}

}  // namespace cnnpar::strategies
