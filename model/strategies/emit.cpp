#include "model/strategies/emit.hpp"

#include <algorithm>

#include "model/cost.hpp"

namespace cnnpar::strategies {
namespace {

constexpr double kFloatBytes = 4.0;

double gemm_bytes(const GemmShape& g) {
  return kFloatBytes * double(g.m * g.k + g.k * g.n + g.m * g.n);
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

LayerOps::LayerOps(const Network& network, std::int64_t batch, std::int64_t full_batch) {
  const std::size_t count = network.layers.size();
  forward_.resize(count);
  backward_data_.resize(count);
  backward_weight_.resize(count);
  backward_weight_full_.resize(count);
  update_.resize(count);

  int first_parameter_layer = int(count);
  for (std::size_t i = 0; i < count; ++i)
    if (network.layers[i].has_parameters()) { first_parameter_layer = int(i); break; }

  const double n = double(batch);
  for (std::size_t i = 0; i < count; ++i) {
    const Layer& layer = network.layers[i];
    const LayerCost cost = layer_cost(layer);
    const int index = int(i);
    const std::string& name = layer.spec.name;
    const double in_bytes = kFloatBytes * double(cost.input_elements) * n;
    const double out_bytes = kFloatBytes * double(cost.output_elements) * n;
    const bool needs_errors_below = index > first_parameter_layer;

    if (layer.spec.kind == LayerKind::conv) {
      // Lee Eq. 4-5: im2col, then one GEMM for the whole sub-batch.
      const GemmShape fwd = forward_gemm(layer, batch);
      const double columns_bytes = kFloatBytes * double(fwd.k) * double(fwd.n);
      forward_[i].push_back(Op::compute_op(name + ".im2col", index, Phase::forward, KernelClass::im2col, 0,
                                           in_bytes + columns_bytes, batch));
      forward_[i].push_back(Op::compute_op(name + ".fwd", index, Phase::forward, KernelClass::gemm, fwd.flops(),
                                           gemm_bytes(fwd), batch, fwd));
      if (needs_errors_below) {
        // Lee Eq. 6-7: W^T E, then col2im (accumulating adds).
        const GemmShape bwd = backward_data_gemm(layer, batch);
        backward_data_[i].push_back(Op::compute_op(name + ".bwd_d", index, Phase::backward_data, KernelClass::gemm,
                                                   bwd.flops(), gemm_bytes(bwd), batch, bwd));
        backward_data_[i].push_back(Op::compute_op(name + ".col2im", index, Phase::backward_data, KernelClass::col2im,
                                                   double(bwd.m) * double(bwd.n), columns_bytes + in_bytes, batch));
      }
    } else if (layer.spec.kind == LayerKind::fc) {
      const GemmShape fwd = forward_gemm(layer, batch);
      forward_[i].push_back(Op::compute_op(name + ".fwd", index, Phase::forward, KernelClass::gemm, fwd.flops(),
                                           gemm_bytes(fwd), batch, fwd));
      if (needs_errors_below) {
        const GemmShape bwd = backward_data_gemm(layer, batch);
        backward_data_[i].push_back(Op::compute_op(name + ".bwd_d", index, Phase::backward_data, KernelClass::gemm,
                                                   bwd.flops(), gemm_bytes(bwd), batch, bwd));
      }
    } else {
      const KernelClass kernel = eltwise_class(layer.spec.kind);
      forward_[i].push_back(Op::compute_op(name + ".fwd", index, Phase::forward, kernel, cost.forward_flops * n,
                                           in_bytes + out_bytes, batch));
      // The loss layer always produces the errors of the network's output.
      if (needs_errors_below || layer.spec.kind == LayerKind::softmax)
        backward_data_[i].push_back(Op::compute_op(name + ".bwd_d", index, Phase::backward_data, kernel,
                                                   cost.backward_data_flops * n, 2 * out_bytes + in_bytes, batch));
    }

    if (layer.has_parameters()) {
      // Lee Eq. 8: E · C^T (conv columns kept from forward), plus bias row sums.
      const GemmShape w = backward_weight_gemm(layer, batch);
      backward_weight_[i].push_back(Op::compute_op(name + ".bwd_w", index, Phase::backward_weight, KernelClass::gemm,
                                                   w.flops(), gemm_bytes(w), batch, w));
      const GemmShape w_full = backward_weight_gemm(layer, full_batch);
      backward_weight_full_[i].push_back(Op::compute_op(name + ".bwd_wf", index, Phase::backward_weight,
                                                        KernelClass::gemm, w_full.flops(), gemm_bytes(w_full),
                                                        full_batch, w_full));
      const double parameters = double(cost.parameters());
      update_[i].push_back(Op::compute_op(name + ".upd", index, Phase::update, KernelClass::update,
                                          kUpdateFlopsPerParameter * parameters,
                                          kUpdateBytesPerParameter * parameters, batch));
    }
  }
}

void append(std::vector<Op>& program, const std::vector<Op>& ops) {
  program.insert(program.end(), ops.begin(), ops.end());
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

void replicate_program(Schedule& schedule, int ranks) {
  schedule.programs.resize(std::size_t(ranks));
  for (int r = 1; r < ranks; ++r) {
    schedule.programs[std::size_t(r)].rank = r;
    schedule.programs[std::size_t(r)].ops = schedule.programs[0].ops;
  }
}

}  // namespace cnnpar::strategies
