#pragma once
// Per-layer op emission shared by the strategy builders.
//
// Labels are "<layer>.<step>" with steps im2col, fwd, bwd_d, col2im, bwd_w, bwd_wf (full-batch
// weight gradient of a replicated fc layer) and upd; short labels stay in std::string's
// small buffer, which keeps 128-node sweeps allocation-light.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/schedule.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::strategies {

/** What one rank computes of one layer: images and output units (0 = every unit). */
struct LayerSlice {
  std::int64_t batch = 0;
  std::int64_t units = 0;
};

/** Ops of every layer and phase for one sub-batch size, built once and copied into programs. */
class LayerOps {
 public:
  /** `batch` = images per rank per iteration (N/P); `full_batch` = N (replicated fc gradients). */
  LayerOps(const Network& network, std::int64_t batch, std::int64_t full_batch);
  /** Per layer its own slice (model and hybrid parallelism); GEMM shapes, FLOPs and bytes
   *  follow from it. `full_batch` = N for the weight gradients over the whole batch. */
  LayerOps(const Network& network, const std::vector<LayerSlice>& slices, std::int64_t full_batch);

  std::span<const Op> forward(int layer) const { return ops(Step::forward, layer); }
  /** Errors to the layer below; empty for layers that need none (at or below the first
   *  parameterised layer, whose input gradient nobody consumes). */
  std::span<const Op> backward_data(int layer) const { return ops(Step::backward_data, layer); }
  /** Weight and bias gradients over the sub-batch; empty for layers without parameters. */
  std::span<const Op> backward_weight(int layer) const { return ops(Step::backward_weight, layer); }
  /** Weight gradient over the full batch N (lee's replicated fc layers). */
  std::span<const Op> backward_weight_full(int layer) const { return ops(Step::backward_weight_full, layer); }
  /** SGD update (momentum + weight decay); empty for layers without parameters. */
  std::span<const Op> update(int layer) const { return ops(Step::update, layer); }
  /** The op of `layer` with this label, or nullptr (labels are unique per layer and step). */
  const Op* find(int layer, const std::string& label) const;
  /** Ops of every layer and step. */
  std::size_t op_count() const { return all_.size(); }

 private:
  enum class Step { forward, backward_data, backward_weight, backward_weight_full, update };
  static constexpr std::size_t kSteps = 5;
  std::span<const Op> ops(Step step, int layer) const;
  void add(Step step, int layer, Op op);

  // One buffer for all ops (few allocations per schedule); ranges index it by (step, layer).
  std::vector<Op> all_;
  std::vector<std::array<std::uint32_t, 2>> ranges_;  // [step * layers + layer] = {begin, end}
  std::size_t layer_count_ = 0;
};

void append(std::vector<Op>& program, std::span<const Op> ops);
/** Reserves what a program of `iterations` passes over every op of `ops`, a post and a wait per
 *  layer and a mark holds, so that emitting it copies no op twice. */
void reserve_program(std::vector<Op>& program, const LayerOps& ops, const Network& network, int iterations);

/** A schedule with the options' header fields (strategy, options, network, batch, iterations)
 *  and `programs` empty programs numbered 0.. (no programs: the builder adds them). */
Schedule start_schedule(const Network& network, const StrategyOptions& options, int programs);

/** The parts of a collective that name what it carries. */
struct Carried {
  Payload payload = Payload::none;
  int layer = -1;
  int iteration = 0;
  Range images;  ///< activations/errors of one sub-batch (count 0 = all)
  Range units;   ///< weights/gradients rows (count 0 = all)
  Split split = Split::none;
};

/** Adds a collective of `kind` over `group` (root -1 = none) that carries `carried`, with the
 *  algorithm the platform configures for its kind (direct for a point-to-point send), and
 *  returns its id. */
int add_layer_collective(Schedule& schedule, const Platform& platform, CollectiveKind kind, double bytes,
                         std::vector<int> group, int root, const Carried& carried, std::string label);

/** Parameter bytes (FP32 weights + biases) of the given layers. */
double gradient_bytes(const Network& network, const std::vector<int>& layers);

/** Indices of the layers with parameters, in backward order (last layer first). */
std::vector<int> parameter_layers_backward(const Network& network);

/** All ranks 0..P-1. */
std::vector<int> all_ranks(int ranks);

/** Images of `rank` when N images are split over P ranks: ceil(N/P) for the first N % P ranks. */
std::int64_t rank_batch(std::int64_t global_batch, int ranks, int rank);

/** Shares rank 0's program with every other rank (data-parallel programs are identical). With
 *  an uneven split, ranks that take floor(N/P) images get rank 0's program with its sub-batch
 *  ops swapped for those of LayerOps(network, N/P, N) (same layers and labels); full-batch ops
 *  stay. */
void replicate_program(Schedule& schedule, const StrategyOptions& options, const Network& network);

/** Every rank's partitions of a data-parallel schedule: each layer data over the rank's batch
 *  slice, except `replicated_layers` (Lee's replicated gradient calculation: the same batch
 *  slice of activations, the weight gradient over the whole batch). */
void set_data_partitions(Schedule& schedule, const Network& network, const std::vector<int>& replicated_layers = {});

}  // namespace cnnpar::strategies
