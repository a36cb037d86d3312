#pragma once
// Runtime::Impl, the per-rank state behind real/runtime.hpp, shared by the files that hold its
// parts: runtime_setup.cpp, runtime_errors.cpp, runtime_passes.cpp, runtime_exchange.cpp and
// runtime.cpp (state).
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "model/network.hpp"
#include "model/partition.hpp"
#include "model/schedule.hpp"
#include "real/kernels.hpp"
#include "real/kernels_conv_direct.hpp"
#include "real/runtime.hpp"
#include "real/runtime_regions.hpp"

namespace cnnpar::real {

/** Whether an op of this class runs on oneDNN's convolution primitives (DirectConv). */
inline bool runs_conv_primitive(KernelClass kernel) {
  return kernel == KernelClass::conv || kernel == KernelClass::winograd;
}

// A layer's activations or errors: its own storage, the buffer of the layer before it (in-place
// relu and dropout), or a part of an arena. Never copied: a shared buffer points into another's.
class LayerBuffer {
 public:
  LayerBuffer() = default;
  LayerBuffer(LayerBuffer&&) noexcept = default;  // moving a vector keeps its storage
  LayerBuffer& operator=(LayerBuffer&&) noexcept = default;
  void allocate(std::size_t count) {
    own_.assign(count, 0.0f);
    data_ = own_.data();
    size_ = count;
  }
  void share(LayerBuffer& other) { place(other.data_, other.size_); }
  // Memory owned elsewhere (another layer's buffer, an arena), `count` floats at `data`.
  void place(float* data, std::size_t count) {
    std::vector<float>().swap(own_);
    data_ = data;
    size_ = count;
  }
  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  float* begin() { return data_; }
  float* end() { return data_ + size_; }
  const float* begin() const { return data_; }
  const float* end() const { return data_ + size_; }
  float& operator[](std::size_t i) { return data_[i]; }

 private:
  std::vector<float> own_;
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

struct Runtime::Impl {
  // Where a layer's input comes from and where its backward-data output goes.
  enum class Input { previous, extract, gathered };            // previous layer's output / local slice / allgather
  // into its errors / local slice / a collective / its own buffer, then added to the errors of
  // a layer read by several (their sum)
  enum class Errors { previous, extract, exchanged, summed };
  struct LayerState {
    const Layer* layer = nullptr;
    int index = 0;
    int producer = -1;                   // the layer whose output it reads (the first of several;
                                         // -1: the network input); the one before it in a chain
    int reader_edges = 0;                // inputs of other layers naming this one: its errors
                                         // are the sum of as many contributions
    int errors_received = 0;             // contributions so far in this backward pass
    bool in_cm = false, out_cm = false;  // channel-major (C, n, H, W) input / output
    LayerPartition held;                 // this rank's region of the output (and its errors)
    std::int64_t n = 0;                  // images this layer computes (held.batch.count, or a
                                         // parameter server worker's batch of the round)
    std::int64_t image_floats = 0;       // floats of one image in out and err
    Region out_region, in_region;        // held output; input this layer needs (over the previous output)
    Input input = Input::previous;
    Errors errors = Errors::previous;
    std::vector<float> xin, din;         // input and input errors over in_region (when not the previous layer's)
    ConvGeometry geo;                    // conv/pool, batch = n
    std::int64_t weights = 0, biases = 0;  // floats (a conv without bias has none)
    std::int64_t units_total = 0;        // output units of a parameterised layer (rows of W)
    std::int64_t offset = 0;             // into weights_/grads_/momentum_ (internal order)
    std::int64_t row_floats = 0;         // weights per output unit (C·KH·KW or K_b)
    LayerBuffer out, err;                // activations and errors over out_region (in-place
                                         // relu/dropout: the previous layer's buffers)
    std::vector<float> cols;             // conv: (C·KH·KW, n·OH·OW) kept for backward_weight
                                         // (empty when the columns are shared, see keep_columns)
    std::vector<float> rows_in;          // fc with channel-major input: (n, K_b)
    std::vector<float> rows_dx;          // fc with channel-major input: (n, K_b) errors
    std::vector<std::int32_t> argmax;    // max pool, like out
    std::vector<float> aux;              // lrn: scale; dropout: mask (like out)
    std::vector<float> bn_mean, bn_invstd;  // batchnorm: the last forward's batch statistics (C)
    std::vector<float> running_mean, running_var;  // batchnorm: kept for evaluation (C)
    bool synchronised = false;           // batchnorm over every rank's images (sync_bn)
    std::vector<float> bn_sums;          // synchronised batchnorm: (2·C) sums, added up over
                                         // the ranks by a statistics allreduce
    bool im2col_op = false, bias_op = false, col2im_op = false, softmax_bwd_op = false;
    bool im2col_w_op = false;            // backward_weight im2col op (recomputed columns)
    bool direct_ops = false;             // conv ops of kernel class conv or winograd: no columns
    ConvAlgorithm direct_algorithm = ConvAlgorithm::direct;  // winograd for kernel class winograd
    std::unique_ptr<DirectConv> direct;  // their primitives (this rank's units and images)
    // Replicated with batch-sliced activations (Lee): gathered (N, K_b) inputs and (N, K_c)
    // errors by iteration parity; staged, this rank's rows (lee_rows, K_b) and (lee_rows, K_c).
    bool replicated = false;
    std::vector<float> gathered_in[2], gathered_err[2], stage_in[2], stage_err[2];
    // An uneven batch split: every member sends `lee_rows` rows (its own, zero-padded) and the
    // padded blocks land here first, then are compacted into gathered_*.
    std::int64_t lee_rows = 0;
    bool lee_padded = false;
    std::vector<float> padded_in[2], padded_err[2];  // (P·lee_rows, K_b), (P·lee_rows, K_c)
    int in_ready[2] = {-1, -1}, err_ready[2] = {-1, -1};  // iteration completed into the slot
    // The units of the weight rows this rank owns: all, or a model-parallel slice.
    float* w(std::vector<float>& a) const { return a.data() + offset + held.units.begin * row_floats; }
    float* b(std::vector<float>& a) const { return a.data() + offset + weights + held.units.begin; }
    float* bias_of(std::vector<float>& a) const { return biases > 0 ? b(a) : nullptr; }
    bool model() const { return held.kind == PartitionKind::model && layer->has_parameters(); }
    bool none() const { return held.kind == PartitionKind::none; }
    // Weight gradients since the last update: a second backward_weight (another sub-batch of
    // Veeriah & Modi's scheme c) adds to them instead of overwriting.
    bool gradient_pending = false;
    // Rows of the weights this rank owns (the whole model is the sum over ranks of the owned
    // parts): the rows it updates, or none.
    Range owned_rows;
  };

  const Network net;  // own copy: the layers are pointed to below
  int rank = 0, ranks = 1;
  std::int64_t n = 0, N = 0;  // images of the input this rank reads, and the global batch
  std::int64_t first_image = 0;  // index in the global batch of this rank's first input image
  std::vector<std::int64_t> rank_batches;  // input images of every rank
  std::vector<std::vector<LayerPartition>> partitions;  // [rank][layer]
  int schedule_iterations = 0;
  std::uint64_t seed = 0;
  SgdConfig sgd;
  std::int64_t tile_columns = 0;
  InnerMode inner = InnerMode::gemm;
  std::int64_t iteration_base = 0;

  std::vector<LayerState> layers;
  // Errors of layers whose lifetimes never meet share the arena, each at its planned offset.
  struct ErrorPlacement {
    int layer = 0;
    std::int64_t offset = 0;  // floats
  };
  std::vector<ErrorPlacement> error_placements;
  std::int64_t error_arena_floats = 0;
  std::vector<float> error_arena;
  std::int64_t error_storage_floats = 0;  // the arena and the layers' own error buffers
  bool input_cm = false;
  std::vector<float> input;   // (C, n, H, W) or (n, C·H·W)
  std::vector<int> labels;    // images of the softmax layer's region
  Range label_range;          // which images `labels` covers
  std::vector<float> dcols;   // shared conv backward-data columns, (C·KH·KW, n·OH·OW) of the layer using it
  // Lee: keep each conv layer's im2col columns for the weight gradient "if memory space is
  // sufficiently large"; above kKeepColumnsLimitBytes one buffer is shared and the
  // backward_weight gemm op redoes the im2col first.
  static constexpr double kKeepColumnsLimitBytes = 2.0 * 1024 * 1024 * 1024;
  bool keep_columns = true;
  std::vector<float> shared_cols;  // (C·KH·KW, n·OH·OW) of the conv layer that last filled it
  std::int64_t max_cols = 0;
  float* columns(LayerState& x) { return keep_columns ? x.cols.data() : shared_cols.data(); }
  void set_keep_columns(bool keep);  // runtime_setup.cpp
  std::vector<float> weights, grads, momentum;  // internal order; per layer W (units, row_floats), b (units)
  std::int64_t params = 0;
  double loss_sum = 0;
  std::int64_t correct = 0;
  std::int64_t loss_images = 0;  // images of the last forward's loss (sub-batches add up)
  // A parameter server's worker: the global weights it trains from (empty elsewhere); a server
  // stages its weight replies.
  std::vector<float> base_weights;
  bool serves = false;
  // A worker's images per schedule-local iteration (its round; 0: every image it holds, -1: it
  // computes nothing, an IDPA worker's first rounds may be empty): IDPA's rounds grow
  // (Algorithm 3.1). Its tensors keep their layouts over the round's images only.
  std::vector<std::int64_t> round_batches;
  std::int64_t loss_batch = 0;   // the loss and gradients are means over this many images
  int loss_holders = 1;          // ranks that compute the loss over the whole batch (1 if sliced)
  bool counts_correct = true;    // this rank reports its classified images (the lowest holder)
  bool reads_dataset = true;     // false when the input arrives by a collective (a conv_split worker)
  std::vector<float> accumulated;  // scratch: [dW, db] of the held rows a pending backward_weight adds to
  std::map<int, std::vector<float>> staging;  // collective id -> packed buffer
  std::map<int, std::vector<float>> staging_recv;

  Impl(const Network& network) : net(network) {}

  const float* in_of(int l) const {
    const LayerState& x = layers[std::size_t(l)];
    if (x.input != Input::previous) return x.xin.data();
    return x.producer < 0 ? input.data() : layers[std::size_t(x.producer)].out.data();
  }
  std::int64_t global_iteration(int it) const { return iteration_base + it; }

  // Region of layer l's output that rank r holds, and the input region layer l needs on rank r.
  Region held_region(int r, int l) const {
    const Layer& ly = net.layers[std::size_t(l)];
    const LayerPartition& p = partitions[std::size_t(r)][std::size_t(l)];
    return {p.batch, p.units, ly.out.h * ly.out.w, layers[std::size_t(l)].out_cm};
  }
  Region input_region(int r, int l) const {
    const Layer& ly = net.layers[std::size_t(l)];
    const LayerPartition& p = partitions[std::size_t(r)][std::size_t(l)];
    const bool all_units = ly.has_parameters() || ly.spec.kind == LayerKind::lrn || ly.spec.kind == LayerKind::softmax;
    return {p.batch, all_units ? Range{0, ly.in.c} : p.units, ly.in.h * ly.in.w, layers[std::size_t(l)].in_cm};
  }

  // Set-up from the Schedule's partitions (runtime_setup.cpp), in the order init runs it.
  void init(const Schedule& schedule);
  void read_partitions(const Schedule& schedule);
  void bind_layers();
  void find_layer_ops(const Program& program);
  void set_input(const Schedule& schedule);
  void lay_out_parameters();
  std::int64_t allocate_layer(int l);  // returns the floats of a conv layer's columns, else 0
  // Error buffers (runtime_errors.cpp): planned from the program, then placed in the arena
  // (share) or each in its own storage.
  void allocate_errors(const Schedule& schedule);
  void place_errors(bool share);
  int error_owner(int l) const;  // the layer whose error storage layer l uses (in place: an earlier one)
  std::int64_t shape_layer(LayerState& x);
  void choose_transitions(LayerState& x);
  void allocate_gathered(LayerState& x);
  void allocate_columns(std::int64_t max_dcols, std::int64_t total_cols);
  void initialise_weights(const Schedule& schedule);
  void set_owned_rows(const Schedule& schedule);
  /** The lowest rank that computes unit `unit` of layer `l` (rank 0 if none does). */
  int statistics_owner(int l, std::int64_t unit) const;
  bool in_place(int l) const;
  void set_active_batch(std::int64_t images);  // a worker's round (runtime_passes.cpp)

  // The layer passes (runtime_passes.cpp).
  float* err_in(int l);
  float* begin_added_errors(LayerState& x, std::size_t count);
  void finish_added_errors(LayerState& x);
  void finish_errors(LayerState& x);
  void contribute_errors(int producer, const float* errors);
  void prepare_input(LayerState& x);
  bool begin_gradient(LayerState& x);
  void end_gradient(LayerState& x);
  void forward(LayerState& x, const Op& op, int it, const Tiling& t);
  void backward_data(LayerState& x, const Op& op, const Tiling& t);
  void backward_weight(LayerState& x, const Op& op, const Tiling& t);
  void update(LayerState& x, bool all_rows);
  Range op_rows(const LayerState& x, const Op& op) const;

  // The collective exchanges (runtime_exchange.cpp).
  std::vector<std::pair<std::int64_t, std::int64_t>> spans(const std::vector<int>& ls,
                                                           const Range& units = {}) const;
  // Where a collective's data comes from and goes to on rank r (see prepare_exchange).
  Region source_region(int r, const Collective& c) const;
  Region destination_region(int r, const Collective& c) const;
  float* source_data(const Collective& c);
  float* destination_data(const Collective& c);
  CollectiveBuffers prepare_exchange(const Collective& c);
  void complete_exchange(const Collective& c);
};

}  // namespace cnnpar::real
