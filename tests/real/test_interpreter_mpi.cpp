// MPI tests of the Schedule interpreter, run by ctest under `mpiexec -n 1|2|4`.
// A hand-written Schedule posts every collective kind (plus a sub-group allreduce and a
// point-to-point send); a test backend fills each send buffer with a known function of
// (rank, collective, element) and checks every received element against the naive
// reference result computed from that function (the "naive collective beside MPI" rule).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mpi.h>

#include "system/collective.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <thread>
#include <vector>

#include "model/schedule.hpp"
#include "real/clock_sync.hpp"
#include "real/interpreter.hpp"
#include "real/mpi_wrap.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

namespace {

int g_rank = 0, g_size = 1;

/** The value rank r contributes at element i of collective c (exact in FP32: small integers). */
float contribution(int r, int c, std::int64_t i) { return float(100 * r + (i % 50) + c); }

Collective make_collective(int id, CollectiveKind kind, double bytes, std::vector<int> group, int root = -1) {
  Collective c;
  c.id = id;
  c.kind = kind;
  c.bytes = bytes;
  c.group = std::move(group);
  c.root = root;
  c.label = std::string(to_string(kind)) + " #" + std::to_string(id);
  return c;
}

Op compute(const std::string& label) {
  Op op;
  op.kind = OpKind::compute;
  op.label = label;
  op.kernel = KernelClass::other;
  return op;
}
Op post(int id) {
  Op op;
  op.kind = OpKind::post;
  op.collective = id;
  return op;
}
Op wait(int id) {
  Op op;
  op.kind = OpKind::wait;
  op.collective = id;
  return op;
}
Op mark(int iteration) {
  Op op;
  op.kind = OpKind::mark;
  op.iteration = iteration;
  return op;
}

/** Every collective kind over the world, a sub-group allreduce of the even ranks and a send
 *  from rank 0 to the last rank; `rounds` iterations, each: post all, compute, wait all. */
Schedule all_kinds_schedule(int ranks, int rounds) {
  Schedule s;
  s.strategy = "test";
  s.network = "none";
  s.iterations = rounds;
  s.warmup_iterations = 0;
  std::vector<int> world;
  for (int r = 0; r < ranks; ++r) world.push_back(r);
  std::vector<int> even;
  for (int r = 0; r < ranks; r += 2) even.push_back(r);
  s.programs.resize(std::size_t(ranks));
  for (int r = 0; r < ranks; ++r) s.programs[std::size_t(r)].rank = r;
  const double bytes = 4.0 * 1000 * ranks;  // divisible into P blocks
  for (int it = 0; it < rounds; ++it) {
    std::vector<Collective> cs;
    int id = int(s.collectives.size());
    cs.push_back(make_collective(id++, CollectiveKind::allreduce, bytes, world));
    cs.push_back(make_collective(id++, CollectiveKind::allgather, bytes, world));
    cs.push_back(make_collective(id++, CollectiveKind::reduce_scatter, bytes, world));
    cs.push_back(make_collective(id++, CollectiveKind::bcast, bytes, world, (1 + it) % ranks));
    cs.push_back(make_collective(id++, CollectiveKind::reduce, bytes, world, (2 + it) % ranks));
    cs.push_back(make_collective(id++, CollectiveKind::gather, bytes, world, ranks - 1));
    cs.push_back(make_collective(id++, CollectiveKind::scatter, bytes, world, 0));
    cs.push_back(make_collective(id++, CollectiveKind::alltoall, bytes, world));
    if (ranks >= 3) cs.push_back(make_collective(id++, CollectiveKind::allreduce, bytes, even));
    if (ranks >= 2) cs.push_back(make_collective(id++, CollectiveKind::send, bytes, {0, ranks - 1}, 0));
    for (Collective& c : cs) {
      c.iteration = it;
      s.collectives.push_back(c);
    }
    for (int r = 0; r < ranks; ++r) {
      auto& ops = s.programs[std::size_t(r)].ops;
      const auto member = [&](const Collective& c) {
        return std::find(c.group.begin(), c.group.end(), r) != c.group.end();
      };
      for (const Collective& c : cs)
        if (member(c)) ops.push_back(post(c.id));
      ops.push_back(compute("work"));
      for (const Collective& c : cs)
        if (member(c)) ops.push_back(wait(c.id));
      ops.push_back(mark(it));
    }
  }
  return s;
}

/** Fills send buffers with contribution(); checks received data against the reference. */
class CheckingBackend : public ComputeBackend {
 public:
  explicit CheckingBackend(int rank) : rank_(rank) {}
  std::string mode() const override { return "test"; }
  void begin_iteration(int) override { ++iterations_begun; }
  void run_compute(const Op&, int, const std::function<void()>& poll) override {
    for (int i = 0; i < 5; ++i) {  // 5 ms of "work" in slices, polling between them
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (poll) poll();
    }
  }
  CommBuffers prepare(const Collective& c) override {
    const CollectiveCounts counts = collective_counts(c, rank_);
    auto& send = send_[c.id];
    auto& recv = recv_[c.id];
    send.resize(std::size_t(counts.send));
    for (std::int64_t i = 0; i < counts.send; ++i) send[std::size_t(i)] = contribution(rank_, c.id, i);
    recv.assign(std::size_t(counts.recv), -1.0f);
    return CommBuffers{send.data(), recv.data(), counts.send, counts.recv};
  }
  void complete(const Collective& c) override {
    const auto& recv = recv_[c.id];
    const int p = int(c.group.size());
    const int me = int(std::find(c.group.begin(), c.group.end(), rank_) - c.group.begin());
    const std::int64_t n = std::int64_t(recv.size());
    for (std::int64_t i = 0; i < n; ++i) {
      double expected = 0;
      switch (c.kind) {
        case CollectiveKind::allreduce:
        case CollectiveKind::reduce:  // recv only on the root
          for (int m : c.group) expected += contribution(m, c.id, i);
          break;
        case CollectiveKind::allgather:
        case CollectiveKind::gather: {  // block b of recv = member b's send
          const std::int64_t block = n / p;
          expected = contribution(c.group[std::size_t(i / block)], c.id, i % block);
          break;
        }
        case CollectiveKind::reduce_scatter:  // own block of the sum
          for (int m : c.group) expected += contribution(m, c.id, me * n + i);
          break;
        case CollectiveKind::bcast:
          expected = contribution(c.root, c.id, i);
          break;
        case CollectiveKind::scatter:  // own block of the root's send
          expected = contribution(c.root, c.id, me * n + i);
          break;
        case CollectiveKind::alltoall: {  // block b of recv = member b's block `me`
          const std::int64_t block = n / p;
          expected = contribution(c.group[std::size_t(i / block)], c.id, me * block + i % block);
          break;
        }
        case CollectiveKind::send:
          expected = contribution(c.root, c.id, i);
          break;
      }
      if (rank_ == c.root && c.kind == CollectiveKind::bcast) expected = -1.0;  // root receives nothing
      if (recv[std::size_t(i)] != float(expected)) ++mismatches;
      ++checked;
    }
    ++completed;
  }
  int completed = 0;
  int iterations_begun = 0;
  std::int64_t checked = 0;
  std::int64_t mismatches = 0;

 private:
  int rank_;
  std::map<int, std::vector<float>> send_, recv_;
};

int posted_by(const Schedule& s, int rank) {
  int n = 0;
  for (const Op& op : s.programs[std::size_t(rank)].ops) n += op.kind == OpKind::post;
  return n;
}

void check_trace_invariants(const RankTrace& t, const Schedule& s, int concurrency) {
  REQUIRE(int(t.collectives.size()) == posted_by(s, g_rank));
  for (std::size_t i = 0; i < t.collectives.size(); ++i) {
    const CollectiveRecord& c = t.collectives[i];
    CHECK(c.posted_s <= c.comm_start_s);
    CHECK(c.comm_start_s <= c.comm_end_s);
    CHECK(c.wait_start_s <= c.wait_end_s);
    CHECK(c.comm_end_s <= c.wait_end_s);  // a wait ends only after completion was observed
    // Engine order: started in posting order, at most `concurrency` unfinished at once.
    if (i > 0) CHECK(t.collectives[i - 1].comm_start_s <= c.comm_start_s);
    if (concurrency == 1 && i > 0) CHECK(t.collectives[i - 1].comm_end_s <= c.comm_start_s);
  }
  REQUIRE(t.marks.size() == std::size_t(s.iterations));
  for (std::size_t i = 1; i < t.marks.size(); ++i) CHECK(t.marks[i - 1].time_s <= t.marks[i].time_s);
  for (const ComputeRecord& c : t.compute) CHECK(c.end_s - c.start_s >= 0.005);  // 5 ms sleeps
}

void run_all_kinds(ProgressMode mode, int concurrency, CollectiveMode collectives = CollectiveMode::mpi,
                   const Platform* platform = nullptr) {
  const Schedule s = all_kinds_schedule(g_size, 2);
  Communicators comms(s, g_rank);
  SyncedClock clock;
  clock.synchronise(MPI_COMM_WORLD, 4, 30);
  CheckingBackend backend(g_rank);
  InterpreterOptions options;
  options.progress = mode;
  options.collective_concurrency = concurrency;
  options.timeout_s = 30;
  options.collectives = collectives;
  options.platform = platform;
  Interpreter interpreter(s, g_rank, backend, comms, clock, options);
  const RankTrace trace = interpreter.run();
  CHECK(backend.completed == posted_by(s, g_rank));
  CHECK(backend.iterations_begun == s.iterations);
  CHECK(backend.checked > 0);
  CHECK(backend.mismatches == 0);
  check_trace_invariants(trace, s, concurrency);
}

}  // namespace

TEST_CASE("every collective kind moves the reference data (poll mode, one at a time)") {
  run_all_kinds(ProgressMode::poll, 1);
}

TEST_CASE("every collective kind moves the reference data (poll mode, three at a time)") {
  run_all_kinds(ProgressMode::poll, 3);
}

TEST_CASE("every collective kind moves the reference data (communication thread)") {
  run_all_kinds(ProgressMode::thread, 1);
}

// The plain send/recv implementation of the collective layer's steps: the same reference data
// by the algorithm the engines price (automatic: recursive doubling for these small power-of-
// two allreduces, rings for allgather and reduce_scatter, binomial trees, direct alltoall).
TEST_CASE("p2p: every collective kind by the collective layer's steps (poll mode)") {
  run_all_kinds(ProgressMode::poll, 1, CollectiveMode::p2p);
}

TEST_CASE("p2p: ring allreduce, three collectives at a time") {
  Platform ring;
  ring.network.algorithms["allreduce"] = Algorithm::ring;
  run_all_kinds(ProgressMode::poll, 3, CollectiveMode::p2p, &ring);
}

TEST_CASE("p2p: every collective kind with the communication thread") {
  run_all_kinds(ProgressMode::thread, 1, CollectiveMode::p2p);
}

TEST_CASE("clock offset on one host is within its error bound") {
  SyncedClock clock;
  clock.synchronise(MPI_COMM_WORLD, 8, 30);
  // Processes on one host read the same clock, so the true offset is 0 and the min-RTT
  // midpoint estimate errs by at most half the best round trip.
  CHECK(std::abs(clock.offset_s()) <= clock.best_round_trip_s() / 2 + 1e-6);
  // The origin was read on rank 0 before the broadcast that every other rank waits for, so
  // the true time since it is >= 0; the estimate can fall short of it only by the offset's
  // error, at most half the best round trip (several ms with 4 ranks on 2 loaded cores).
  const double t = clock.now_s();
  CHECK(t >= -(clock.best_round_trip_s() / 2 + 1e-6));
  CHECK(t < 5.0);
}

TEST_CASE("a wait that never completes is reported as a stall naming rank and collective") {
  if (g_size < 2) return;  // needs a peer that never joins
  // An allreduce over the world that only rank 0 posts cannot complete: rank 0's wait must
  // give up after timeout_s with a StallError naming rank, collective id and label.
  std::vector<int> world;
  for (int r = 0; r < g_size; ++r) world.push_back(r);
  Schedule s;
  s.iterations = 1;
  s.programs.resize(std::size_t(g_size));
  for (int r = 0; r < g_size; ++r) s.programs[std::size_t(r)].rank = r;
  s.collectives.push_back(make_collective(0, CollectiveKind::allreduce, 4.0 * 1024, world));
  s.programs[0].ops = {post(0), wait(0), mark(0)};
  for (int r = 1; r < g_size; ++r) s.programs[std::size_t(r)].ops = {mark(0)};
  Communicators comms(s, g_rank);
  SyncedClock clock;
  clock.synchronise(MPI_COMM_WORLD, 2, 30);
  CheckingBackend backend(g_rank);
  InterpreterOptions options;
  options.timeout_s = 0.5;
  Interpreter interpreter(s, g_rank, backend, comms, clock, options);
  const double start_s = MPI_Wtime();
  if (g_rank == 0) {
    try {
      interpreter.run();
      FAIL("the wait should have timed out");
    } catch (const StallError& e) {
      const std::string message = e.what();
      INFO(message);
      CHECK(message.find("rank 0: stalled waiting for collective 0 (allreduce #0) for 0.") != std::string::npos);
      // Gave up after the 0.5 s limit, not much later.
      CHECK(MPI_Wtime() - start_s >= 0.5);
      CHECK(MPI_Wtime() - start_s < 5.0);
    }
  } else {
    interpreter.run();
  }
  // Once rank 0 has given up, the other ranks join the allreduce, so rank 0's abandoned
  // request completes and the communicator is clean for MPI_Comm_free.
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank != 0) {
    std::vector<float> data(1024, 0.0f);
    MPI_Request request;  // non-blocking: blocking and non-blocking collectives never match
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), 1024, MPI_FLOAT, MPI_SUM, comms.of(world), &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("a wait on a finished collective returns while the communication thread is busy") {
  // The compute stream must not queue behind the thread's MPI calls: while the thread is
  // starting collective 1 (held here in the start hook), the wait for collective 0, which
  // finished before collective 1 could start (one at a time), has to return. The hook waits
  // for that return up to 10 s; a wait that needs the thread first would make it give up.
  std::vector<int> world;
  for (int r = 0; r < g_size; ++r) world.push_back(r);
  Schedule s;
  s.iterations = 1;
  s.programs.resize(std::size_t(g_size));
  s.collectives.push_back(make_collective(0, CollectiveKind::allreduce, 4.0 * 1024 * g_size, world));
  s.collectives.push_back(make_collective(1, CollectiveKind::allreduce, 4.0 * 1024 * g_size, world));
  for (int r = 0; r < g_size; ++r) {
    s.programs[std::size_t(r)].rank = r;
    s.programs[std::size_t(r)].ops = {post(0), compute("work"), post(1), wait(0), wait(1), mark(0)};
  }
  struct FlaggingBackend : CheckingBackend {
    using CheckingBackend::CheckingBackend;
    void complete(const Collective& c) override {
      CheckingBackend::complete(c);
      if (c.id == 0) first_completed = true;
    }
    std::atomic<bool> first_completed{false};
  };
  Communicators comms(s, g_rank);
  SyncedClock clock;
  clock.synchronise(MPI_COMM_WORLD, 2, 30);
  FlaggingBackend backend(g_rank);
  bool returned_while_busy = false;
  InterpreterOptions options;
  options.progress = ProgressMode::thread;
  options.timeout_s = 30;
  options.debug_on_start = [&](int id) {
    if (id != 1) return;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!backend.first_completed && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    returned_while_busy = backend.first_completed;
  };
  Interpreter interpreter(s, g_rank, backend, comms, clock, options);
  const RankTrace trace = interpreter.run();
  CHECK(returned_while_busy);
  CHECK(backend.completed == 2);
  CHECK(backend.mismatches == 0);
  check_trace_invariants(trace, s, 1);
}

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Catch::Session session;
  // Only rank 0 reports; every rank runs every test (they are collective).
  const int status = session.run(argc, argv);
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
