#pragma once
// Per-rank model state that the MPI interpreter drives op by op (no MPI in here).
//
// One Runtime holds the tensors of one rank, every one sized from the partitions of the
// Schedule (model/partition.hpp; all ranks' partitions are read, to unpack their blocks):
// weights, gradients, momentum (whole arrays; a model-parallel layer uses its rows), the
// activations and errors of the region of every layer this rank holds (the errors of layers
// needed at different times in one arena, see set_share_errors), the input (and input
// errors) a layer needs when the previous layer holds another region, the im2col columns
// kept from forward for the weight gradient (or one shared column buffer, see
// set_keep_columns), and the gathered buffers of replicated layers
// with batch-sliced activations (Lee). The interpreter walks the rank's Program:
//
//   for op in program.ops:
//     mark    -> ++iteration (the schedule-local iteration passed below counts marks seen)
//     compute -> runtime.run_compute(op, iteration, poll_mpi)
//     post    -> b = runtime.prepare(collective); start MPI_I<kind>(b.send, b.recv, ...)
//     wait    -> MPI_Wait ...; runtime.complete(collective)
//   and once at the start of each iteration (before its first compute op):
//     runtime.load_batch(iteration, dataset)
//   at the end of the schedule: runtime.finish_schedule()
//
// Layouts (Lee et al. Sec. III-A):
//  * conv/pool/lrn (and relu/dropout after them) activations and errors are channel-major
//    across the held images and maps: (C_held, n, H, W) — Lee's D × N·R·C matrix;
//  * fc (and relu/dropout/softmax after it) activations and errors are (n, K_held) row-major,
//    so an allgather of per-rank (n, K) blocks in rank order is the (N, K) matrix;
//  * the first fc after a channel-major layer transposes (C, n, H, W) -> (n, C·H·W) in its
//    forward gemm op (and its errors back in its backward_data gemm op).
//
// Which work an op does is decided by (layer kind, phase, kernel class):
//  conv  forward  im2col: columns (C·KH·KW, n·OH·OW) of the input, kept for backward_weight
//        forward  gemm:   out = W · columns + bias      (does the im2col itself when the
//                          program has no im2col op for that layer)
//        forward  eltwise: bias add (then the gemm op leaves the bias out)
//        backward_data gemm: dcolumns = W^T · E          (+ col2im when there is no col2im op)
//        backward_data col2im: E_in = col2im(dcolumns)   (accumulating)
//        backward_weight im2col: the columns again, into the shared buffer (--columns recomputed)
//        backward_weight gemm: dW = E · columns^T, db = row sums of E (when the columns are
//                          neither kept nor refilled by an im2col op, it redoes the im2col first)
//        With set_inner_mode(dag) the forward and backward_weight gemm ops run as BPT-CNN's
//        inner-layer task DAG (real/inner_dag.hpp), whose tasks extract their own areas: the
//        im2col ops then do nothing (their work is timed in the gemm op that follows).
//  relu and dropout work in place (on the previous layer's output and errors) when the
//  previous layer's backward does not read its output; see Impl::in_place.
//  fc    forward gemm: (n, K_c) = (n, K_b) · W^T + b;  backward_data gemm: E_in = E · W;
//        backward_weight gemm: dW = E^T · X, db = column sums of E
//  pool/relu/lrn/dropout: forward / backward_data, one op each
//  batchnorm: forward = batch statistics, normalisation, running statistics; backward_data
//        = input errors; backward_weight = scale and shift gradients (each from the sums)
//  add/concat: forward = sum / channel blocks of the inputs; backward_data = each input's share
// Graph networks (data parallel only): a layer reads the outputs of the layers it names; the
// errors of an output read by several layers are the sum of their contributions.
//  softmax: forward = probabilities + loss; backward_data = (p - onehot) / N_global
//        (computed in forward when the program has no softmax backward_data op)
//  any parameterised layer, phase update, kernel update: SGD step of that layer
//        (layer == -1: every layer that is not replicated).
// A replicated layer l whose activations are batch-sliced (Lee's replicated gradient
// calculation; the partitions say so, no collective is inspected):
//  * `activations` allgather (layers = {l}): send = this rank's (n, K_b) input of layer l
//    (copied into a staging buffer at prepare, so later forward passes may overwrite the
//    layer's own buffers), recv = the gathered (N, K_b) buffer of parity iteration % 2;
//  * `errors` allgather (layers = {l}): send = this rank's (n, K_c) output errors (staged),
//    recv = the gathered (N, K_c) buffer of parity iteration % 2;
//  * its backward_weight gemm op (wherever the program puts it, normally in the next
//    iteration's forward, batch = N) computes the full-batch gradient from the oldest
//    completed, not yet consumed gathered pair; its update op then applies it.
// Gradient collectives (payload gradients, any kind whose buffer is the whole vector:
// allreduce, reduce, bcast) carry [dW, db] of the listed layers; when those layers are
// adjacent in the internal gradient order (non-replicated parameterised layers in layer
// order, then the replicated ones, so Lee's chunks and DDP buckets are contiguous) the buffer
// is the gradient array itself (send == recv, in place), otherwise prepare packs them into a
// staging buffer (in that order on every rank) and complete unpacks.
// `weights` payload collectives work the same way on the weights.
// `batch_statistics` / `error_statistics` allreduces (synchronised batchnorm, layers = {l}) are
// in place over the layer's 2·C sums, which prepare computes (of its input shifted by the
// running mean; of its errors and errors × normalised input); its forward and backward-data
// ops then use the totals over every rank's images.
// A parameter server's worker (model/schedule.hpp Serve) keeps the global weights it last
// received: its `increments` push carries its weights minus them, then its accuracy of the
// last forward (one float more); receiving a `weights` reply replaces both. A server stages its
// replies (it merges again while one is in flight) and merges pushes with merge_increments.
//
// Loss and gradients are normalised by the GLOBAL batch N, so the sum over ranks of the
// per-rank gradients is exactly the gradient of the mean loss over the N images.
// Rank r of a data-parallel schedule trains on images [first_r, first_r + n_r) of each global
// batch, first_r = n_0 + ... + n_{r-1} (n_r = batch of rank r's forward ops; all equal to N/P
// unless the builder split N unevenly, then every allgather block is padded to the largest);
// global batch of (global) iteration m = dataset images (m·N + j) mod size, j in [0, N), where
// the global iteration = restored RuntimeState::iteration + iterations of the schedules
// finished since + the schedule-local iteration.
// Dropout masks depend only on (seed, global iteration, layer, global image index, unit),
// so they do not change with P.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/schedule.hpp"
#include "real/inner_dag.hpp"

namespace cnnpar::real {

class Dataset;

/** SGD with momentum (Caffe/PyTorch form): v = momentum·v + (g + weight_decay·w); w -= lr·v.
 *  Weight decay applies to weights only, not to biases. */
struct SgdConfig {
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
};

/** Buffers of one collective on this rank; counts in floats (FP32 elements).
 *  allreduce/reduce/bcast: send == recv (in place), send_count == recv_count.
 *  allgather: send (this rank's block) never aliases recv; recv holds the blocks of all ranks
 *  in rank order, recv_count = group size × send_count; blocks of an uneven split (a batch
 *  or unit slice that differs between ranks) are padded to the largest one, whose size
 *  Collective::bytes states, and compacted at complete().
 *  reduce_scatter: send = P padded blocks, recv = this rank's block (partition transitions).
 *  The partition transitions (workload/strategies/per_layer.cpp) pack each rank's region of a
 *  layer's tensor into its block and unpack the blocks they need at complete(). */
struct CollectiveBuffers {
  float* send = nullptr;
  float* recv = nullptr;
  std::int64_t send_count = 0;
  std::int64_t recv_count = 0;
};

/** Everything that is needed to continue training bit-identically (checkpoints).
 *  weights and momentum are in network layer order: for each parameterised layer, W then b
 *  (conv W is (O, C·KH·KW), fc W is (K_c, K_b), row-major). */
struct RuntimeState {
  std::int64_t iteration = 0;     ///< global iterations completed
  std::vector<float> weights;
  std::vector<float> momentum;
  /// For each batchnorm layer in network order: running mean (C), then running variance (C).
  /// Evaluation uses them; training never reads them, so they leave the weights unchanged.
  std::vector<float> batchnorm_statistics;
};

class Runtime {
 public:
  /** Rank `rank` of `schedule` (must be in [0, schedule.ranks())). Weights come from `seed`
   *  identically on every rank (He-normal weights, the classifier N(0, 1/(16·fan_in)); zero
   *  biases); momentum starts at 0.
   *  The program of `rank` is scanned once to learn which ops exist per layer and phase,
   *  the sub-batch n (batch of the forward ops) and the replicated fc layers. */
  Runtime(const Network& network, const Schedule& schedule, int rank, std::uint64_t seed,
          SgdConfig sgd = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  int rank() const;
  int ranks() const;
  std::int64_t local_batch() const;   ///< n: images this rank processes per iteration
  std::int64_t global_batch() const;  ///< N
  std::int64_t first_image() const;   ///< index in the global batch of this rank's first image
  /** n_r of every rank: the images of the input each rank reads (its first layer's partition). */
  const std::vector<std::int64_t>& rank_batches() const;

  /** GEMMs are split into column tiles of at most `columns` output columns with
   *  between_tiles() called between tiles; 0 (default) = one call per GEMM. */
  void set_gemm_tile_columns(std::int64_t columns);
  std::int64_t gemm_tile_columns() const;

  /** Keep every conv layer's forward im2col columns for its weight gradient (Lee: "if memory
   *  space is sufficiently large"; default: when the Schedule has no `.im2col_w` ops and they
   *  total at most 2 GiB), or share one buffer, refilled by the `.im2col_w` ops (or, without
   *  them, inside the backward_weight gemm op). Call between iterations. */
  void set_keep_columns(bool keep);
  bool keep_columns() const;

  /** Layers whose errors are needed at different times (within an iteration of this rank's
   *  program) share one arena (default), or every layer keeps its own error buffer: the same
   *  bits either way, less memory shared. Call between iterations. */
  void set_share_errors(bool share);
  /** Floats of this rank's error buffers: the arena and the layers' own. */
  std::int64_t error_floats() const;

  /** How conv forward and weight-gradient GEMM ops run (real/inner_dag.hpp); default gemm. */
  void set_inner_mode(InnerMode mode);
  InnerMode inner_mode() const;

  /** Loads this rank's slice of the global batch of schedule-local `iteration` into the
   *  input buffer (and labels). @throws InputError when the dataset's shape or class
   *  count does not match the network. */
  void load_batch(int iteration, const Dataset& data);

  /** Executes one compute op of this rank's program (see the table above). `iteration`
   *  is the schedule-local iteration (marks seen so far; the flush after the last mark
   *  passes schedule.iterations). */
  void run_compute(const Op& op, int iteration, const std::function<void()>& between_tiles = {});

  /** Buffers for posting collective `c` (packs a staging buffer when needed). The pointers
   *  stay valid and untouched by the Runtime until complete(c). */
  CollectiveBuffers prepare(const Collective& c);
  /** Called once `c` has completed on this rank: unpacks staged results, records gathered
   *  data as ready. */
  void complete(const Collective& c);

  /** Ends a run of the schedule: advances the global iteration counter by
   *  schedule.iterations. Asserts that no delayed (replicated) update is pending. */
  void finish_schedule();

  /** Mean cross-entropy of the last forward over this rank's images (nats). */
  double last_loss() const;
  /** Sum of the cross-entropies of this rank's images in the last forward; the global mean
   *  loss is the sum over ranks divided by N. */
  double last_loss_sum() const;
  /** The images last_loss_sum() is over, counted like it (a parameter server's workers' rounds
   *  differ: their mean loss is the sum over ranks of the sums over these). */
  double last_loss_images() const;
  /** Images of this rank classified correctly (arg-max) in the last forward. */
  std::int64_t last_correct() const;
  /** last_correct() over the images of the last forward (0 when it had none). */
  double last_accuracy() const;

  /** A parameter server's merge: global weights (the spans of `push`'s layers) += Σ_i
   *  factors[i] · increments[i], each increment packed as `push` carries it (its trailing
   *  accuracy ignored); the sum over i is taken first, in order, then added. */
  void merge_increments(const Collective& push, const std::vector<std::span<const float>>& increments,
                        const std::vector<double>& factors);

  /** All parameters in network layer order (see RuntimeState). */
  std::vector<float> flat_weights() const;
  /** All parameter gradients of the last backward, same order as flat_weights(). */
  std::vector<float> flat_gradients() const;
  std::int64_t parameter_count() const;

  RuntimeState state() const;
  /** True when some layer's weights are split over the ranks (model parallelism): each rank
   *  then holds only its rows of those layers, and one model is assembled from all ranks; and
   *  under a parameter server, whose global weights are the model. */
  bool model_parallel() const;
  /** state() with every entry this rank does not own set to 0: the rows of its model-parallel
   *  slices, and (on rank 0 only) every other layer. The element-wise sum over the ranks of
   *  these vectors is the whole model, exactly (adding zeros rounds nothing). */
  RuntimeState owned_state() const;
  /** @throws InputError (file "<checkpoint>") when the sizes do not match this network. */
  void restore(const RuntimeState& state);
  /** Global iterations completed (restored value + finished schedules). */
  std::int64_t iteration() const;
  /** True when some layer's weight gradient runs in the next iteration (Lee's replicated fc
   *  layers): between two iterations such a run holds gathered data that is in no
   *  RuntimeState, so only the end of a schedule is a checkpoint. */
  bool delays_updates() const;

  /** Output activations of layer `layer` (-1 = the input) and their layout, for tests. A
   *  layer followed by an in-place relu or dropout shows that layer's output. */
  std::vector<float> activations(int layer) const;
  bool channel_major(int layer) const;  ///< true: (C, n, H, W); false: (n, C·H·W)
  /** A batchnorm layer's running mean then running variance (C each; empty for other kinds):
   *  the statistics an evaluation would use, moved by every training forward. */
  std::vector<float> running_statistics(int layer) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cnnpar::real
