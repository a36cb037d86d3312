// Per-layer cost model (model/cost.hpp).
//
// conv and fc follow the Intel note: forward = 2·ifm·ofm·kw·kh·ow·oh FLOPs per image
// (fc: 2·K_b·K_c), and backward-data and weight-gradient cost the same each. The bias
// add and bias-gradient sums (ofm·ow·oh each) are left out, as in the Intel count, so
// that a GEMM shape's flops() for N images equals N times the per-image figure.
//
// Layers without GEMMs use small element-wise counts (one operation = one FLOP):
//   pool    forward  kh·kw per output element (compare or add over the window)
//           backward max: 1 per output element (route the error to the argmax);
//                    avg: kh·kw per output element (spread the error over the window)
//   relu    forward 1, backward 1 per element (compare / select)
//   dropout forward 1, backward 1 per element (mask multiply; random numbers not counted)
//   lrn     forward 2·size + 4 per element (window Σx² as size multiply-adds, the affine
//           k + α/size·Σ, the power, the multiply); backward 2·size + 7 per element
//           (window sum of top_diff·top/scale, plus the power and four multiply/adds)
//   softmax forward 5 per class (max, subtract, exp, sum, divide; the log-loss is one
//           value per image and ignored); backward 1 per class (p − y)
//   batchnorm forward 4 per element (Σx and Σx² for the batch statistics, then x·scale + shift
//           with scale = γ/σ and shift = β − μ·scale); weight gradient 3 per element (x̂ = (x − μ)/σ,
//           Σ dy·x̂, Σ dy); backward 3 per element (dx = scale · (dy − mean(dy) − x̂·mean(dy·x̂))
//           with the means from the weight gradient's sums). Parameters: γ as weights, β as
//           biases, C each; the running mean and variance are state, not parameters.
//   add     forward (inputs − 1) per element; backward none (each input receives the errors)
//   concat  forward and backward none (copies)
#include "model/cost.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar {

std::string GemmShape::to_string() const { return fmt::format("gemm {}x{}x{}", m, n, k); }

LayerCost layer_cost(const Layer& layer) {
  const LayerSpec& spec = layer.spec;
  LayerCost cost;
  cost.input_elements = layer.in.elements();
  cost.output_elements = layer.out.elements();
  const double out = double(cost.output_elements);
  switch (spec.kind) {
    case LayerKind::conv: {
      cost.weights = spec.out_maps * layer.in.c * spec.kernel_h * spec.kernel_w;
      cost.biases = spec.bias ? spec.out_maps : 0;
      // 2·ifm·ofm·kw·kh·ow·oh (Intel)
      const double flops = 2.0 * double(layer.in.c) * double(spec.out_maps) * double(spec.kernel_w) *
                           double(spec.kernel_h) * double(layer.out.w) * double(layer.out.h);
      cost.forward_flops = cost.backward_data_flops = cost.backward_weight_flops = flops;
      break;
    }
    case LayerKind::fc: {
      const std::int64_t kb = layer.in.elements();
      cost.weights = kb * spec.outputs;
      cost.biases = spec.outputs;
      const double flops = 2.0 * double(kb) * double(spec.outputs);
      cost.forward_flops = cost.backward_data_flops = cost.backward_weight_flops = flops;
      break;
    }
    case LayerKind::pool: {
      const double window = double(spec.kernel_h) * double(spec.kernel_w);
      cost.forward_flops = out * window;
      cost.backward_data_flops = spec.pool_mode == PoolMode::max ? out : out * window;
      break;
    }
    case LayerKind::relu:
    case LayerKind::dropout:
      cost.forward_flops = out;
      cost.backward_data_flops = out;
      break;
    case LayerKind::lrn:
      cost.forward_flops = out * (2.0 * double(spec.lrn_size) + 4.0);
      cost.backward_data_flops = out * (2.0 * double(spec.lrn_size) + 7.0);
      break;
    case LayerKind::softmax:
      cost.forward_flops = 5.0 * out;
      cost.backward_data_flops = out;
      break;
    case LayerKind::batchnorm:
      cost.weights = cost.biases = layer.out.c;
      cost.forward_flops = 4.0 * out;
      cost.backward_weight_flops = 3.0 * out;
      cost.backward_data_flops = 3.0 * out;
      break;
    case LayerKind::add:
      cost.input_elements = std::int64_t(layer.inputs.size()) * cost.output_elements;
      cost.forward_flops = double(layer.inputs.size() - 1) * out;  // infer_shapes: two or more inputs
      break;
    case LayerKind::concat:
      break;
  }
  return cost;
}

// Non-GEMM layers get the empty shape {0, 0, 0} (zero FLOPs).

namespace {
// D_o (conv) or K_c (fc) of the slice: `units`, or every output unit when 0.
std::int64_t sliced_units(const Layer& layer, std::int64_t units) {
  CNNPAR_ASSERT(units >= 0 && units <= layer.out.c, "unit slice outside the layer: " + layer.spec.name);
  return units > 0 ? units : layer.out.c;
}
}  // namespace

GemmShape forward_gemm(const Layer& layer, std::int64_t batch, std::int64_t units) {
  CNNPAR_ASSERT(batch >= 1, "forward_gemm needs a positive batch");
  const LayerSpec& spec = layer.spec;
  if (spec.kind == LayerKind::conv)  // W (D_o × D_i·R_f·C_f) · C (D_i·R_f·C_f × N·R_o·C_o)
    return {sliced_units(layer, units), batch * layer.out.h * layer.out.w, layer.in.c * spec.kernel_h * spec.kernel_w};
  if (spec.kind == LayerKind::fc)  // W (K_c × K_b) · A (K_b × N)
    return {sliced_units(layer, units), batch, layer.in.elements()};
  return {};
}

GemmShape backward_data_gemm(const Layer& layer, std::int64_t batch, std::int64_t units) {
  CNNPAR_ASSERT(batch >= 1, "backward_data_gemm needs a positive batch");
  const LayerSpec& spec = layer.spec;
  if (spec.kind == LayerKind::conv)  // W^T (D_i·R_f·C_f × D_o) · E (D_o × N·R_o·C_o)
    return {layer.in.c * spec.kernel_h * spec.kernel_w, batch * layer.out.h * layer.out.w, sliced_units(layer, units)};
  if (spec.kind == LayerKind::fc)  // W^T (K_b × K_c) · E (K_c × N)
    return {layer.in.elements(), batch, sliced_units(layer, units)};
  return {};
}

GemmShape backward_weight_gemm(const Layer& layer, std::int64_t batch, std::int64_t units) {
  CNNPAR_ASSERT(batch >= 1, "backward_weight_gemm needs a positive batch");
  const LayerSpec& spec = layer.spec;
  if (spec.kind == LayerKind::conv)  // E (D_o × N·R_o·C_o) · C^T (N·R_o·C_o × D_i·R_f·C_f)
    return {sliced_units(layer, units), layer.in.c * spec.kernel_h * spec.kernel_w, batch * layer.out.h * layer.out.w};
  if (spec.kind == LayerKind::fc)  // E (K_c × N) · A^T (N × K_b)
    return {sliced_units(layer, units), layer.in.elements(), batch};
  return {};
}

GradientCounts gradient_counts(const Network& network) {
  GradientCounts counts;
  for (const Layer& layer : network.layers) {
    if (layer.spec.kind == LayerKind::conv) {
      // Eq. 9: D_o·D_i·R_f·C_f; Eq. 10: D_o
      counts.weights += layer.spec.out_maps * layer.in.c * layer.spec.kernel_h * layer.spec.kernel_w;
      counts.biases += layer.spec.bias ? layer.spec.out_maps : 0;
    } else if (layer.spec.kind == LayerKind::fc) {
      // Eq. 9: K_b·K_c; Eq. 10: K_c
      counts.weights += layer.in.elements() * layer.spec.outputs;
      counts.biases += layer.spec.outputs;
    }
  }
  return counts;
}

ReplicatedFcExchange replicated_fc_exchange(const Layer& fc_layer, std::int64_t batch) {
  CNNPAR_ASSERT(fc_layer.spec.kind == LayerKind::fc,
                "replicated_fc_exchange on non-fc layer '" + fc_layer.spec.name + "'");
  CNNPAR_ASSERT(batch >= 1, "replicated_fc_exchange needs a positive batch");
  const std::int64_t kb = fc_layer.in.elements();
  const std::int64_t kc = fc_layer.spec.outputs;
  return {(kb + kc) * batch, kb * kc};
}

std::int64_t total_parameters(const Network& network) {
  std::int64_t total = 0;
  for (const Layer& layer : network.layers) total += layer_cost(layer).parameters();
  return total;
}

}  // namespace cnnpar
