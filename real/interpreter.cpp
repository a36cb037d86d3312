#include "real/interpreter.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "real/collective_steps.hpp"
#include "real/serve_loop.hpp"
#include "system/collective.hpp"
#include "system/collective_algorithm.hpp"
#include "system/op_time.hpp"
#include "system/serve_ledger.hpp"

namespace cnnpar::real {

const char* to_string(ProgressMode mode) { return mode == ProgressMode::poll ? "poll" : "thread"; }

ProgressMode progress_mode_from_string(const std::string& text) {
  if (text == "poll") return ProgressMode::poll;
  if (text == "thread") return ProgressMode::thread;
  throw std::invalid_argument("unknown progress mode '" + text + "' (expected poll or thread)");
}

namespace {

int index_in_group(const std::vector<int>& group, int rank) {
  const auto it = std::find(group.begin(), group.end(), rank);
  CNNPAR_ASSERT(it != group.end(), fmt::format("rank {} is not in the group of the collective", rank));
  return int(it - group.begin());
}


int to_int(std::int64_t count, const Collective& c) {
  CNNPAR_ASSERT(count >= 0 && count <= INT_MAX,
                fmt::format("collective {} ({}): element count {} does not fit an MPI int", c.id, c.label, count));
  return int(count);
}

void sleep_s(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace

const char* to_string(CollectiveMode mode) { return mode == CollectiveMode::mpi ? "mpi" : "p2p"; }

CollectiveMode collective_mode_from_string(const std::string& text) {
  if (text == "mpi") return CollectiveMode::mpi;
  if (text == "p2p") return CollectiveMode::p2p;
  throw std::invalid_argument("expected mpi or p2p");
}

SleepBackend::SleepBackend(const Platform& platform, int rank, double slice_s, double iteration_overhead_s)
    : platform_(platform), rank_(rank), slice_s_(std::max(slice_s, 1e-6)),
      iteration_overhead_s_(std::max(0.0, iteration_overhead_s)) {}

void SleepBackend::begin_iteration(int) { sleep_modelled(iteration_overhead_s_, {}); }

void SleepBackend::run_compute(const Op& op, int, const std::function<void()>& poll) {
  sleep_modelled(op_time_s(platform_, op, rank_), poll);
}

void ComputeBackend::merge(const Op&, const Collective& push, const std::vector<std::span<const float>>&,
                           const std::vector<double>&) {
  throw InternalError(fmt::format("a {} back-end cannot merge a parameter server's push ({})", mode(), push.label));
}

void SleepBackend::merge(const Op& merge_op, const Collective&, const std::vector<std::span<const float>>&,
                         const std::vector<double>&) {
  sleep_modelled(op_time_s(platform_, merge_op, rank_), {});
}

void SleepBackend::sleep_modelled(double modelled_s, const std::function<void()>& poll) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const auto deadline = start + std::chrono::duration_cast<clock::duration>(
                                    std::chrono::duration<double>(std::max(0.0, modelled_s - late_s_)));
  for (;;) {
    const double left_s = std::chrono::duration<double>(deadline - clock::now()).count();
    if (left_s <= 0) break;
    sleep_s(std::min(left_s, slice_s_));
    if (poll) poll();
  }
  late_s_ = std::max(0.0, late_s_ + std::chrono::duration<double>(clock::now() - start).count() - modelled_s);
}

SlowedBackend::SlowedBackend(ComputeBackend& inner, double factor, double slice_s)
    : inner_(inner), factor_(factor), slice_s_(std::max(slice_s, 1e-6)) {}

void SlowedBackend::run_compute(const Op& op, int iteration, const std::function<void()>& poll) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  inner_.run_compute(op, iteration, poll);
  const auto end = clock::now();
  const auto deadline = end + (end - start) * (factor_ - 1);
  for (;;) {
    const double left_s = std::chrono::duration<double>(deadline - clock::now()).count();
    if (left_s <= 0) break;
    sleep_s(std::min(left_s, slice_s_));
    if (poll) poll();
  }
}

std::vector<float> SleepBackend::take_buffer(std::int64_t count) {
  const auto it = free_buffers_.find(count);
  if (it == free_buffers_.end()) return std::vector<float>(std::size_t(count), 0.0f);
  std::vector<float> buffer = std::move(it->second);
  free_buffers_.erase(it);
  return buffer;
}

CommBuffers SleepBackend::prepare(const Collective& c) {
  const CollectiveCounts counts = collective_counts(c, rank_);
  auto& send = send_[c.id] = take_buffer(counts.send);
  CommBuffers out{send.data(), nullptr, counts.send, counts.recv};
  const bool in_place = c.kind == CollectiveKind::allreduce || c.kind == CollectiveKind::bcast ||
                        (c.kind == CollectiveKind::reduce && rank_ == c.root);
  if (in_place) {
    out.recv = send.data();
  } else {
    auto& recv = recv_[c.id] = take_buffer(counts.recv);
    out.recv = recv.data();
  }
  return out;
}

void SleepBackend::complete(const Collective& c) {
  for (auto* buffers : {&send_, &recv_}) {
    const auto it = buffers->find(c.id);
    if (it == buffers->end()) continue;
    const auto count = std::int64_t(it->second.size());
    free_buffers_.emplace(count, std::move(it->second));
    buffers->erase(it);
  }
}

// ---------------------------------------------------------------------------------------

Communicators::Communicators(const Schedule& schedule, int world_rank) {
  world_ = mpi::Comm::duplicate(MPI_COMM_WORLD);
  world_size_ = world_.size();
  CNNPAR_ASSERT(world_size_ == schedule.ranks(),
                fmt::format("the schedule has {} ranks but MPI runs {}", schedule.ranks(), world_size_));
  std::set<std::vector<int>> groups;  // sorted: the global creation order every rank follows
  for (const Collective& c : schedule.collectives) {
    if (c.kind == CollectiveKind::send) continue;
    if (int(c.group.size()) == world_size_) continue;
    groups.insert(c.group);
  }
  int tag = 0;
  for (const auto& group : groups) {
    ++tag;
    if (std::find(group.begin(), group.end(), world_rank) == group.end()) continue;
    groups_.emplace(group, mpi::Comm::create_group(world_.get(), group, tag));
  }
}

MPI_Comm Communicators::of(const std::vector<int>& group) const {
  if (int(group.size()) == world_size_) return world_.get();
  const auto it = groups_.find(group);
  CNNPAR_ASSERT(it != groups_.end(), "no communicator was created for a group of this rank");
  return it->second.get();
}

mpi::Request start_collective(const Collective& c, const CommBuffers& b, const Communicators& comms,
                              int world_rank, int tag_upper_bound) {
  mpi::Request request;
  const int p = int(c.group.size());
  const float* send = b.send;
  const void* send_or_in_place = (b.send == b.recv) ? MPI_IN_PLACE : static_cast<const void*>(b.send);
  const auto mismatch = [&](const char* what) {
    return fmt::format("collective {} ({} '{}'): {} (send {}, recv {}, group of {})", c.id, to_string(c.kind),
                       c.label, what, b.send_count, b.recv_count, p);
  };
  if (c.kind == CollectiveKind::send) {
    CNNPAR_ASSERT(c.group.size() == 2 && (c.root == c.group[0] || c.root == c.group[1]),
                  mismatch("a send needs group {source, destination} and root = source"));
    const int destination = c.root == c.group[0] ? c.group[1] : c.group[0];
    const int tag = c.id % (tag_upper_bound + 1);
    if (world_rank == c.root) {
      CNNPAR_MPI(MPI_Isend(send, to_int(b.send_count, c), MPI_FLOAT, destination, tag, comms.point_to_point(),
                           request.out()));
    } else {
      CNNPAR_MPI(MPI_Irecv(b.recv, to_int(b.recv_count, c), MPI_FLOAT, c.root, tag, comms.point_to_point(),
                           request.out()));
    }
    return request;
  }
  const MPI_Comm comm = comms.of(c.group);
  const bool has_root = c.kind == CollectiveKind::bcast || c.kind == CollectiveKind::reduce ||
                        c.kind == CollectiveKind::gather || c.kind == CollectiveKind::scatter;
  const int root = has_root ? index_in_group(c.group, c.root) : -1;
  const bool is_root = has_root && world_rank == c.root;
  switch (c.kind) {
    case CollectiveKind::allreduce:
      CNNPAR_ASSERT(b.send_count == b.recv_count, mismatch("allreduce needs equal counts"));
      CNNPAR_MPI(MPI_Iallreduce(send_or_in_place, b.recv, to_int(b.recv_count, c), MPI_FLOAT, MPI_SUM, comm,
                                request.out()));
      break;
    case CollectiveKind::allgather:
      CNNPAR_ASSERT(b.recv_count == p * b.send_count && b.send != b.recv,
                    mismatch("allgather needs recv = P x send, not in place"));
      CNNPAR_MPI(MPI_Iallgather(send, to_int(b.send_count, c), MPI_FLOAT, b.recv, to_int(b.send_count, c),
                                MPI_FLOAT, comm, request.out()));
      break;
    case CollectiveKind::reduce_scatter:
      CNNPAR_ASSERT(b.send_count == p * b.recv_count, mismatch("reduce_scatter needs send = P x recv"));
      CNNPAR_MPI(MPI_Ireduce_scatter_block(send_or_in_place, b.recv, to_int(b.recv_count, c), MPI_FLOAT, MPI_SUM,
                                           comm, request.out()));
      break;
    case CollectiveKind::bcast: {
      float* buffer = is_root ? b.send : b.recv;
      const std::int64_t count = is_root ? b.send_count : b.recv_count;
      CNNPAR_MPI(MPI_Ibcast(buffer, to_int(count, c), MPI_FLOAT, root, comm, request.out()));
      break;
    }
    case CollectiveKind::reduce:
      CNNPAR_ASSERT(!is_root || b.recv_count == b.send_count, mismatch("reduce needs equal counts on the root"));
      CNNPAR_MPI(MPI_Ireduce(is_root ? send_or_in_place : static_cast<const void*>(send), is_root ? b.recv : nullptr,
                             to_int(b.send_count, c), MPI_FLOAT, MPI_SUM, root, comm, request.out()));
      break;
    case CollectiveKind::gather:
      CNNPAR_ASSERT(!is_root || b.recv_count == p * b.send_count, mismatch("gather needs recv = P x send on the root"));
      CNNPAR_MPI(MPI_Igather(send, to_int(b.send_count, c), MPI_FLOAT, is_root ? b.recv : nullptr,
                             to_int(b.send_count, c), MPI_FLOAT, root, comm, request.out()));
      break;
    case CollectiveKind::scatter:
      CNNPAR_ASSERT(!is_root || b.send_count == p * b.recv_count, mismatch("scatter needs send = P x recv on the root"));
      CNNPAR_MPI(MPI_Iscatter(is_root ? send : nullptr, to_int(b.recv_count, c), MPI_FLOAT, b.recv,
                              to_int(b.recv_count, c), MPI_FLOAT, root, comm, request.out()));
      break;
    case CollectiveKind::alltoall:
      CNNPAR_ASSERT(b.send_count % p == 0 && b.recv_count == b.send_count,
                    mismatch("alltoall needs equal counts divisible by P"));
      CNNPAR_MPI(MPI_Ialltoall(send, to_int(b.send_count / p, c), MPI_FLOAT, b.recv, to_int(b.recv_count / p, c),
                               MPI_FLOAT, comm, request.out()));
      break;
    case CollectiveKind::send:
      break;  // handled above
  }
  return request;
}

// ---------------------------------------------------------------------------------------
// One collective in flight.

/** A collective run as point-to-point steps (CollectiveMode::p2p): one step's Isend and
 *  Irecv at a time; the next step is posted when both completed. */
struct RunningCollective::Steps {
  StepRunner runner;
  MPI_Comm comm;
  int tag;
  std::size_t step = 0;
  mpi::Request send, receive;

  Steps(const Collective& c, Algorithm algorithm, int member, const CommBuffers& b, MPI_Comm comm_, int tag_)
      : runner(c, algorithm, member, b.send, b.recv, b.send_count, b.recv_count), comm(comm_), tag(tag_) {}

  // The send is posted before the receive: the other order made a 3 MB ring allreduce between
  // two ranks over TCP 20 % slower in training runs (its first exchange 16 ms instead of 12 at
  // 1 Gbit/s), where MPICH's own allreduce and the same steps in calibration were not.
  void post_step(const Collective& c) {
    const CollectiveStep& s = runner.plan().steps[step];
    if (s.send_to >= 0) {
      const std::span<const float> out = runner.outgoing(step);
      CNNPAR_MPI(MPI_Isend(out.data(), to_int(std::int64_t(out.size()), c), MPI_FLOAT, c.group[std::size_t(s.send_to)],
                           tag, comm, send.out()));
    }
    if (s.receive_from >= 0) {
      const std::span<float> in = runner.incoming(step);
      CNNPAR_MPI(MPI_Irecv(in.data(), to_int(std::int64_t(in.size()), c), MPI_FLOAT, c.group[std::size_t(s.receive_from)],
                           tag, comm, receive.out()));
    }
  }
  /** Advances as far as completed messages allow; true once every step is done. */
  bool test(const Collective& c) {
    while (step < runner.steps()) {
      const bool sent = !send.active() || send.test();
      const bool received = !receive.active() || receive.test();
      if (!sent || !received) return false;
      runner.apply(step);
      if (++step < runner.steps()) post_step(c);
    }
    runner.finish();
    return true;
  }
};

int tag_upper_bound() {
  int* tag_ub = nullptr;
  int flag = 0;
  CNNPAR_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
  return flag && tag_ub ? *tag_ub : 32767;
}

RunningCollective::RunningCollective(const Collective& c, const CommBuffers& buffers, const Communicators& comms,
                                     int world_rank, CollectiveMode mode, const Platform* platform,
                                     int tag_upper_bound)
    : collective_(c) {
  if (mode == CollectiveMode::p2p && c.kind != CollectiveKind::send && c.group.size() > 1) {
    const Algorithm algorithm = resolve_algorithm(c, platform ? *platform : Platform{});
    const int member = int(std::lower_bound(c.group.begin(), c.group.end(), world_rank) - c.group.begin());
    steps_ = std::make_unique<Steps>(c, algorithm, member, buffers, comms.point_to_point(), c.id % (tag_upper_bound + 1));
    if (steps_->runner.steps() > 0) steps_->post_step(c);
  } else {
    request_ = start_collective(c, buffers, comms, world_rank, tag_upper_bound);
  }
}

RunningCollective::~RunningCollective() = default;

bool RunningCollective::test() {
  if (done_) return true;
  done_ = steps_ ? steps_->test(collective_) : request_.test();
  return done_;
}

// ---------------------------------------------------------------------------------------
// The communication engine: collectives in posting order, at most `concurrency` started
// and unfinished at once. In poll mode the compute stream drives it (progress()); in thread
// mode a communication thread does, and the compute stream only enqueues and waits.
//
// Ownership: the progressing side (the compute stream in poll mode, the thread in thread
// mode) alone touches queue_, active_ and each Entry's `running`. The two sides meet only
// under handoff_mutex_, which is never held across an MPI call: the compute stream used to
// share one lock with the thread's MPI_Test and MPI_I* calls, so a wait for a collective
// that had long finished queued behind the start of the next one (6-9 ms per wait on the
// testbed, with an 18 MB eager step).

struct Interpreter::Engine {
  struct Entry {
    const Collective* collective = nullptr;
    CommBuffers buffers;
    std::unique_ptr<RunningCollective> running;  ///< progressing side only, once started
    /// posted_s and wait_*: compute stream; comm_*: progressing side, written before `done`
    CollectiveRecord record;
    std::atomic<bool> done{false};  ///< set (release) by the progressing side once complete
  };

  Engine(const Communicators& comms, const SyncedClock& clock, int rank, const InterpreterOptions& options)
      : comms_(comms), clock_(clock), rank_(rank), options_(options) {
    tag_upper_bound_ = tag_upper_bound();
    if (threaded()) thread_ = std::thread([this] { thread_main(); });
  }

  ~Engine() { stop(); }

  void stop() {
    {
      std::lock_guard lock(handoff_mutex_);
      stopping_ = true;
    }
    handoff_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void post(const Collective& c, const CommBuffers& buffers, double posted_s) {
    CNNPAR_ASSERT(entries_.count(c.id) == 0, fmt::format("collective {} posted twice", c.id));
    auto entry = std::make_unique<Entry>();
    entry->collective = &c;
    entry->buffers = buffers;
    entry->record = describe_collective(c);
    entry->record.posted_s = posted_s;
    Entry* const posted = entry.get();
    entries_.emplace(c.id, std::move(entry));
    posted_.push_back(posted);
    {
      std::lock_guard lock(handoff_mutex_);
      rethrow_locked();
      inbox_.push_back(posted);
    }
    if (threaded()) {
      handoff_.notify_all();
    } else {
      progress();
    }
  }

  /** Poll mode: tests active collectives, starts queued ones. */
  void progress() { progress_pass(); }

  /** Blocks until collective `id` completed; records the wait. */
  void wait(int id) {
    const double start_s = clock_.now_s();
    const auto it = entries_.find(id);
    CNNPAR_ASSERT(it != entries_.end(), fmt::format("wait for collective {} that was not posted", id));
    Entry& entry = *it->second;
    const auto check_stall = [&] {
      const double waited_s = clock_.now_s() - start_s;
      if (waited_s > options_.timeout_s)
        throw StallError(fmt::format("rank {}: stalled waiting for collective {} ({}) for {:.1f} s; its group: ranks {}",
                                     rank_, id, entry.collective->label, waited_s,
                                     fmt::join(entry.collective->group, ",")));
    };
    if (threaded()) {
      std::unique_lock lock(handoff_mutex_);
      while (!entry.done.load(std::memory_order_acquire)) {
        rethrow_locked();
        handoff_.wait_for(lock, std::chrono::milliseconds(5));
        if (!entry.done.load(std::memory_order_acquire)) check_stall();
      }
    } else {
      while (!entry.done.load(std::memory_order_acquire)) {
        progress_pass();
        if (entry.done.load(std::memory_order_acquire)) break;
        std::this_thread::yield();  // ranks may outnumber cores: let a computing one run
        check_stall();
      }
    }
    entry.record.wait_start_s = start_s;
    entry.record.wait_end_s = clock_.now_s();
  }

  /** The collectives' records in posting order; call after stop(). */
  std::vector<CollectiveRecord> records() const {
    CNNPAR_ASSERT(!thread_.joinable(), "records() while the communication thread runs");
    std::vector<CollectiveRecord> out;
    out.reserve(posted_.size());
    for (const Entry* entry : posted_) out.push_back(entry->record);
    return out;
  }

  /** Poll mode: true while some posted collective has not completed (queued or running). */
  bool pending() const { return !active_.empty() || !queue_.empty(); }

 private:
  bool threaded() const { return options_.progress == ProgressMode::thread; }

  void rethrow_locked() {
    if (error_) std::rethrow_exception(error_);
  }

  /** Takes posted entries, tests active collectives, starts queued ones; true if any
   *  collective completed or started. */
  bool progress_pass() {
    {
      std::lock_guard lock(handoff_mutex_);
      queue_.insert(queue_.end(), inbox_.begin(), inbox_.end());
      inbox_.clear();
    }
    bool changed = false;
    for (auto it = active_.begin(); it != active_.end();) {
      Entry* entry = *it;
      if (entry->running->test()) {
        entry->record.comm_end_s = clock_.now_s();
        entry->done.store(true, std::memory_order_release);
        it = active_.erase(it);
        changed = true;
        if (threaded()) {
          { std::lock_guard lock(handoff_mutex_); }  // a waiter between its check and its sleep sees it
          handoff_.notify_all();
        }
      } else {
        ++it;
      }
    }
    while (!queue_.empty() && int(active_.size()) < std::max(1, options_.collective_concurrency)) {
      Entry* entry = queue_.front();
      queue_.pop_front();
      entry->record.comm_start_s = clock_.now_s();
      entry->running = std::make_unique<RunningCollective>(*entry->collective, entry->buffers, comms_, rank_,
                                                           options_.collectives, options_.platform, tag_upper_bound_);
      active_.push_back(entry);
      changed = true;
      if (options_.debug_on_start) options_.debug_on_start(entry->collective->id);
    }
    return changed;
  }

  void thread_main() {
    for (;;) {
      try {
        progress_pass();
      } catch (...) {
        {
          std::lock_guard lock(handoff_mutex_);
          error_ = std::current_exception();
        }
        handoff_.notify_all();
        return;
      }
      std::unique_lock lock(handoff_mutex_);
      if (stopping_) return;
      if (active_.empty() && queue_.empty()) {
        handoff_.wait(lock, [&] { return stopping_ || !inbox_.empty(); });  // idle: woken by post() or stop()
        if (stopping_) return;
      } else {
        lock.unlock();
        // Sleeping (not spinning) keeps the thread from halving compute on a shared core
        // (measured: an async-progress spinner doubled compute time on 2 cores).
        sleep_s(options_.poll_interval_s);
      }
    }
  }

  const Communicators& comms_;
  const SyncedClock& clock_;
  int rank_;
  InterpreterOptions options_;
  int tag_upper_bound_ = 32767;

  // compute stream only
  std::map<int, std::unique_ptr<Entry>> entries_;
  std::vector<Entry*> posted_;  ///< posting order
  // progressing side only
  std::deque<Entry*> queue_;
  std::vector<Entry*> active_;
  // shared, under handoff_mutex_
  std::mutex handoff_mutex_;
  std::condition_variable handoff_;
  std::deque<Entry*> inbox_;  ///< posted, not yet taken by the progressing side
  bool stopping_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

Interpreter::Interpreter(const Schedule& schedule, int rank, ComputeBackend& backend, const Communicators& comms,
                         const SyncedClock& clock, InterpreterOptions options)
    : schedule_(schedule), rank_(rank), backend_(backend), comms_(comms), clock_(clock), options_(options) {
  CNNPAR_ASSERT(rank >= 0 && rank < schedule.ranks(), fmt::format("rank {} outside the schedule", rank));
}

Interpreter::~Interpreter() = default;

RankTrace Interpreter::run() {
  RankTrace trace;
  trace.rank = rank_;
  Engine engine(comms_, clock_, rank_, options_);
  const Program& program = schedule_.programs[std::size_t(rank_)];

  const bool polling = options_.progress == ProgressMode::poll;
  double last_poll_s = clock_.now_s();
  const std::function<void()> poll = [&] {
    if (!polling) return;
    const double now_s = clock_.now_s();
    if (now_s - last_poll_s < options_.poll_interval_s) return;
    last_poll_s = now_s;
    engine.progress();
  };
  // Nothing to progress: the op runs whole (GEMMs are not tiled; tiles cost ~6 % alone).
  const std::function<void()> no_progress;

  std::optional<ServeLedger> ledger;  // a parameter server's merges and versions, across its serve ops
  int iteration = 0;  // marks seen so far
  bool iteration_begun = false;
  const auto begin_iteration = [&] {
    if (iteration_begun) return;
    iteration_begun = true;
    if (iteration < schedule_.iterations) backend_.begin_iteration(iteration);
  };

  for (std::size_t i = 0; i < program.ops.size(); ++i) {
    if (options_.debug_stall && i == program.ops.size() / 2) {
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // test hook: a hung rank
    }
    const Op& op = program.ops[i];
    switch (op.kind) {
      case OpKind::mark:
        trace.marks.push_back(MarkRecord{op.iteration, clock_.now_s()});
        ++iteration;
        iteration_begun = false;
        break;
      case OpKind::compute: {
        begin_iteration();
        ComputeRecord record = describe_compute(op, int(i));
        record.start_s = clock_.now_s();
        backend_.run_compute(op, iteration, polling && engine.pending() ? poll : no_progress);
        record.end_s = clock_.now_s();
        trace.compute.push_back(std::move(record));
        break;
      }
      case OpKind::post: {
        begin_iteration();
        const Collective& c = schedule_.collectives.at(std::size_t(op.collective));
        const double posted_s = clock_.now_s();
        engine.post(c, backend_.prepare(c), posted_s);
        break;
      }
      case OpKind::wait: {
        const Collective& c = schedule_.collectives.at(std::size_t(op.collective));
        engine.wait(c.id);
        backend_.complete(c);
        break;
      }
      case OpKind::serve:
        begin_iteration();
        if (!ledger) ledger.emplace(schedule_);
        run_serve({schedule_, rank_, backend_, comms_, clock_, options_, *ledger}, op.serve, i, trace);
        break;
    }
    if (polling) {
      engine.progress();
      last_poll_s = clock_.now_s();
    }
  }
  engine.stop();
  std::vector<CollectiveRecord> posted = engine.records();
  if (ledger) {  // a server's own records come first; all in posting order
    trace.collectives.insert(trace.collectives.end(), posted.begin(), posted.end());
    std::stable_sort(trace.collectives.begin(), trace.collectives.end(),
                     [](const CollectiveRecord& a, const CollectiveRecord& b) { return a.posted_s < b.posted_s; });
  } else {
    trace.collectives = std::move(posted);
  }
  backend_.finish();
  return trace;
}

}  // namespace cnnpar::real
