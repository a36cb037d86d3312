#pragma once
// Per-layer cost model: FLOPs, parameters, activation sizes and the im2col GEMM
// shapes of Lee et al. (Eq. 4-8); gradient counts of Lee et al. Eq. 9-10.
#include <cstdint>
#include <string>

#include "model/network.hpp"

namespace cnnpar {

/** C (m × n) = A (m × k) · B (k × n). */
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  std::string to_string() const;  ///< "gemm MxNxK"
  bool operator==(const GemmShape&) const = default;
};

/** Costs of one layer for one image. FLOPs count a multiply-add as 2. */
struct LayerCost {
  double forward_flops = 0;          ///< per image
  double backward_data_flops = 0;    ///< per image (errors to the layer below)
  double backward_weight_flops = 0;  ///< per image (weight + bias gradients)
  std::int64_t weights = 0;          ///< weight parameters
  std::int64_t biases = 0;           ///< bias parameters
  std::int64_t input_elements = 0;   ///< per image
  std::int64_t output_elements = 0;  ///< per image (activations == errors)
  std::int64_t parameters() const { return weights + biases; }
  double parameter_bytes() const { return 4.0 * double(parameters()); }  ///< FP32
};

LayerCost layer_cost(const Layer& layer);

/** Lee Eq. 4-5: W (D_o × D_i·R_f·C_f) · im2col(A) (D_i·R_f·C_f × N·R_o·C_o);
 *  for fc: W (K_c × K_b) · A (K_b × N). `batch` is N; `units` is the number of output maps
 *  or neurons computed (D_o or K_c of a model-parallel slice; 0 = all of them). */
GemmShape forward_gemm(const Layer& layer, std::int64_t batch, std::int64_t units = 0);
/** Lee Eq. 6: W^T (D_i·R_f·C_f × D_o) · E (D_o × N·R_o·C_o), then col2im (Eq. 7). A unit
 *  slice gives partial sums of the input errors over its D_o rows. */
GemmShape backward_data_gemm(const Layer& layer, std::int64_t batch, std::int64_t units = 0);
/** Lee Eq. 8: E (D_o × N·R_o·C_o) · C^T (N·R_o·C_o × D_i·R_f·C_f). */
GemmShape backward_weight_gemm(const Layer& layer, std::int64_t batch, std::int64_t units = 0);

/** Lee Eq. 9 (S_w, weight gradients) and Eq. 10 (S_b, bias gradients). */
struct GradientCounts {
  std::int64_t weights = 0;  ///< S_w
  std::int64_t biases = 0;   ///< S_b
};
GradientCounts gradient_counts(const Network& network);

/** Lee Sec. III-C.2: data exchanged by a replicated fc layer, (K_b + K_c)·N values, versus
 *  the K_b·K_c weight gradients it would otherwise allreduce. */
struct ReplicatedFcExchange {
  std::int64_t gathered_values = 0;  ///< (K_b + K_c)·N
  std::int64_t gradient_values = 0;  ///< K_b·K_c
};
ReplicatedFcExchange replicated_fc_exchange(const Layer& fc_layer, std::int64_t batch);

/** Total parameters of the network. */
std::int64_t total_parameters(const Network& network);

}  // namespace cnnpar
