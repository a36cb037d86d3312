#pragma once
// The one collective layer: the size convention of each
// kind, the FP32 buffers each member posts, and the decomposition of a collective into
// point-to-point steps for each algorithm. The analytic engine prices the steps, the SimGrid
// engine sends them as messages, the local executor and the MPI executor's plain send/recv
// mode carry them out on real buffers, so a measured collective can run exactly the
// algorithm the engines predicted.
//
// Size conventions (Collective::bytes = n), per kind, P = group size:
//   allreduce, reduce, bcast   the whole vector, identical on every member;
//   reduce_scatter             the whole vector (P blocks), each member ends with its block;
//   allgather, gather          one member's contribution (the result is P blocks);
//   scatter                    one member's share (the root sends P blocks);
//   alltoall                   what one member sends in total (one block to each member);
//   send                       the message; group = {source, destination}, root = source.
#include <cstdint>
#include <vector>

#include "model/partition.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

/** FP32 elements a member posts: its send and receive buffers (model/schedule.hpp sizes,
 *  rounded up to whole floats and to P equal blocks where the kind is blocked). */
struct CollectiveCounts {
  std::int64_t send = 0;
  std::int64_t recv = 0;
};
CollectiveCounts collective_counts(const Collective& collective, int world_rank);

/** Which buffer a step's block lives in, for the executors:
 *  `work`: the member's work vector (see CollectivePlan), `send`/`recv`: the posted buffers. */
enum class StepBuffer { work, send, recv };

/** Blocks [first, first + count) of a buffer cut into CollectivePlan::blocks equal blocks
 *  (even_slice over its elements when they do not divide). */
struct BlockSpan {
  int first = 0;
  int count = 0;
};

/** One round of a member: it sends one span to `send_to` and receives one span from
 *  `receive_from` at the same time (either may be absent: -1). Peers are group indices. */
struct CollectiveStep {
  int send_to = -1;
  int receive_from = -1;
  BlockSpan send_span, receive_span;
  StepBuffer send_buffer = StepBuffer::work, receive_buffer = StepBuffer::work;
  bool reduce = false;      ///< the received elements are added into the span, not copied
  double send_bytes = 0;    ///< bytes on the wire, from Collective::bytes (fractional blocks allowed)
  double receive_bytes = 0;
};

/** How a member runs a collective. The work vector holds `blocks` blocks:
 *  allreduce, reduce, bcast: the vector (ring: P blocks, else 1);
 *  reduce_scatter: a copy of the send buffer (P blocks; the member's own block ends in recv);
 *  allgather: the recv buffer (own block copied in from send first);
 *  gather, scatter: P blocks in root-relative order (member r at (r - root) mod P);
 *  alltoall: none (steps read `send` and write `recv`; the own block is copied);
 *  send: none (the one step reads `send`, writes `recv`). */
struct CollectivePlan {
  Algorithm algorithm = Algorithm::ring;
  int blocks = 1;
  std::vector<CollectiveStep> steps;
  double bytes_sent = 0;      ///< this member's total over the steps
  double bytes_received = 0;
};

/** The steps of group member `member` (index into collective.group) for `algorithm`, which
 *  must apply to the kind (resolve_algorithm). Rings send to member + 1 and receive from
 *  member - 1; recursive doubling pairs member ^ 2^k (allreduce: the whole vector each
 *  round; allgather: the 2^k blocks gathered so far); recursive halving pairs member ^ 2^k
 *  and keeps half the blocks each round (reduce_scatter from k = log2 P - 1 down, so member i
 *  ends with block i; reduce_scatter_allgather from k = 0 up, then the allgather retraces the
 *  halving, as MPICH orders them); pairwise reduce_scatter sends block i + k to member i + k
 *  in round k; binomial trees are MPICH's shape
 *  rooted at the root (relative rank r receives from r - lowbit(r), sends to r + 2^j for the
 *  2^j below lowbit(r), subtrees are contiguous blocks); direct alltoall exchanges with
 *  member ± k in round k. */
CollectivePlan plan_collective(const Collective& collective, Algorithm algorithm, int member);

/** The member whose steps take longest in the α-β model: the root of rooted kinds, member 0
 *  otherwise (the other algorithms are symmetric). */
int critical_member(const Collective& collective);

/** The pricing of `collective`'s steps: network.kind_step_pricing(kind, collective.bytes).
 *  Both engines price every step of the collective as a message size_factor times its size,
 *  started step_overhead_s later. */
StepPricing step_pricing(const Collective& collective, const NetworkSpec& network);

/** Bytes of a round's larger message on a full-duplex link: max(sent, received), a side
 *  without a peer counting 0. What every pricing of a round scales. */
double step_message_bytes(const CollectiveStep& step);

/** Seconds of one round: the collective's step overhead, then its larger message on a
 *  full-duplex link scaled by the collective's size factor (step_pricing),
 *  network.message_time_s(size_factor · max(send, receive bytes)) (α·latency factor +
 *  n/(β·bandwidth factor)), plus received bytes / network.reduction_rate when the round
 *  reduces (the arithmetic is not scaled). */
double step_time_s(const CollectiveStep& step, const NetworkSpec& network, StepPricing pricing = {});
/** step_time_s when `passed_bytes` of the round's scaled message pass as a burst (a link's
 *  token bucket, system/link_bucket.hpp): network.burst_time_s(passed_bytes) and a message of
 *  the rest, network.message_time_s(size_factor · max(send, receive bytes) - passed_bytes), as
 *  the SimGrid engine sends it. */
double step_time_s(const CollectiveStep& step, const NetworkSpec& network, StepPricing pricing, double passed_bytes);
/** Σ of step_time_s over the steps of a member. With no message factors, the default pricing
 *  and free reductions this is Σ α + max(send, receive bytes)/β, for the critical member the
 *  closed form of each algorithm (sim/analytic/collective_cost.hpp). */
double steps_time_s(const CollectivePlan& plan, const NetworkSpec& network, StepPricing pricing = {});
/** steps_time_s when the first `burst_bytes` scaled bytes of the rounds pass as a burst: each
 *  round in turn passes what is left of them (step_time_s with passed bytes). */
double steps_time_s(const CollectivePlan& plan, const NetworkSpec& network, StepPricing pricing, double burst_bytes);
/** The pure α-β case of steps_time_s. */
double steps_time_s(const CollectivePlan& plan, double alpha_s, double beta_Bps);

/** Element range of `span` in a buffer of `elements` floats cut into `blocks` blocks. */
Range span_elements(const BlockSpan& span, std::int64_t elements, int blocks);

}  // namespace cnnpar
