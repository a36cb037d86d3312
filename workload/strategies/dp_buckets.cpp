// dp_buckets, PyTorch DDP style: gradients grouped into buckets of `bucket_bytes` in the order
// backward produces them, each bucket's allreduce posted when it is full.
#include <fmt/format.h>

#include "base/error.hpp"
#include "workload/emit.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/data_parallel.hpp"

namespace cnnpar::strategies {

namespace {

Schedule build_dp_buckets(const Network& network, const Platform& platform, const StrategyOptions& options) {
  Schedule schedule = start_schedule(network, options, 1);
  const double bucket_bytes = options.number("bucket_bytes");
  const LayerOps ops(network, local_batch(options), options.global_batch);
  std::vector<Op>& program = schedule.programs[0].ops.mutable_vector();
  const int layer_count = int(network.layers.size());
  for (int m = 0; m < options.iterations; ++m) {
    for (int l = 0; l < layer_count; ++l) {
      append_statistics_allreduce(schedule, program, network, platform, options, l, Payload::batch_statistics, m);
      append(program, ops.forward(l));
    }
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
      append_statistics_allreduce(schedule, program, network, platform, options, l, Payload::error_statistics, m);
      append(program, ops.backward_data(l));
    }
    if (!filling.empty()) post_bucket();
    for (const auto& [layers, id] : buckets) {
      program.push_back(Op::wait_op(id));
      for (int l : layers) append(program, ops.update(l));
    }
    program.push_back(Op::mark_op(m));
  }
  replicate_program(schedule, options, network);
  set_data_partitions(schedule, network);
  return schedule;
}

}  // namespace

StrategySpec dp_buckets_strategy() {
  return {.name = "dp_buckets",
          .summary = "PyTorch DDP style: gradients grouped into buckets in backward order, each posted when full",
          .options = {{.key = "bucket_bytes",
                       .type = OptionType::bytes,
                       .default_text = "25MiB",
                       .min = 1,
                       .unit = "bytes",
                       .help = "bucket size, e.g. 25MiB"},
                      sync_bn_option()},
          .build = build_dp_buckets,
          .graphs = true};
}

}  // namespace cnnpar::strategies
