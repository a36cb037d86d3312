#include "workload/emit.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "model/cost.hpp"

namespace cnnpar::strategies {
namespace {

constexpr double kFloatBytes = 4.0;

double gemm_bytes(const GemmShape& g) {
  // In double: each operand fits int64 (limits.hpp), but their sum of products need not.
  const double m = double(g.m), n = double(g.n), k = double(g.k);
  return kFloatBytes * (m * k + k * n + m * n);
}

// SGD with momentum and weight decay per parameter: v = mu*v + lr*(g + wd*w); w -= v.
constexpr double kUpdateFlopsPerParameter = 5.0;
constexpr double kUpdateBytesPerParameter = 5.0 * kFloatBytes;  // read w, g, v; write w, v

KernelClass eltwise_class(LayerKind kind) {
  switch (kind) {
    case LayerKind::pool: return KernelClass::pool;
    case LayerKind::lrn: return KernelClass::lrn;
    case LayerKind::softmax: return KernelClass::softmax;
    default: return KernelClass::eltwise;
  }
}

}  // namespace

LayerOps::LayerOps(const Network& network, std::int64_t batch, std::int64_t full_batch)
    : LayerOps(network, std::vector<LayerSlice>(network.layers.size(), LayerSlice{batch, 0}), full_batch) {}

LayerOps::LayerOps(const Network& network, const std::vector<LayerSlice>& slices, std::int64_t full_batch) {
  const std::size_t count = network.layers.size();
  CNNPAR_ASSERT(slices.size() == count, "one slice per layer");
  layer_count_ = count;
  ranges_.assign(kSteps * count, {0, 0});
  all_.reserve(8 * count);

  int first_parameter_layer = int(count);
  for (std::size_t i = 0; i < count; ++i)
    if (network.layers[i].has_parameters()) { first_parameter_layer = int(i); break; }

  for (std::size_t i = 0; i < count; ++i) {
    const Layer& layer = network.layers[i];
    const LayerCost cost = layer_cost(layer);
    const int index = int(i);
    const std::string& name = layer.spec.name;
    const std::int64_t batch = slices[i].batch;
    const std::int64_t units = slices[i].units == layer.out.c ? 0 : slices[i].units;
    const double n = double(batch);
    // Share of the output units: element-wise work, output bytes and parameters scale with it;
    // a model-parallel layer still reads its whole input.
    const double unit_share = units > 0 ? double(units) / double(layer.out.c) : 1.0;
    const double in_bytes = kFloatBytes * double(cost.input_elements) * n * (layer.has_gemm() ? 1.0 : unit_share);
    const double out_bytes = kFloatBytes * double(cost.output_elements) * n * unit_share;
    const bool needs_errors_below = index > first_parameter_layer;
    const auto add_op = [&](Step step, Op op) {
      op.units = units;
      op.conv_layer = layer.spec.kind == LayerKind::conv;
      add(step, index, std::move(op));
    };

    if (layer.spec.kind == LayerKind::conv) {
      // Lee Eq. 4-5: im2col, then one GEMM for the whole sub-batch.
      const GemmShape fwd = forward_gemm(layer, batch, units);
      const double columns_bytes = kFloatBytes * double(fwd.k) * double(fwd.n);
      add_op(Step::forward, Op::compute_op(name + ".im2col", index, Phase::forward, KernelClass::im2col, 0,
                                           in_bytes + columns_bytes, batch));
      add_op(Step::forward, Op::compute_op(name + ".fwd", index, Phase::forward, KernelClass::gemm, fwd.flops(),
                                           gemm_bytes(fwd), batch, fwd));
      if (needs_errors_below) {
        // Lee Eq. 6-7: W^T E, then col2im (accumulating adds).
        const GemmShape bwd = backward_data_gemm(layer, batch, units);
        add_op(Step::backward_data, Op::compute_op(name + ".bwd_d", index, Phase::backward_data, KernelClass::gemm,
                                                   bwd.flops(), gemm_bytes(bwd), batch, bwd));
        add_op(Step::backward_data, Op::compute_op(name + ".col2im", index, Phase::backward_data, KernelClass::col2im,
                                                   double(bwd.m) * double(bwd.n), columns_bytes + in_bytes, batch));
      }
    } else if (layer.spec.kind == LayerKind::fc) {
      const GemmShape fwd = forward_gemm(layer, batch, units);
      add_op(Step::forward, Op::compute_op(name + ".fwd", index, Phase::forward, KernelClass::gemm, fwd.flops(),
                                           gemm_bytes(fwd), batch, fwd));
      if (needs_errors_below) {
        const GemmShape bwd = backward_data_gemm(layer, batch, units);
        add_op(Step::backward_data, Op::compute_op(name + ".bwd_d", index, Phase::backward_data, KernelClass::gemm,
                                                   bwd.flops(), gemm_bytes(bwd), batch, bwd));
      }
    } else {
      const KernelClass kernel = eltwise_class(layer.spec.kind);
      add_op(Step::forward, Op::compute_op(name + ".fwd", index, Phase::forward, kernel, cost.forward_flops * n * unit_share,
                                           in_bytes + out_bytes, batch));
      // The loss layer always produces the errors of the network's output.
      if (needs_errors_below || layer.spec.kind == LayerKind::softmax)
        add_op(Step::backward_data, Op::compute_op(name + ".bwd_d", index, Phase::backward_data, kernel,
                                                   cost.backward_data_flops * n * unit_share, 2 * out_bytes + in_bytes, batch));
    }

    if (layer.has_gemm()) {
      // Lee Eq. 8: E · C^T (conv columns kept from forward), plus bias row sums.
      const GemmShape w = backward_weight_gemm(layer, batch, units);
      add_op(Step::backward_weight, Op::compute_op(name + ".bwd_w", index, Phase::backward_weight, KernelClass::gemm,
                                                   w.flops(), gemm_bytes(w), batch, w));
      const GemmShape w_full = backward_weight_gemm(layer, full_batch, units);
      add_op(Step::backward_weight_full, Op::compute_op(name + ".bwd_wf", index, Phase::backward_weight,
                                                        KernelClass::gemm, w_full.flops(), gemm_bytes(w_full),
                                                        full_batch, w_full));
    } else if (layer.has_parameters()) {
      // batchnorm: per-channel sums of dy and dy·x̂, reading x and dy.
      const auto gradient_op = [&](const char* step, std::int64_t images) {
        const double m = double(images);
        return Op::compute_op(name + step, index, Phase::backward_weight, KernelClass::eltwise,
                              cost.backward_weight_flops * m * unit_share,
                              2 * kFloatBytes * double(cost.output_elements) * m * unit_share, images);
      };
      add_op(Step::backward_weight, gradient_op(".bwd_w", batch));
      add_op(Step::backward_weight_full, gradient_op(".bwd_wf", full_batch));
    }
    if (layer.has_parameters()) {
      const double parameters = double(cost.parameters()) * unit_share;
      add_op(Step::update, Op::compute_op(name + ".upd", index, Phase::update, KernelClass::update,
                                          kUpdateFlopsPerParameter * parameters,
                                          kUpdateBytesPerParameter * parameters, batch));
    }
  }
}

// Ops are added step by step within a layer, so each (step, layer) range is contiguous.
void LayerOps::add(Step step, int layer, Op op) {
  auto& range = ranges_[std::size_t(step) * layer_count_ + std::size_t(layer)];
  if (range[0] == range[1]) range = {std::uint32_t(all_.size()), std::uint32_t(all_.size())};
  CNNPAR_ASSERT(range[1] == all_.size(), "ops of one (step, layer) are added together");
  all_.push_back(std::move(op));
  ++range[1];
}

std::span<const Op> LayerOps::ops(Step step, int layer) const {
  const auto& range = ranges_[std::size_t(step) * layer_count_ + std::size_t(layer)];
  return {all_.data() + range[0], all_.data() + range[1]};
}

const Op* LayerOps::find(int layer, const std::string& label) const {
  if (layer < 0 || std::size_t(layer) >= layer_count_) return nullptr;
  for (std::size_t step = 0; step < kSteps; ++step)
    for (const Op& op : ops(Step(step), layer))
      if (op.label == label) return &op;
  return nullptr;
}

void append(std::vector<Op>& program, std::span<const Op> ops) {
  program.insert(program.end(), ops.begin(), ops.end());
}

void reserve_program(std::vector<Op>& program, const LayerOps& ops, const Network& network, int iterations) {
  program.reserve(std::size_t(std::max(iterations, 1)) * (ops.op_count() + 2 * network.layers.size() + 1));
}

Schedule start_schedule(const Network& network, const StrategyOptions& options, int programs) {
  Schedule schedule;
  schedule.strategy = options.name;
  schedule.options = to_json(options);
  schedule.network = network.name;
  schedule.global_batch = options.global_batch;
  schedule.iterations = options.iterations;
  schedule.warmup_iterations = options.warmup_iterations;
  schedule.programs.resize(std::size_t(programs));
  for (int r = 0; r < programs; ++r) schedule.programs[std::size_t(r)].rank = r;
  return schedule;
}

int add_layer_collective(Schedule& schedule, const Platform& platform, CollectiveKind kind, double bytes,
                         std::vector<int> group, int root, const Carried& carried, std::string label) {
  Collective c;
  c.kind = kind;
  c.bytes = bytes;
  c.group = std::move(group);
  c.root = root;
  c.algorithm = kind == CollectiveKind::send ? Algorithm::direct : platform.algorithm_for(to_string(kind));
  c.label = std::move(label);
  c.payload = carried.payload;
  c.layers = {carried.layer};
  c.iteration = carried.iteration;
  c.images = carried.images;
  c.units = carried.units;
  c.split = carried.split;
  return schedule.add_collective(std::move(c));
}

double gradient_bytes(const Network& network, const std::vector<int>& layers) {
  double bytes = 0;
  for (int layer : layers) bytes += layer_cost(network.layers[std::size_t(layer)]).parameter_bytes();
  return bytes;
}

std::vector<int> parameter_layers_backward(const Network& network) {
  std::vector<int> layers;
  for (int i = int(network.layers.size()) - 1; i >= 0; --i)
    if (network.layers[std::size_t(i)].has_parameters()) layers.push_back(i);
  return layers;
}

std::vector<int> all_ranks(int ranks) {
  std::vector<int> group(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) group[std::size_t(r)] = r;
  return group;
}

std::int64_t rank_batch(std::int64_t global_batch, int ranks, int rank) {
  return global_batch / ranks + (rank < global_batch % ranks ? 1 : 0);
}

void replicate_program(Schedule& schedule, const StrategyOptions& options, const Network& network) {
  const int ranks = options.ranks;
  schedule.programs.resize(std::size_t(ranks));
  const std::int64_t larger = rank_batch(options.global_batch, ranks, 0);
  OpList smaller_program;
  if (options.global_batch % ranks != 0) {
    const LayerOps smaller_batch_ops(network, options.global_batch / ranks, options.global_batch);
    // Each op copied once: rank 0's, or its smaller-batch twin.
    const OpList& larger_program = schedule.programs[0].ops;
    std::vector<Op> ops;
    ops.reserve(larger_program.size());
    for (const Op& op : larger_program) {
      if (op.kind != OpKind::compute || op.batch != larger) {
        ops.push_back(op);
        continue;
      }
      const Op* replacement = smaller_batch_ops.find(op.layer, op.label);
      CNNPAR_ASSERT(replacement != nullptr, "every sub-batch op has a smaller-batch twin");
      ops.push_back(*replacement);
    }
    smaller_program = OpList(std::move(ops));
  }
  for (int r = 1; r < ranks; ++r) {
    schedule.programs[std::size_t(r)].rank = r;
    schedule.programs[std::size_t(r)].ops =
        rank_batch(options.global_batch, ranks, r) == larger ? schedule.programs[0].ops : smaller_program;
  }
}

void set_data_partitions(Schedule& schedule, const Network& network, const std::vector<int>& replicated_layers) {
  const int ranks = schedule.ranks();
  // Kinds and units are the same on every rank; only the batch slice differs.
  std::vector<LayerPartition> layers;
  layers.reserve(network.layers.size());
  for (std::size_t l = 0; l < network.layers.size(); ++l) {
    const bool replicated =
        std::find(replicated_layers.begin(), replicated_layers.end(), int(l)) != replicated_layers.end();
    layers.push_back({replicated ? PartitionKind::replicated : PartitionKind::data, {}, {0, layer_units(network.layers[l])}});
  }
  for (int r = 0; r < ranks; ++r) {
    std::vector<LayerPartition>& partitions = schedule.programs[std::size_t(r)].partitions;
    partitions = layers;
    const Range batch = even_slice(schedule.global_batch, ranks, r);
    for (LayerPartition& partition : partitions) partition.batch = batch;
  }
}

}  // namespace cnnpar::strategies
