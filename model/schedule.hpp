#pragma once
// The Schedule: one program per rank plus the table of collectives (docs/design.md "Schedule").
//
// Semantics every back-end implements:
//  * a rank has one compute stream that runs its ops strictly in program order;
//  * `post` starts a collective without blocking, `wait` blocks the compute stream until
//    that collective has completed on this rank (blocking collective = post + wait);
//  * each rank has one communication engine that runs its posted collectives in posting
//    order, `collective_concurrency` at a time (default 1, Lee et al.'s comm thread);
//  * a collective starts once every member of its group has reached it on its engine;
//  * `mark {iteration}` separates iterations; iterations < warmup_iterations are warm-up;
//  * `serve {serve}` makes the rank a parameter server for the pushes of Schedule::serves[serve]
//    (see Serve): it receives them from any worker, in the order they arrive, merges and replies.
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/cost.hpp"
#include "model/network.hpp"
#include "model/partition.hpp"
#include "model/platform.hpp"

namespace cnnpar {

enum class Phase { forward, backward_data, backward_weight, update };
const char* to_string(Phase phase);
Phase phase_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** Size conventions (`bytes` of a Collective), per kind:
 *  allreduce, reduce_scatter, reduce, bcast: the whole vector, identical on every rank;
 *  allgather, gather: one rank's contribution (the result is group.size() × bytes);
 *  scatter: one rank's share (the root sends group.size() × bytes);
 *  alltoall: what one rank sends in total (bytes / group.size() to each peer);
 *  send: the message; group = {source, destination}, root = source. Both post the same id. */
enum class CollectiveKind { allreduce, allgather, reduce_scatter, bcast, reduce, gather, scatter, alltoall, send };
const char* to_string(CollectiveKind kind);
CollectiveKind collective_kind_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** What a collective carries, so the real executor knows which buffers to use:
 *  gradients/weights: the parameters of `layers`;
 *  activations: the input of layers[0] (the output of the layer before it);
 *  errors: the errors of layers[0]'s output;
 *  increments: the parameters of `layers` minus the global weights the rank last received (a
 *  parameter server's push), with the accuracy and version the merge needs;
 *  batch_statistics: per channel of batchnorm layer layers[0], the sums of its input and of its
 *  squares over the rank's images (2·C floats; synchronised batch normalisation's forward);
 *  error_statistics: per channel, the sums of its output errors and of errors × normalised
 *  input (2·C floats; its backward). */
enum class Payload { none, gradients, activations, errors, weights, increments, batch_statistics, error_statistics };
const char* to_string(Payload payload);
Payload payload_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** Along which axis an activations/errors collective's blocks are cut: each member's block
 *  is its partition's range of that axis (batch images or units) of the tensor, padded to
 *  the largest member's block (Collective::bytes states that largest block, or P of them for
 *  reduce_scatter); `none` for gradients and weights. */
enum class Split { none, batch, units };
const char* to_string(Split split);
Split split_from_string(const std::string& text);  ///< @throws std::invalid_argument

struct Collective {
  int id = -1;                    ///< index into Schedule::collectives
  CollectiveKind kind = CollectiveKind::allreduce;
  double bytes = 0;               ///< see the size conventions above
  std::vector<int> group;         ///< participating ranks, sorted, no duplicates
  int root = -1;                  ///< bcast/reduce/gather/scatter/send: root rank; else -1
  Algorithm algorithm = Algorithm::automatic;
  std::string label;              ///< e.g. "allreduce chunk1 [fc8..conv5]"
  Payload payload = Payload::none;
  std::vector<int> layers;        ///< network layer indices whose data it carries
  int iteration = 0;              ///< iteration that posts it
  Split split = Split::none;      ///< activations/errors: the axis the blocks are cut along
  /** activations/errors: only these images of the tensor move (a sub-batch, Veeriah & Modi's
   *  schemes b and c); count 0 = every image the members' regions hold. */
  Range images;
  /** weights/gradients: only the rows (output units) [begin, begin + count) of layers[0] and
   *  their biases move (Marques et al.'s kernel shares); count 0 = every parameter. */
  Range units;
};

enum class OpKind { compute, post, wait, mark, serve };
const char* to_string(OpKind kind);

struct Op {
  OpKind kind = OpKind::compute;
  // compute
  std::string label;              ///< e.g. "conv1.fwd.gemm"
  int layer = -1;                 ///< index into Network::layers, -1 if none
  Phase phase = Phase::forward;
  KernelClass kernel = KernelClass::other;
  GemmShape gemm;                 ///< for kernel == gemm: the GEMM it runs
  double flops = 0;               ///< floating-point operations
  double bytes = 0;               ///< bytes moved through memory (roofline)
  std::int64_t batch = 0;         ///< images this op processes
  /** Output units this op computes, the rank's partition range of its layer (model
   *  parallelism); 0 = every unit of the layer. */
  std::int64_t units = 0;
  /** Images of the global batch this op computes, a sub-batch of the rank's partition
   *  (Veeriah & Modi's schemes b and c); count 0 = the whole partition. An update op with
   *  units = 0 on a model-parallel layer updates every row (a master that owns the weights). */
  Range images;
  /** An op of a conv layer: emit sets it, and a schedule read from JSON, where it is not
   *  written, gives it to the ops of every layer that has an im2col op. nodes.inner prices the
   *  conv layers' forward and weight-gradient ops (system/op_time.hpp). */
  bool conv_layer = false;
  // post / wait
  int collective = -1;            ///< index into Schedule::collectives
  // mark
  int iteration = -1;             ///< iteration that this mark ends
  // serve
  int serve = -1;                 ///< index into Schedule::serves

  /** "gemm MxNxK" for GEMMs, else the kernel class name. */
  std::string kernel_name() const;

  static Op compute_op(std::string label, int layer, Phase phase, KernelClass kernel, double flops,
                       double bytes, std::int64_t batch, GemmShape gemm = {});
  static Op post_op(int collective);
  static Op wait_op(int collective);
  static Op mark_op(int iteration);
  static Op serve_op(int serve);
};

/** In which order a parameter server applies the pushes of one serve op. */
enum class ServeOrder {
  arrival,   ///< each push merged as soon as it has arrived, its reply posted at once (BPT-CNN's AGWU)
  together,  ///< every push received first, then one merge of them all, then every reply (SGWU)
};
const char* to_string(ServeOrder order);
ServeOrder serve_order_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** One push a server handles: the worker's `send` of its weight increment to the server, and
 *  the server's `send` of the new global weights back. The worker posts (and waits for) both;
 *  the server's serve op stands for its side of both. */
struct ServeEntry {
  int push = -1;    ///< collective id: a send with group {server, worker}, root the worker
  int reply = -1;   ///< collective id: a send with group {server, worker}, root the server
  int worker = -1;  ///< the worker's rank
  int round = 0;    ///< the worker's round (the iteration that posts the push)
};

/** A parameter server's work of one serve op. Its pushes arrive from any worker: the server's
 *  communication takes them in the order the workers post them, not in a posting order of its
 *  own, so which merge comes first is decided when the schedule runs. Every back-end records
 *  the merges it applied, in order, with the global versions they read and made (Trace). */
struct Serve {
  ServeOrder order = ServeOrder::arrival;
  std::vector<ServeEntry> entries;
  /** Arrival order: the attenuation of every merge (BPT-CNN's gamma, in (0, 1]); 0 = Eq. 9's,
   *  from the versions the pushes were trained from. Together: unused (Eq. 7 weighs by accuracy). */
  double gamma = 0;
  /** The compute op of one merge: of one push (arrival), or of every entry at once (together).
   *  Its flops and bytes price it; kernel `update`, layer -1. */
  Op merge;
};

/** A rank's ops, shared copy-on-write between ranks whose programs are identical (every
 *  data-parallel rank), so a 128-rank schedule stores one op list, not 128. Reading never
 *  copies; the mutators copy first when the list is shared. */
class OpList {
 public:
  using value_type = Op;
  using const_iterator = std::vector<Op>::const_iterator;

  OpList() : ops_(std::make_shared<std::vector<Op>>()) {}
  OpList(std::initializer_list<Op> ops) : ops_(std::make_shared<std::vector<Op>>(ops)) {}
  explicit OpList(std::vector<Op> ops) : ops_(std::make_shared<std::vector<Op>>(std::move(ops))) {}

  std::size_t size() const { return ops_->size(); }
  bool empty() const { return ops_->empty(); }
  const Op& operator[](std::size_t index) const { return (*ops_)[index]; }
  const Op& front() const { return ops_->front(); }
  const Op& back() const { return ops_->back(); }
  const_iterator begin() const { return ops_->cbegin(); }
  const_iterator end() const { return ops_->cend(); }
  const std::vector<Op>& vector() const { return *ops_; }
  /** True when both lists share one buffer (identical programs, detectable in O(1)). */
  bool same_storage(const OpList& other) const { return ops_ == other.ops_; }

  void push_back(Op op) { mutable_vector().push_back(std::move(op)); }
  void append(const std::vector<Op>& ops) { mutable_vector().insert(ops_->end(), ops.begin(), ops.end()); }
  void reserve(std::size_t count) { mutable_vector().reserve(count); }
  void clear() { mutable_vector().clear(); }
  Op& mutable_at(std::size_t index) { return mutable_vector()[index]; }
  /** The buffer, unshared first if another program shares it. */
  std::vector<Op>& mutable_vector() {
    if (ops_.use_count() > 1) ops_ = std::make_shared<std::vector<Op>>(*ops_);
    return *ops_;
  }

 private:
  std::shared_ptr<std::vector<Op>> ops_;
};

struct Program {
  int rank = 0;
  OpList ops;
  /** One per network layer: what this rank holds of it (model/partition.hpp). Empty = every
   *  layer data-parallel over the rank's batch slice (schedules written before partitions). */
  std::vector<LayerPartition> partitions;
};

struct Schedule {
  std::string strategy;             ///< builder name, e.g. "lee"
  nlohmann::json options;           ///< builder options (k, f, bucket bytes, ...)
  std::string network;              ///< network name
  std::int64_t global_batch = 0;    ///< N, images per iteration over all ranks
  int iterations = 0;               ///< total iterations, warm-up included
  int warmup_iterations = 0;        ///< leading iterations excluded from metrics
  std::vector<Program> programs;    ///< one per rank, programs[r].rank == r
  std::vector<Collective> collectives;
  std::vector<Serve> serves;        ///< what the serve ops of parameter servers handle

  int ranks() const { return int(programs.size()); }
  /** Adds a collective and returns its id. */
  int add_collective(Collective collective);
  /** Adds a serve and returns its index (for Op::serve_op). */
  int add_serve(Serve serve);
  /** The serve entry whose push or reply is collective `id`, or null. Linear in the entries. */
  const ServeEntry* served(int id) const;
};

nlohmann::json to_json(const Schedule& schedule);
/** @throws InputError naming file, JSON path and value. */
Schedule schedule_from_json(const nlohmann::json& document, const std::string& file);

/** One problem found by the verifier. */
struct VerifyIssue {
  int rank = -1;     ///< rank whose program has the problem (-1 if none)
  int op = -1;       ///< op index in that program (-1 if none)
  std::string message;
};

/** Checks, without running anything: waits without posts, double posts, posts never waited,
 *  empty or malformed groups, ranks that post a collective they are not in, members that
 *  never post, and members that reach collectives in different orders on their
 *  communication engines (the classic MPI deadlock), plus cycles between ranks' waits; for a
 *  serve op, that every push and reply is a send between its server and one worker, handled
 *  by one serve entry, and posted and waited for by the worker (the server's side is the op).
 *  Returns all problems found; empty means the schedule is valid. */
std::vector<VerifyIssue> verify(const Schedule& schedule);

/** Partition checks against the network: every layer's partitions tile it (disjoint batch
 *  slices, disjoint non-empty unit slices, or all of it on every rank), compute ops compute
 *  the units their rank holds, and where a layer needs input (or hands back errors) that the
 *  neighbouring partition does not hold, an activations (errors) collective of that layer is
 *  waited for before its forward (backward) ops in every iteration. */
std::vector<VerifyIssue> verify_partitions(const Schedule& schedule, const Network& network);

/** Runs verify() (and verify_partitions() when `network` is given) and throws InputError
 *  (file, path "/programs/R/ops/I", message naming the layer) on the first issue. */
void verify_or_throw(const Schedule& schedule, const std::string& file = "<schedule>", const Network* network = nullptr);

}  // namespace cnnpar
