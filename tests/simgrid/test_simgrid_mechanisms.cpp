// The time-model mechanisms (message factors, reduction arithmetic, per-iteration
// overhead, progress by polling, injection contention) on hand-built schedules: each case states
// its equation and expected value, and both engines must reproduce it.
#include <catch2/catch.hpp>

#include "analysis/metrics.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "tests/simgrid/fixtures.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using namespace cnnpar::test;

namespace {

constexpr double kHandTolerance = 1e-6;  // relative: both engines against the hand formula
constexpr double kAgreement = 0.02;      // the engines within 2 % on whole strategies

/** Iteration end (latest mark `iteration`) of `trace`. */
double mark_s(const Trace& trace, int iteration = 0) {
  double latest = 0;
  for (const RankTrace& rank : trace.ranks)
    for (const MarkRecord& mark : rank.marks)
      if (mark.iteration == iteration) latest = std::max(latest, mark.time_s);
  return latest;
}

/** The schedule on both engines: {analytic, simgrid}. */
std::pair<Trace, Trace> both(const Schedule& schedule, const Platform& platform) {
  const std::vector<Trace> simulated = simulate_many({{&schedule, &platform}}, SimgridOptions{});
  return {make_analytic_engine()->run(schedule, platform), simulated.at(0)};
}

Op compute_s(double seconds) {
  // crossbar(): peak 1e12 FLOP/s at efficiency 0.5 → 5e11 FLOP/s; memory never the bound.
  return Op::compute_op("conv1.fwd", 0, Phase::forward, KernelClass::gemm, seconds * 5e11, 0.0, 1);
}

}  // namespace

TEST_CASE("message factors price each round by its size in both engines", "[simgrid][mechanisms]") {
  // 4-rank ring allreduce of n = 8e6 B: 2(P−1) = 6 rounds of n/P = 2e6 B. α = 2 µs + 1 µs, β = 1.25e9 B/s.
  // Pieces: below 1e6 B factors 1; from 1e6 B latency ×2, bandwidth ×0.5.
  //   with factors: 6 · (2·3e-6 + 2e6 / (0.5·1.25e9)) = 6 · 3.206e-3 = 0.019236 s
  //   a 4e5 B allreduce (rounds of 1e5 B, first piece): 6 · (3e-6 + 1e5/1.25e9) = 4.98e-4 s
  Platform platform = crossbar(4);
  platform.network.message_factors = {{0, 1, 1}, {1e6, 2, 0.5}};
  const auto [large_analytic, large_simgrid] = both(single_collective(4, CollectiveKind::allreduce, 8e6), platform);
  CHECK(mark_s(large_analytic) == Approx(0.019236).epsilon(kHandTolerance));
  CHECK(mark_s(large_simgrid) == Approx(0.019236).epsilon(kHandTolerance));
  const auto [small_analytic, small_simgrid] = both(single_collective(4, CollectiveKind::allreduce, 4e5), platform);
  CHECK(mark_s(small_analytic) == Approx(4.98e-4).epsilon(kHandTolerance));
  CHECK(mark_s(small_simgrid) == Approx(4.98e-4).epsilon(kHandTolerance));
}

TEST_CASE("reduction arithmetic costs received bytes over the reduction rate", "[simgrid][mechanisms]") {
  // The same 8e6 B ring allreduce without factors: 6 · (3e-6 + 2e6/1.25e9) = 0.009618 s. Its
  // reduce-scatter half (P−1 = 3 rounds) adds each received 2e6 B block at 1e9 B/s: 3 · 2e-3 = 6e-3 s.
  // Total 0.015618 s. The allgather half copies: no reduction cost.
  Platform platform = crossbar(4);
  platform.network.reduction_rate_Bps = 1e9;
  const auto [analytic, simgrid] = both(single_collective(4, CollectiveKind::allreduce, 8e6), platform);
  CHECK(mark_s(analytic) == Approx(0.015618).epsilon(kHandTolerance));
  CHECK(mark_s(simgrid) == Approx(0.015618).epsilon(kHandTolerance));
}

TEST_CASE("a kind's size factor prices its steps as larger messages in both engines", "[simgrid][mechanisms]") {
  // The 8e6 B ring allreduce with an allreduce size factor of 1.5: each of the 6 rounds sends
  // 1.5 · 2e6 B, 6 · (3e-6 + 3e6/1.25e9) = 0.014418 s; the 3 reducing rounds still add their
  // real 2e6 B at 1e9 B/s, 6e-3 s. Total 0.020418 s.
  Platform platform = crossbar(4);
  platform.network.reduction_rate_Bps = 1e9;
  platform.network.kind_size_factors["allreduce"] = {{1e6, 1.5}};
  platform.network.kind_size_factors["send"] = {{1e6, 0.5}};
  const auto [analytic, simgrid] = both(single_collective(4, CollectiveKind::allreduce, 8e6), platform);
  CHECK(mark_s(analytic) == Approx(0.020418).epsilon(kHandTolerance));
  CHECK(mark_s(simgrid) == Approx(0.020418).epsilon(kHandTolerance));
  // A send of 8e6 B with the send factor 0.5: 3e-6 + 4e6/1.25e9 = 3.203e-3 s; a bcast has no
  // factor: its binomial tree of 2 rounds of 8e6 B is 2 · (3e-6 + 6.4e-3) = 0.012806 s.
  const auto [send_analytic, send_simgrid] = both(single_collective(2, CollectiveKind::send, 8e6, 0), platform);
  CHECK(latest_end_s(send_analytic, 0) == Approx(3.203e-3).epsilon(kHandTolerance));
  CHECK(latest_end_s(send_simgrid, 0) == Approx(3.203e-3).epsilon(kHandTolerance));
  const auto [bcast_analytic, bcast_simgrid] = both(single_collective(4, CollectiveKind::bcast, 8e6, 0), platform);
  CHECK(mark_s(bcast_analytic) == Approx(0.012806).epsilon(kHandTolerance));
  CHECK(mark_s(bcast_simgrid) == Approx(0.012806).epsilon(kHandTolerance));
}

TEST_CASE("a kind's step overhead starts every step later in both engines", "[simgrid][mechanisms]") {
  // The 8e6 B ring allreduce on 4 ranks with an allreduce step overhead of 50 µs: each of its
  // 6 rounds is 50e-6 + 3e-6 + 2e6/1.25e9 s, 6 · 1.653e-3 = 9.918e-3 s (9.618e-3 without).
  Platform platform = crossbar(4);
  platform.network.kind_size_factors["allreduce"] = {{.bytes = 1e6, .factor = 1, .step_overhead_s = 50e-6}};
  platform.network.kind_size_factors["send"] = {{.bytes = 1e3, .factor = 1, .step_overhead_s = 20e-6}};
  const auto [analytic, simgrid] = both(single_collective(4, CollectiveKind::allreduce, 8e6), platform);
  CHECK(mark_s(analytic) == Approx(9.918e-3).epsilon(kHandTolerance));
  CHECK(mark_s(simgrid) == Approx(9.918e-3).epsilon(kHandTolerance));
  // A send of 8e6 B: 20e-6 + 3e-6 + 8e6/1.25e9 = 6.423e-3 s.
  const auto [send_analytic, send_simgrid] = both(single_collective(2, CollectiveKind::send, 8e6, 0), platform);
  CHECK(latest_end_s(send_analytic, 0) == Approx(6.423e-3).epsilon(kHandTolerance));
  CHECK(latest_end_s(send_simgrid, 0) == Approx(6.423e-3).epsilon(kHandTolerance));
  // A bcast of 8e6 B has no overhead: its binomial tree of 2 rounds is 2 · (3e-6 + 6.4e-3) = 0.012806 s.
  const auto [bcast_analytic, bcast_simgrid] = both(single_collective(4, CollectiveKind::bcast, 8e6, 0), platform);
  CHECK(mark_s(bcast_analytic) == Approx(0.012806).epsilon(kHandTolerance));
  CHECK(mark_s(bcast_simgrid) == Approx(0.012806).epsilon(kHandTolerance));
}

TEST_CASE("iteration overhead is paid once at the start of every iteration", "[simgrid][mechanisms]") {
  // 2 ranks, 2 iterations of 2e-3 s compute, overhead 1e-3 s: marks at 3e-3 and 6e-3 s.
  Schedule schedule = empty_schedule(2);
  schedule.iterations = 2;
  for (Program& program : schedule.programs) program.ops = {compute_s(2e-3), Op::mark_op(0), compute_s(2e-3), Op::mark_op(1)};
  Platform platform = crossbar(2);
  platform.iteration_overhead_s = 1e-3;
  const auto [analytic, simgrid] = both(schedule, platform);
  for (const Trace* trace : {&analytic, &simgrid}) {
    CHECK(mark_s(*trace, 0) == Approx(3e-3).epsilon(kHandTolerance));
    CHECK(mark_s(*trace, 1) == Approx(6e-3).epsilon(kHandTolerance));
  }
}

TEST_CASE("the input time grows with the images each rank reads", "[simgrid][mechanisms]") {
  // overhead a = 1e-3 s + b = 2e-4 s per image read. Rank 0's forward op takes 3 images, rank 1's
  // 1 (system/op_time.hpp: input_images): per iteration 2e-3 s of compute plus 1.6e-3 s on rank 0,
  // 1.2e-3 s on rank 1. No collective joins them: rank 0 marks at 3.6e-3 and 7.2e-3 s, rank 1
  // at 3.2e-3 and 6.4e-3 s.
  const auto images_op = [](std::int64_t images) {
    return Op::compute_op("conv1.fwd", 0, Phase::forward, KernelClass::gemm, 2e-3 * 5e11, 0.0, images);
  };
  Schedule schedule = empty_schedule(2);
  schedule.iterations = 2;
  schedule.global_batch = 4;
  for (int r = 0; r < 2; ++r) {
    const Op op = images_op(r == 0 ? 3 : 1);
    schedule.programs[std::size_t(r)].ops = {op, Op::mark_op(0), op, Op::mark_op(1)};
  }
  Platform platform = crossbar(2);
  platform.iteration_overhead_s = 1e-3;
  platform.input_per_image_s = 2e-4;
  const auto [analytic, simgrid] = both(schedule, platform);
  for (const Trace* trace : {&analytic, &simgrid}) {
    CHECK(trace->ranks[0].marks.at(0).time_s == Approx(3.6e-3).epsilon(kHandTolerance));
    CHECK(trace->ranks[0].marks.at(1).time_s == Approx(7.2e-3).epsilon(kHandTolerance));
    CHECK(trace->ranks[1].marks.at(0).time_s == Approx(3.2e-3).epsilon(kHandTolerance));
    CHECK(trace->ranks[1].marks.at(1).time_s == Approx(6.4e-3).epsilon(kHandTolerance));
  }
}

TEST_CASE("a collective advances at the busy fraction while a member computes", "[simgrid][mechanisms]") {
  // 2 ranks, latency 0: a ring allreduce of 2.5e6 B is 2 rounds of 1.25e6 B at 1.25e9 B/s: D = 2e-3 s.
  // Posted, then 1e-3 s of compute, then a wait. At fraction f = 0.25 it moves 0.25·1e-3 s of its
  // work while the ranks compute and the remaining 1.75e-3 s at full speed: it ends at 2.75e-3 s.
  Schedule schedule = empty_schedule(2);
  const int id = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  for (Program& program : schedule.programs) program.ops = {Op::post_op(id), compute_s(1e-3), Op::wait_op(id), Op::mark_op(0)};
  Platform platform = crossbar(2, 0, 0);
  const auto [full_analytic, full_simgrid] = both(schedule, platform);
  CHECK(mark_s(full_analytic) == Approx(2e-3).epsilon(kHandTolerance));  // f = 1: hidden from t = 0
  CHECK(mark_s(full_simgrid) == Approx(2e-3).epsilon(kHandTolerance));
  platform.network.busy_bandwidth_fraction = 0.25;
  const auto [analytic, simgrid] = both(schedule, platform);
  CHECK(mark_s(analytic) == Approx(2.75e-3).epsilon(kHandTolerance));
  CHECK(mark_s(simgrid) == Approx(2.75e-3).epsilon(kHandTolerance));
}

TEST_CASE("a collective's latency also advances at the busy fraction while a member computes",
          "[simgrid][mechanisms]") {
  // 2 ranks, α = 2e-4 s, a ring allreduce of 2.5e6 B: 2 rounds of 2e-4 + 1e-3 s, D = 2.4e-3 s.
  // Posted, then 1e-3 s of compute, then a wait. At f = 0.7 it moves 0.7·1e-3 s of its work
  // while the ranks compute and the remaining 1.7e-3 s at full speed: it ends at 2.7e-3 s
  // (2.64e-3 s if only the bandwidth term slowed: round 1's latency at full speed).
  Schedule schedule = empty_schedule(2);
  const int id = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  for (Program& program : schedule.programs) program.ops = {Op::post_op(id), compute_s(1e-3), Op::wait_op(id), Op::mark_op(0)};
  Platform platform = crossbar(2, 2e-4, 0);
  platform.network.busy_bandwidth_fraction = 0.7;
  const auto [analytic, simgrid] = both(schedule, platform);
  for (const Trace* trace : {&analytic, &simgrid}) {
    INFO(trace->engine);
    CHECK(mark_s(*trace) == Approx(2.7e-3).epsilon(kHandTolerance));
  }
  // A step overhead of 1e-4 s is start-up too: rounds of 1.3e-3 s, D = 2.6e-3 s; 0.7e-3 s of
  // it under compute, 1.9e-3 s after: it ends at 2.9e-3 s.
  platform.network.kind_size_factors["allreduce"] = {{.bytes = 1e6, .factor = 1, .step_overhead_s = 1e-4}};
  const auto [overhead_analytic, overhead_simgrid] = both(schedule, platform);
  for (const Trace* trace : {&overhead_analytic, &overhead_simgrid}) {
    INFO(trace->engine);
    CHECK(mark_s(*trace) == Approx(2.9e-3).epsilon(kHandTolerance));
  }
}

TEST_CASE("a collective posted to an idle progress thread waits for a core while its rank computes",
          "[simgrid][mechanisms]") {
  // 2 ranks, latency 0: each 2.5e6 B ring allreduce takes D = 2e-3 s. The program:
  //   post a, compute 1e-3, compute 1e-3, post b, compute 1.5e-3, wait a, wait b,
  //   post c, compute 1e-3, wait c, post d, wait d, mark.
  // a and c (thread idle) start after min(the next op's 1e-3 s, S); b, posted while a is in
  // flight (thread awake), starts when a ends, before its next op would; d, posted right before
  // its wait, at once.
  //   S = 0:      a 0..2e-3,        b ..4e-3,   c 4e-3..6e-3,   d ..8e-3:   mark 8e-3
  //   S = 0.5e-3: a 0.5e-3..2.5e-3, b ..4.5e-3, c 5e-3..7e-3,   d ..9e-3:   mark 9e-3
  //   S = 4e-3:   a 1e-3..3e-3,     b ..5e-3,   c 6e-3..8e-3,   d ..10e-3:  mark 10e-3
  Schedule schedule = empty_schedule(2);
  const int a = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  const int b = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  const int c = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  const int d = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  for (Program& program : schedule.programs)
    program.ops = {Op::post_op(a), compute_s(1e-3), compute_s(1e-3), Op::post_op(b), compute_s(1.5e-3),
                   Op::wait_op(a),  Op::wait_op(b),  Op::post_op(c),   compute_s(1e-3), Op::wait_op(c),
                   Op::post_op(d),  Op::wait_op(d),  Op::mark_op(0)};
  struct Case {
    double wait_max_s, a_start_s, c_start_s;
  };
  for (const Case& expected : {Case{0, 0, 4e-3}, Case{0.5e-3, 0.5e-3, 5e-3}, Case{4e-3, 1e-3, 6e-3}}) {
    Platform platform = crossbar(2, 0, 0);
    platform.comm_start_wait_max_s = expected.wait_max_s;
    const auto [analytic, simgrid] = both(schedule, platform);
    for (const Trace* trace : {&analytic, &simgrid}) {
      INFO("comm_start_wait_max " << expected.wait_max_s << " s, " << trace->engine);
      for (const RankTrace& rank : trace->ranks) {
        CHECK(rank.collectives.at(0).comm_start_s == Approx(expected.a_start_s).margin(1e-12));
        CHECK(rank.collectives.at(1).comm_start_s == Approx(expected.a_start_s + 2e-3).epsilon(kHandTolerance));
        CHECK(rank.collectives.at(2).comm_start_s == Approx(expected.c_start_s).epsilon(kHandTolerance));
        CHECK(rank.collectives.at(3).comm_start_s == Approx(expected.c_start_s + 2e-3).epsilon(kHandTolerance));
      }
      CHECK(mark_s(*trace) == Approx(expected.c_start_s + 4e-3).epsilon(kHandTolerance));
    }
  }
}

TEST_CASE("concurrent collectives share the injection link", "[simgrid][mechanisms]") {
  // 2 ranks run two 2.5e6 B allreduces at once (collective_concurrency 2), each D = 2e-3 s alone
  // (latency 0). Sharing each rank's link, each gets half the bandwidth: both end at 4e-3 s.
  // SimGrid shares links by itself; the analytic engine does with injection_contention.
  Schedule schedule = empty_schedule(2);
  const int a = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  const int b = add(schedule, CollectiveKind::allreduce, 2.5e6, all_ranks(2));
  for (Program& program : schedule.programs)
    program.ops = {Op::post_op(a), Op::post_op(b), Op::wait_op(a), Op::wait_op(b), Op::mark_op(0)};
  Platform platform = crossbar(2, 0, 0);
  platform.network.collective_concurrency = 2;
  CHECK(mark_s(make_analytic_engine()->run(schedule, platform)) == Approx(2e-3).epsilon(kHandTolerance));
  platform.network.injection_contention = true;
  const auto [analytic, simgrid] = both(schedule, platform);
  CHECK(mark_s(analytic) == Approx(4e-3).epsilon(kHandTolerance));
  CHECK(mark_s(simgrid) == Approx(4e-3).epsilon(kHandTolerance));
}

TEST_CASE("a link's token bucket passes an idle link's burst at its peak rate in both engines",
          "[simgrid][mechanisms]") {
  // 2 ranks, β = 1.25e9 B/s, α = 3 µs, buckets of B = 1e6 B on every link, bursts at 5e9 B/s.
  // Two 4e6 B ring allreduces (2 rounds of 2e6 B each way), 4e-4 s of compute between them.
  //   first, buckets full: round 1 passes 1e6 B, 3e-6 + 1e6/1.25e9 + 1e6/5e9 = 1.003e-3 s;
  //          round 2 at the rate, 3e-6 + 2e6/1.25e9 = 1.603e-3 s: ends at 2.606e-3 s, buckets empty;
  //   second at 3.006e-3 s, the buckets refilled for 4e-4 s: 5e5 B pass,
  //          3e-6 + 1.5e6/1.25e9 + 5e5/5e9 + 1.603e-3 = 2.906e-3 s: the iteration ends at 5.912e-3 s
  //   (6.812e-3 s without buckets).
  Schedule schedule = empty_schedule(2);
  const int first = add(schedule, CollectiveKind::allreduce, 4e6, all_ranks(2));
  const int second = add(schedule, CollectiveKind::allreduce, 4e6, all_ranks(2));
  for (Program& program : schedule.programs)
    program.ops = {Op::post_op(first), Op::wait_op(first), compute_s(4e-4), Op::post_op(second), Op::wait_op(second),
                   Op::mark_op(0)};
  Platform platform = crossbar(2);
  CHECK(mark_s(make_analytic_engine()->run(schedule, platform)) == Approx(6.812e-3).epsilon(kHandTolerance));
  platform.network.link_burst_bytes = 1e6;
  platform.network.link_peak_bandwidth_Bps = 5e9;
  const auto [analytic, simgrid] = both(schedule, platform);
  for (const Trace* trace : {&analytic, &simgrid}) {
    INFO(trace->engine);
    CHECK(latest_end_s(*trace, first) == Approx(2.606e-3).epsilon(kHandTolerance));
    CHECK(mark_s(*trace) == Approx(5.912e-3).epsilon(kHandTolerance));
  }
}

TEST_CASE("a collective's links do not refill between its steps in either engine", "[simgrid][mechanisms]") {
  // 2 ranks, β = 1.25e9 B/s, α = 3 µs, buckets of B = 1e6 B, bursts at 5e9 B/s; one 4e6 B ring
  // allreduce whose received halves are added at 1e9 B/s (2e6 / 1e9 = 2e-3 s between the rounds).
  //   round 1, buckets full: 3e-6 + 1e6/1.25e9 + 1e6/5e9 = 1.003e-3 s; the addition to 3.003e-3 s;
  //   round 2: the links stayed in use, nothing refilled: 3e-6 + 2e6/1.25e9 = 1.603e-3 s,
  //   the allreduce ends at 4.606e-3 s (4.006e-3 s if the idle links refilled during the addition).
  Schedule schedule = empty_schedule(2);
  const int allreduce = add(schedule, CollectiveKind::allreduce, 4e6, all_ranks(2));
  for (Program& program : schedule.programs)
    program.ops = {Op::post_op(allreduce), Op::wait_op(allreduce), Op::mark_op(0)};
  Platform platform = crossbar(2);
  platform.network.link_burst_bytes = 1e6;
  platform.network.link_peak_bandwidth_Bps = 5e9;
  platform.network.reduction_rate_Bps = 1e9;
  const auto [analytic, simgrid] = both(schedule, platform);
  for (const Trace* trace : {&analytic, &simgrid}) {
    INFO(trace->engine);
    CHECK(latest_end_s(*trace, allreduce) == Approx(4.606e-3).epsilon(kHandTolerance));
  }
}

TEST_CASE("dp and lee with every mechanism on agree across engines", "[simgrid][mechanisms]") {
  // No closed form for a whole network: the engines must agree within 2 %.
  const Network network = load_network("vgg-a-32");
  for (const std::string strategy : {"dp", "lee"}) {
    for (int ranks : {2, 4, 8}) {
      Platform platform = crossbar(ranks);
      platform.network.message_factors = {{0, 1.5, 0.6}, {65536, 1.0, 0.9}};
      platform.network.reduction_rate_Bps = 5e9;
      platform.iteration_overhead_s = 2e-4;
      platform.nodes.call_overhead_s = 1e-5;
      // 64/P images a rank: image loops on 8 to 32 of 32 cores, each core streaming 2e10 B/s.
      platform.nodes.cores = 32;
      platform.nodes.image_parallel_kernels = true;
      platform.nodes.core_bandwidth_Bps = 2e10;
      StrategyOptions options;
      options.name = strategy;
      options.global_batch = 64;
      options.ranks = ranks;
      options.iterations = 2;
      options.warmup_iterations = 1;
      const Schedule schedule = build_schedule(network, platform, options);
      const auto [analytic, simgrid] = both(schedule, platform);
      const double a = compute_metrics(analytic).iteration_s, s = compute_metrics(simgrid).iteration_s;
      INFO(strategy << " P=" << ranks << " analytic " << a << " s, simgrid " << s << " s");
      CHECK(std::abs(a - s) / s <= kAgreement);
    }
  }
}
