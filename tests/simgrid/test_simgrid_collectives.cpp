// SimGrid engine against the closed forms of docs/design.md "Collective costs" on a contention-free crossbar.
// α = latency + overhead of a node-to-node route (each node link carries latency/2, the
// replay sleeps the overhead before each send), β = link bandwidth, n = Collective::bytes.
#include <catch2/catch.hpp>

#include <cmath>

#include "sim/simgrid/simgrid_engine.hpp"
#include "tests/simgrid/fixtures.hpp"

using namespace cnnpar;
using test::crossbar;
using test::latest_end_s;
using test::single_collective;

namespace {

// Relative tolerance: SimGrid's LMM solver works to ~1e-5 and message sizes are rounded to
// whole bytes; 1e-4 still catches any missing α or β term.
constexpr double kRelTol = 1e-4;

constexpr double kOverhead = 1e-6;
constexpr double kAlpha = 3e-6;    // latency 2 µs + overhead 1 µs
constexpr double kBeta = 1.25e9;   // B/s

double simulate_collective(int p, CollectiveKind kind, double bytes, int root = -1,
                           Algorithm algorithm = Algorithm::automatic) {
  const Schedule schedule = single_collective(p, kind, bytes, root, algorithm);
  const Platform platform = crossbar(p);
  const Trace trace = make_simgrid_engine()->run(schedule, platform);
  REQUIRE(trace.engine == "simgrid");
  REQUIRE(int(trace.ranks.size()) == p);
  return latest_end_s(trace, 0);
}

int ceil_log2(int p) {
  int rounds = 0;
  while ((1 << rounds) < p) ++rounds;
  return rounds;
}

}  // namespace

TEST_CASE("ring allreduce matches 2(P-1)a + 2(P-1)/P n/b", "[simgrid][closed-form]") {
  for (int p : {2, 5, 16}) {
    const double n = 64.0 * 1024 * 1024;
    // e.g. P = 16: 30·3e-6 + 2·15/16·67108864/1.25e9 = 0.100753 s
    const double expected = 2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n / kBeta;
    CAPTURE(p);
    CHECK(simulate_collective(p, CollectiveKind::allreduce, n) == Approx(expected).epsilon(kRelTol));
  }
}

TEST_CASE("recursive doubling allreduce matches log2 P (a + n/b)", "[simgrid][closed-form]") {
  // automatic picks recursive doubling below 64 KiB on a power-of-two group.
  const int p = 8;
  const double n = 16.0 * 1024;
  const double expected = 3 * (kAlpha + n / kBeta);  // 3·(3e-6 + 1.31072e-5) = 4.83216e-5 s
  CHECK(simulate_collective(p, CollectiveKind::allreduce, n) == Approx(expected).epsilon(kRelTol));
  // Same size on 6 ranks (not a power of two): automatic picks the ring.
  const double ring = 2 * 5 * kAlpha + 2.0 * 5 / 6 * n / kBeta;
  CHECK(simulate_collective(6, CollectiveKind::allreduce, n, -1, Algorithm::recursive_doubling) ==
        Approx(ring).epsilon(kRelTol));
}

TEST_CASE("ring allgather and reduce_scatter match (P-1)a + (P-1)/P n_total/b", "[simgrid][closed-form]") {
  const int p = 6;
  const double n = 4.0 * 1024 * 1024;
  // allgather: n is one rank's contribution, n_total = P·n
  const double allgather = (p - 1) * kAlpha + double(p - 1) / p * (p * n) / kBeta;
  CHECK(simulate_collective(p, CollectiveKind::allgather, n) == Approx(allgather).epsilon(kRelTol));
  // reduce_scatter: n is the whole vector
  const double reduce_scatter = (p - 1) * kAlpha + double(p - 1) / p * n / kBeta;
  CHECK(simulate_collective(p, CollectiveKind::reduce_scatter, n) == Approx(reduce_scatter).epsilon(kRelTol));
}

TEST_CASE("binomial bcast and reduce match ceil(log2 P) (a + n/b)", "[simgrid][closed-form]") {
  const double n = 1.0 * 1024 * 1024;
  for (int p : {2, 7, 8}) {
    for (int root : {0, p - 1}) {
      const double expected = ceil_log2(p) * (kAlpha + n / kBeta);  // P = 7: 3·(3e-6 + 8.388608e-4)
      CAPTURE(p, root);
      CHECK(simulate_collective(p, CollectiveKind::bcast, n, root) == Approx(expected).epsilon(kRelTol));
      // The overhead is a sender-side sleep (LogP's o): a leaf that must wait for its parent to
      // finish another receive has already paid it, so a reduce may beat the form by one overhead.
      const double reduce = simulate_collective(p, CollectiveKind::reduce, n, root);
      CHECK(reduce <= expected * (1 + kRelTol));
      CHECK(reduce >= expected - kOverhead - expected * kRelTol);
    }
  }
}

TEST_CASE("binomial gather and scatter match ceil(log2 P) a + (P-1)/P n_total/b", "[simgrid][closed-form]") {
  const double n = 1.0 * 1024 * 1024;  // one rank's share
  for (int p : {4, 8}) {
    const double expected = ceil_log2(p) * kAlpha + double(p - 1) / p * (p * n) / kBeta;
    CAPTURE(p);
    CHECK(simulate_collective(p, CollectiveKind::gather, n, 1) == Approx(expected).epsilon(kRelTol));
    CHECK(simulate_collective(p, CollectiveKind::scatter, n, 1) == Approx(expected).epsilon(kRelTol));
  }
}

TEST_CASE("alltoall matches (P-1)(a + n/(P b)) and send matches a + n/b", "[simgrid][closed-form]") {
  const int p = 5;
  const double n = 10.0 * 1024 * 1024;  // what one rank sends in total
  const double alltoall = (p - 1) * (kAlpha + n / (p * kBeta));
  CHECK(simulate_collective(p, CollectiveKind::alltoall, n) == Approx(alltoall).epsilon(kRelTol));

  Schedule schedule = test::empty_schedule(2);
  const int id = test::add(schedule, CollectiveKind::send, n, {0, 1}, 1);
  for (Program& program : schedule.programs) {
    program.ops = {Op::post_op(id), Op::wait_op(id), Op::mark_op(0)};
  }
  const Trace trace = make_simgrid_engine()->run(schedule, crossbar(2));
  CHECK(latest_end_s(trace, id) == Approx(kAlpha + n / kBeta).epsilon(kRelTol));  // 8.3889e-3 s
}

TEST_CASE("compute ops take the roofline time of their rank's node", "[simgrid][compute]") {
  Platform platform = crossbar(2);
  platform.nodes.speed_factors = {1.0, 0.5};
  platform.nodes.efficiency[KernelClass::gemm] = 0.8;
  platform.resolve_speed_factors();
  Schedule schedule = test::empty_schedule(2);
  for (Program& program : schedule.programs) {
    program.ops.push_back(Op::compute_op("a.fwd.gemm", 0, Phase::forward, KernelClass::gemm, 4e11, 1e6, 1));
    program.ops.push_back(Op::compute_op("a.fwd.pool", 0, Phase::forward, KernelClass::pool, 1e3, 5e10, 1));
    program.ops.push_back(Op::mark_op(0));
  }
  const Trace trace = make_simgrid_engine()->run(schedule, platform);
  // gemm: 4e11 / (1e12 · 0.8 · speed) = 0.5 s on rank 0, 1.0 s on rank 1;
  // pool: memory bound, 5e10 / (1e11 · speed) = 0.5 s / 1.0 s.
  for (int r : {0, 1}) {
    const double speed = r == 0 ? 1.0 : 0.5;
    const auto& compute = trace.ranks[std::size_t(r)].compute;
    REQUIRE(compute.size() == 2);
    CHECK(compute[0].start_s == Approx(0.0).margin(1e-12));
    CHECK(compute[0].end_s - compute[0].start_s == Approx(0.5 / speed).epsilon(1e-9));
    CHECK(compute[1].end_s - compute[1].start_s == Approx(0.5 / speed).epsilon(1e-9));
    CHECK(trace.ranks[std::size_t(r)].marks.at(0).time_s == Approx(1.0 / speed).epsilon(1e-9));
    CHECK(compute[0].label == "a.fwd.gemm");
  }
}

TEST_CASE("a wait overlapped by compute returns when both are done", "[simgrid][overlap]") {
  // Each rank: post allreduce (T_c by the ring form), compute 50 ms, wait, mark.
  const int p = 4;
  const double n = 256.0 * 1024 * 1024;
  Schedule schedule = test::empty_schedule(p);
  const int id = test::add(schedule, CollectiveKind::allreduce, n, test::all_ranks(p));
  for (Program& program : schedule.programs) {
    program.ops = {Op::post_op(id),
                   Op::compute_op("c.fwd.gemm", 0, Phase::forward, KernelClass::gemm, 2.5e10, 0, 1),
                   Op::wait_op(id), Op::mark_op(0)};
  }
  const Trace trace = make_simgrid_engine()->run(schedule, crossbar(p));
  const double comm = 2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n / kBeta;  // 0.32213 s
  const double compute = 2.5e10 / (1e12 * 0.5);                              // 0.05 s
  for (const RankTrace& rank : trace.ranks) {
    const CollectiveRecord& record = rank.collectives.at(0);
    CHECK(record.posted_s == Approx(0.0).margin(1e-12));
    CHECK(record.comm_start_s == Approx(0.0).margin(1e-12));
    CHECK(record.comm_end_s == Approx(comm).epsilon(kRelTol));
    CHECK(record.wait_start_s == Approx(compute).epsilon(1e-9));
    CHECK(record.wait_end_s == Approx(comm).epsilon(kRelTol));
    CHECK(rank.marks.at(0).time_s == Approx(comm).epsilon(kRelTol));
  }
}

TEST_CASE("collectives run in posting order, collective_concurrency at a time", "[simgrid][engine]") {
  // Two 4-rank allreduces posted back to back; latency 0 so only bandwidth counts.
  const int p = 4;
  const double n = 100e6;
  Schedule schedule = test::empty_schedule(p);
  const int a = test::add(schedule, CollectiveKind::allreduce, n, test::all_ranks(p));
  const int b = test::add(schedule, CollectiveKind::allreduce, n, test::all_ranks(p));
  for (Program& program : schedule.programs)
    program.ops = {Op::post_op(a), Op::post_op(b), Op::wait_op(a), Op::wait_op(b), Op::mark_op(0)};
  const double one = 2.0 * (p - 1) / p * n / kBeta;  // 0.12 s alone

  Platform serial = crossbar(p, 0, 0);
  const Trace one_at_a_time = make_simgrid_engine()->run(schedule, serial);
  CHECK(latest_end_s(one_at_a_time, a) == Approx(one).epsilon(kRelTol));
  CHECK(latest_end_s(one_at_a_time, b) == Approx(2 * one).epsilon(kRelTol));
  CHECK(one_at_a_time.ranks[0].collectives[1].comm_start_s == Approx(one).epsilon(kRelTol));

  Platform concurrent = crossbar(p, 0, 0);
  concurrent.network.collective_concurrency = 2;
  const Trace together = make_simgrid_engine()->run(schedule, concurrent);
  // Both share every link for their whole life: each ends at 2 × 0.12 s.
  CHECK(latest_end_s(together, a) == Approx(2 * one).epsilon(kRelTol));
  CHECK(latest_end_s(together, b) == Approx(2 * one).epsilon(kRelTol));
}

TEST_CASE("a rank receives point-to-point messages from any source in arrival order", "[simgrid][send]") {
  // Rank 0 posts receives from rank 1 then rank 2. Rank 1 computes 1 s before sending, rank 2
  // sends at once. With any-source receiving, rank 2's send completes after a + n/b, not after
  // rank 1's message has arrived.
  const double n = 1e6;
  Schedule schedule = test::empty_schedule(3);
  const int from1 = test::add(schedule, CollectiveKind::send, n, {0, 1}, 1);
  const int from2 = test::add(schedule, CollectiveKind::send, n, {0, 2}, 2);
  schedule.programs[0].ops = {Op::post_op(from1), Op::post_op(from2), Op::wait_op(from1), Op::wait_op(from2),
                              Op::mark_op(0)};
  schedule.programs[1].ops = {Op::compute_op("w.fwd.gemm", 0, Phase::forward, KernelClass::gemm, 5e11, 0, 1),
                              Op::post_op(from1), Op::wait_op(from1), Op::mark_op(0)};
  schedule.programs[2].ops = {Op::post_op(from2), Op::wait_op(from2), Op::mark_op(0)};
  const Trace trace = make_simgrid_engine()->run(schedule, crossbar(3));
  const double message = kAlpha + n / kBeta;  // 8.03e-4 s
  CHECK(trace.ranks[2].collectives.at(0).comm_end_s == Approx(message).epsilon(kRelTol));
  CHECK(trace.ranks[1].collectives.at(0).comm_end_s == Approx(1.0 + message).epsilon(kRelTol));
  CHECK(trace.ranks[0].marks.at(0).time_s == Approx(1.0 + message).epsilon(kRelTol));
}

TEST_CASE("compute slows down by 1 + s while communication progresses", "[simgrid][slowdown]") {
  // A 2-rank allreduce of ~0.8 s runs under a compute op of 0.1 s nominal; with s = 0.5 the op
  // takes 0.15 s.
  const int p = 2;
  Platform platform = crossbar(p);
  platform.comm_compute_slowdown = 0.5;
  Schedule schedule = test::empty_schedule(p);
  const int id = test::add(schedule, CollectiveKind::allreduce, 1e9, test::all_ranks(p));
  for (Program& program : schedule.programs)
    program.ops = {Op::post_op(id), Op::compute_op("c.fwd.gemm", 0, Phase::forward, KernelClass::gemm, 5e10, 0, 1),
                   Op::wait_op(id),
                   Op::compute_op("d.fwd.gemm", 0, Phase::forward, KernelClass::gemm, 5e10, 0, 1), Op::mark_op(0)};
  const Trace trace = make_simgrid_engine()->run(schedule, platform);
  const double comm = 2 * kAlpha + 1e9 / kBeta;  // 0.800006 s
  for (const RankTrace& rank : trace.ranks) {
    CHECK(rank.compute[0].end_s - rank.compute[0].start_s == Approx(0.15).epsilon(1e-6));
    // After the collective ends, compute is back to full speed: 0.1 s.
    CHECK(rank.compute[1].start_s == Approx(comm).epsilon(kRelTol));
    CHECK(rank.compute[1].end_s - rank.compute[1].start_s == Approx(0.1).epsilon(1e-6));
  }
}

TEST_CASE("simulate_many returns traces in input order", "[simgrid][many]") {
  const double n = 8e6;
  std::vector<Schedule> schedules;
  std::vector<Platform> platforms;
  for (int p : {8, 2, 5}) {
    schedules.push_back(single_collective(p, CollectiveKind::allreduce, n, -1, Algorithm::ring));
    platforms.push_back(crossbar(p));
  }
  std::vector<std::pair<const Schedule*, const Platform*>> jobs;
  for (std::size_t k = 0; k < schedules.size(); ++k) jobs.emplace_back(&schedules[k], &platforms[k]);
  int calls = 0, last_done = 0;
  const auto traces = simulate_many(jobs, SimgridOptions{}, [&](int done, int total) {
    ++calls;
    last_done = done;
    CHECK(total == 3);
  });
  CHECK(calls == 3);
  CHECK(last_done == 3);
  REQUIRE(traces.size() == 3);
  const int sizes[] = {8, 2, 5};
  for (std::size_t k = 0; k < 3; ++k) {
    const int p = sizes[k];
    REQUIRE(int(traces[k].ranks.size()) == p);
    CHECK(latest_end_s(traces[k], 0) ==
          Approx(2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n / kBeta).epsilon(kRelTol));
  }
}

TEST_CASE("LV08 is slower than the alpha-beta model, CM02 is not", "[simgrid][network-model]") {
  // LV08 scales bandwidth by 0.97 and latency by 13.01 (SimGrid's TCP calibration), so a
  // bandwidth-bound ring is at least 1/0.97 - 1 = 3 % slower than the closed form.
  const int p = 4;
  const double n = 100e6;
  const Schedule schedule = single_collective(p, CollectiveKind::allreduce, n, -1, Algorithm::ring);
  const double closed = 2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n / kBeta;  // 0.120018 s
  SimgridOptions lv08;
  lv08.network_model = "LV08";
  const double cm02_s = latest_end_s(make_simgrid_engine()->run(schedule, crossbar(p)), 0);
  const double lv08_s = latest_end_s(make_simgrid_engine(lv08)->run(schedule, crossbar(p)), 0);
  CHECK(cm02_s == Approx(closed).epsilon(kRelTol));
  CHECK(lv08_s > closed * 1.03);
}

TEST_CASE("batched ring steps keep contention-free times", "[simgrid][batch]") {
  // P = 5: 8 allreduce steps sent as messages of 3, 3 and 2 steps; 4 allgather steps as 3 + 1.
  const int p = 5;
  const double n = 20e6;
  SimgridOptions options;
  options.ring_step_batch = 3;
  const Platform platform = crossbar(p);
  const Trace allreduce = make_simgrid_engine(options)->run(
      single_collective(p, CollectiveKind::allreduce, n, -1, Algorithm::ring), platform);
  const double allreduce_s = 2 * (p - 1) * kAlpha + 2.0 * (p - 1) / p * n / kBeta;  // 0.025624 s
  CHECK(latest_end_s(allreduce, 0) == Approx(allreduce_s).epsilon(kRelTol));
  const Trace allgather = make_simgrid_engine(options)->run(
      single_collective(p, CollectiveKind::allgather, n, -1, Algorithm::ring), platform);
  const double allgather_s = (p - 1) * kAlpha + double(p - 1) / p * (p * n) / kBeta;  // 0.064012 s
  CHECK(latest_end_s(allgather, 0) == Approx(allgather_s).epsilon(kRelTol));
  CHECK(allreduce.metadata.at("simgrid").at("ring_step_batch") == 3);
}
