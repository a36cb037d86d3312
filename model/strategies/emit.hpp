#pragma once
// Per-layer op emission shared by the strategy builders.
//
// Labels are "<layer>.<step>" with steps im2col, fwd, bwd_d, col2im, bwd_w, bwd_wf (full-batch
// weight gradient of a replicated fc layer) and upd; short labels stay in std::string's
// small buffer, which keeps 128-node sweeps allocation-light.
#include <cstdint>
#include <vector>

#include "model/network.hpp"
#include "model/schedule.hpp"

namespace cnnpar::strategies {

/** Ops of every layer and phase for one sub-batch size, built once and copied into programs. */
class LayerOps {
 public:
  /** `batch` = images per rank per iteration (N/P); `full_batch` = N (replicated fc gradients). */
  LayerOps(const Network& network, std::int64_t batch, std::int64_t full_batch);

  const std::vector<Op>& forward(int layer) const { return forward_[std::size_t(layer)]; }
  /** Errors to the layer below; empty for layers that need none (at or below the first
   *  parameterised layer, whose input gradient nobody consumes). */
  const std::vector<Op>& backward_data(int layer) const { return backward_data_[std::size_t(layer)]; }
  /** Weight and bias gradients over the sub-batch; empty for layers without parameters. */
  const std::vector<Op>& backward_weight(int layer) const { return backward_weight_[std::size_t(layer)]; }
  /** Weight gradient over the full batch N (lee's replicated fc layers). */
  const std::vector<Op>& backward_weight_full(int layer) const { return backward_weight_full_[std::size_t(layer)]; }
  /** SGD update (momentum + weight decay); empty for layers without parameters. */
  const std::vector<Op>& update(int layer) const { return update_[std::size_t(layer)]; }

 private:
  std::vector<std::vector<Op>> forward_, backward_data_, backward_weight_, backward_weight_full_, update_;
};

void append(std::vector<Op>& program, const std::vector<Op>& ops);

/** Parameter bytes (FP32 weights + biases) of the given layers. */
double gradient_bytes(const Network& network, const std::vector<int>& layers);

/** Indices of the layers with parameters, in backward order (last layer first). */
std::vector<int> parameter_layers_backward(const Network& network);

/** All ranks 0..P-1. */
std::vector<int> all_ranks(int ranks);

/** Copies rank 0's program to every other rank (data-parallel programs are identical). */
void replicate_program(Schedule& schedule, int ranks);

}  // namespace cnnpar::strategies
