#pragma once
// The Schedule interpreter of the MPI executor: one rank walks its Program, running compute
// ops on a ComputeBackend (real kernels or calibrated sleeps) and mapping post/wait to
// non-blocking MPI collectives run by a per-rank communication engine (model/schedule.hpp):
// collectives are started (the MPI_I* call) in posting order, at most
// `collective_concurrency` at a time. Progress comes from polling (MPI_Test between ops and
// between GEMM tiles / sleep slices) or from a dedicated communication thread (Lee et al.).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpi.h>

#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"
#include "real/clock_sync.hpp"
#include "real/mpi_wrap.hpp"

namespace cnnpar::real {

enum class ProgressMode { poll, thread };
const char* to_string(ProgressMode mode);
ProgressMode progress_mode_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** Buffers of one collective on this rank; counts in FP32 elements. Per kind (P = group size):
 *  allreduce, reduce, bcast: the whole vector (send may equal recv: in place);
 *  allgather, gather: send = own block, recv = P blocks in group order (root only for gather);
 *  reduce_scatter: send = whole vector (P blocks), recv = own block;
 *  scatter: send = P blocks (root only), recv = own block;
 *  alltoall: send and recv = P blocks; send: send on the source, recv on the destination. */
struct CommBuffers {
  float* send = nullptr;
  float* recv = nullptr;
  std::int64_t send_count = 0;
  std::int64_t recv_count = 0;
};

/** How collectives run: `mpi` calls the MPI library's MPI_I* collective (its own algorithm);
 *  `p2p` runs the steps of system/collective.hpp with MPI_Isend/MPI_Irecv, i.e. exactly the
 *  algorithm the engines price (resolve_algorithm on the run's platform). */
enum class CollectiveMode { mpi, p2p };
const char* to_string(CollectiveMode mode);
CollectiveMode collective_mode_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** The numerical side the interpreter drives. */
class ComputeBackend {
 public:
  virtual ~ComputeBackend() = default;
  /** "real" or "sleep" (trace metadata). */
  virtual std::string mode() const = 0;
  /** Called before the first compute or post op of schedule-local `iteration` (< iterations). */
  virtual void begin_iteration(int iteration) = 0;
  /** Runs compute op `op`; calls `poll` between slices of its work. `poll` is empty when no
   *  collective is pending: then there is nothing to progress and the op runs whole. */
  virtual void run_compute(const Op& op, int iteration, const std::function<void()>& poll) = 0;
  /** Buffers of `collective`, filled with this rank's data, at post time; they stay valid
   *  and untouched until complete(). */
  virtual CommBuffers prepare(const Collective& collective) = 0;
  /** Called by the compute stream when a wait found `collective` complete. */
  virtual void complete(const Collective& collective) = 0;
  /** A parameter server's merge (priced by `merge_op`): global weights += Σ factors[i] ·
   *  increments[i], each packed as `push` carries it. A back-end that never serves keeps the
   *  default, which says so. */
  virtual void merge(const Op& merge_op, const Collective& push, const std::vector<std::span<const float>>& increments,
                     const std::vector<double>& factors);
  /** Called after the last op of the program. */
  virtual void finish() {}
};

/** Compute ops sleep for their modelled time on `platform` (cnnpar::op_time_s: calibrated
 *  op seconds, then calibrated GEMM rate, then roofline), in slices with `poll` between
 *  them; collectives move buffers of the schedule's sizes, zero-filled once and reused by
 *  later collectives of the same size: allocating, zeroing and unmapping 39 MB per iteration
 *  (vgg-a-32) made 4 ranks' posts take 38 ms on 2 cores, work a real run does not do (its
 *  gradient collectives move the gradients in place). A sleep ends late
 *  (timer slack, wake-up: 15-90 us measured here), which over the many small ops of a network
 *  would add up; the lateness so far is taken off the next op's sleep, so the ops' total stays
 *  the modelled total within one op's lateness. */
class SleepBackend : public ComputeBackend {
 public:
  /** `iteration_overhead_s`: what the rank sleeps at the start of each iteration, the
   *  engines' system/op_time.hpp iteration_overhead_s (a real run loads its batch then). */
  SleepBackend(const Platform& platform, int rank, double slice_s, double iteration_overhead_s = 0);
  std::string mode() const override { return "sleep"; }
  void begin_iteration(int iteration) override;
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override;
  CommBuffers prepare(const Collective& collective) override;
  void complete(const Collective& collective) override;
  void merge(const Op& merge_op, const Collective&, const std::vector<std::span<const float>>&,
             const std::vector<double>&) override;

 private:
  const Platform& platform_;
  int rank_;
  double slice_s_;
  double iteration_overhead_s_ = 0;
  double late_s_ = 0;  ///< Σ (slept − modelled) over the ops so far, >= 0
  /** sleeps `modelled_s` less the lateness so far, polling every slice */
  void sleep_modelled(double modelled_s, const std::function<void()>& poll);
  /** a completed collective's buffer of `count` floats, or a new zero-filled one */
  std::vector<float> take_buffer(std::int64_t count);
  std::map<int, std::vector<float>> send_, recv_;           // per collective id in flight
  std::multimap<std::int64_t, std::vector<float>> free_buffers_;  // by float count
};

/** A genuinely slower rank (--slowdown RANK:FACTOR): each compute op runs on `inner`, then the
 *  rank waits (factor − 1) times the op's measured duration, polling every `slice_s` as a
 *  running op would, so the op takes `factor` times as long and its collectives still progress.
 *  Waiting rather than repeating the work keeps the numbers bit-identical and leaves the other
 *  ranks the cores. */
class SlowedBackend final : public ComputeBackend {
 public:
  SlowedBackend(ComputeBackend& inner, double factor, double slice_s);
  std::string mode() const override { return inner_.mode(); }
  void begin_iteration(int iteration) override { inner_.begin_iteration(iteration); }
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override;
  CommBuffers prepare(const Collective& collective) override { return inner_.prepare(collective); }
  void complete(const Collective& collective) override { inner_.complete(collective); }
  void merge(const Op& merge_op, const Collective& push, const std::vector<std::span<const float>>& increments,
             const std::vector<double>& factors) override {
    inner_.merge(merge_op, push, increments, factors);
  }
  void finish() override { inner_.finish(); }

 private:
  ComputeBackend& inner_;
  double factor_;
  double slice_s_;
};

struct InterpreterOptions {
  ProgressMode progress = ProgressMode::poll;
  double poll_interval_s = 200e-6;  ///< least time between polls inside compute ops
  int collective_concurrency = 1;   ///< collectives the engine runs at once
  CollectiveMode collectives = CollectiveMode::mpi;
  const Platform* platform = nullptr;  ///< p2p: the algorithms' rule (resolve_algorithm); none = automatic
  double timeout_s = 60;            ///< a wait with no completion for this long aborts the job
  /** Testing only: this rank stops (sleeps without polling) at the middle of its program. */
  bool debug_stall = false;
  /** Testing only: called on the progressing side (the communication thread in thread mode)
   *  right after it started collective `collective_id`, before it returns to its loop. */
  std::function<void(int collective_id)> debug_on_start;
};

/** A wait that saw no completion for timeout_s: "rank R: stalled waiting for collective ID
 *  (label) for T s; its group: ranks A,B,...". */
class StallError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** One MPI communicator per distinct group of the schedule that contains this rank (the
 *  whole world is a duplicate of MPI_COMM_WORLD); created up front in one global order,
 *  which every rank follows, so creation cannot deadlock. */
class Communicators {
 public:
  /** MPI_Comm_create_group has no non-blocking form, so creation is not time-limited; the
   *  common order rules out deadlock. */
  Communicators(const Schedule& schedule, int world_rank);
  /** Communicator of `group` (must contain this rank). */
  MPI_Comm of(const std::vector<int>& group) const;
  /** Communicator for point-to-point `send` collectives (a duplicate of the world). */
  MPI_Comm point_to_point() const { return world_.get(); }
  std::size_t size() const { return groups_.size() + 1; }

 private:
  mpi::Comm world_;
  int world_size_ = 1;
  std::map<std::vector<int>, mpi::Comm> groups_;
};

/** Starts the MPI non-blocking operation of `collective` on `buffers`; returns its request.
 *  @throws MpiError, InternalError for buffers that do not fit the kind. */
mpi::Request start_collective(const Collective& collective, const CommBuffers& buffers,
                              const Communicators& comms, int world_rank, int tag_upper_bound);

/** MPI_TAG_UB of MPI_COMM_WORLD (32767, the least the standard allows, when unset). */
int tag_upper_bound();

/** One collective in flight on this rank, run as the interpreter runs it: the MPI library's
 *  MPI_I* collective (CollectiveMode::mpi, and every send) or the engines' steps as
 *  MPI_Isend/MPI_Irecv (p2p; the algorithm resolve_algorithm picks on `platform`, automatic
 *  without one). The constructor starts it; `collective` and `buffers` must outlive it. */
class RunningCollective {
 public:
  RunningCollective(const Collective& collective, const CommBuffers& buffers, const Communicators& comms,
                    int world_rank, CollectiveMode mode, const Platform* platform, int tag_upper_bound);
  ~RunningCollective();
  RunningCollective(const RunningCollective&) = delete;
  RunningCollective& operator=(const RunningCollective&) = delete;
  /** Advances as far as completed messages allow; true once complete on this rank. */
  bool test();

 private:
  struct Steps;
  const Collective& collective_;
  mpi::Request request_;
  std::unique_ptr<Steps> steps_;
  bool done_ = false;
};

/** Runs `rank`'s program of `schedule`; returns its records (times from `clock`). */
class Interpreter {
 public:
  Interpreter(const Schedule& schedule, int rank, ComputeBackend& backend, const Communicators& comms,
              const SyncedClock& clock, InterpreterOptions options);
  ~Interpreter();
  RankTrace run();

 private:
  struct Engine;
  const Schedule& schedule_;
  int rank_;
  ComputeBackend& backend_;
  const Communicators& comms_;
  const SyncedClock& clock_;
  InterpreterOptions options_;
};

}  // namespace cnnpar::real
