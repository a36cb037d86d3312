// The analytic replay on hand-built schedules whose times follow from the closed forms.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/analytic/collective_cost.hpp"
#include "model/scenarios.hpp"
#include "tests/sim/schedule_cases.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using cnnpar::analytic::analytic_replay;
using cnnpar::analytic::ReplayMode;

namespace {

constexpr double kTol = 1e-9;  // relative tolerance on replayed times

// Peak 1e12 FLOP/s at efficiency 0.5 → 5e11 FLOP/s effective; memory never the bound.
Platform test_platform(int nodes = 8) {
  Platform p;
  p.name = "test";
  p.nodes.count = nodes;
  p.nodes.peak_flops = 1e12;
  p.nodes.default_efficiency = 0.5;
  p.nodes.memory_bandwidth_Bps = 1e15;
  p.network.bandwidth_Bps = 1e9;
  p.network.latency_s = 1e-6;
  p.network.overhead_s = 0.5e-6;
  p.resolve_speed_factors();
  return p;
}

Op compute(double flops, const std::string& label = "conv1.fwd", int layer = 0, Phase phase = Phase::forward) {
  return Op::compute_op(label, layer, phase, KernelClass::gemm, flops, 0.0, 1);
}

Schedule empty_schedule(int ranks, int iterations = 1, int warmup = 0) {
  Schedule s;
  s.strategy = "hand";
  s.network = "none";
  s.global_batch = ranks;
  s.iterations = iterations;
  s.warmup_iterations = warmup;
  s.programs.resize(std::size_t(ranks));
  for (int r = 0; r < ranks; ++r) s.programs[std::size_t(r)].rank = r;
  return s;
}

int add_allreduce(Schedule& s, double bytes, int iteration = 0, std::vector<int> group = {}) {
  Collective c;
  c.kind = CollectiveKind::allreduce;
  c.bytes = bytes;
  if (group.empty())
    for (int r = 0; r < s.ranks(); ++r) group.push_back(r);
  c.group = std::move(group);
  c.label = "allreduce " + std::to_string(s.collectives.size());
  c.iteration = iteration;
  return s.add_collective(c);
}

}  // namespace

TEST_CASE("one layer: compute then a blocking ring allreduce", "[analytic]") {
  // 4 ranks, each: compute 1e9 FLOP at 5e11 FLOP/s = 2e-3 s; allreduce of 8e6 B (ring, α = 1.5e-6 s,
  // β = 1e9 B/s): 2·3·1.5e-6 + 2·(3/4)·8e6/1e9 = 0.012009 s. Iteration = 2e-3 + 0.012009 = 0.014009 s.
  Schedule s = empty_schedule(4);
  const int c = add_allreduce(s, 8e6);
  for (auto& program : s.programs) {
    program.ops.push_back(compute(1e9));
    program.ops.push_back(Op::post_op(c));
    program.ops.push_back(Op::wait_op(c));
    program.ops.push_back(Op::mark_op(0));
  }
  const Platform p = test_platform();
  for (ReplayMode mode : {ReplayMode::automatic, ReplayMode::time_ordered}) {
    const Trace t = analytic_replay(s, p, mode);
    REQUIRE(t.ranks.size() == 4);
    for (const RankTrace& rank : t.ranks) {
      REQUIRE(rank.marks.size() == 1);
      CHECK(rank.marks[0].time_s == Approx(0.014009).epsilon(kTol));
      REQUIRE(rank.collectives.size() == 1);
      CHECK(rank.collectives[0].comm_start_s == Approx(2e-3).epsilon(kTol));
      CHECK(rank.collectives[0].comm_end_s == Approx(0.014009).epsilon(kTol));
    }
    const TraceMetrics m = compute_metrics(t);
    CHECK(m.iteration_s == Approx(0.014009).epsilon(kTol));
    CHECK(m.compute_max_s == Approx(2e-3).epsilon(kTol));
    CHECK(m.comm_s == Approx(0.012009).epsilon(kTol));
    CHECK(m.exposed_comm_s == Approx(0.012009).epsilon(kTol));  // blocking: nothing hidden
    CHECK(m.overlap_ratio_percent == Approx(0.0).margin(1e-9));
  }
  CHECK(make_analytic_engine()->name() == "analytic");
}

TEST_CASE("communication hidden behind compute gives R = 100", "[analytic]") {
  // 2 ranks: post allreduce of 2e6 B (ring: 2·1·1.5e-6 + 2·(1/2)·2e6/1e9 = 0.002003 s), compute 5e9 FLOP
  // (0.01 s), wait, update 1e8 FLOP (2e-4 s). The wait finds it done: iteration 0.0102 s,
  // T_c = 0.002003 s, T_b = 0, R = 100.
  Schedule s = empty_schedule(2);
  const int c = add_allreduce(s, 2e6);
  for (auto& program : s.programs) {
    program.ops = {Op::post_op(c), compute(5e9), Op::wait_op(c), compute(1e8, "conv1.upd", 0, Phase::update),
                   Op::mark_op(0)};
  }
  const TraceMetrics m = compute_metrics(analytic_replay(s, test_platform()));
  CHECK(m.iteration_s == Approx(0.0102).epsilon(kTol));
  CHECK(m.comm_s == Approx(0.002003).epsilon(kTol));
  CHECK(m.exposed_comm_s == 0.0);
  CHECK(m.overlap_ratio_percent == Approx(100.0).epsilon(kTol));
}

TEST_CASE("a collective starts when its last member joins", "[analytic]") {
  // Rank 1 runs at half speed: its compute of 1e9 FLOP takes 4e-3 s, rank 0's 2e-3 s. The allreduce
  // (2 ranks, 2e6 B: 0.002003 s) starts at 4e-3 and ends at 0.006003 on both ranks. Rank 0 joined at 2e-3,
  // so its T_c = 0.004003 s; its wait began at 2e-3, so T_b = 0.006003 − max(2e-3, 2e-3) = 0.004003 s.
  Schedule s = empty_schedule(2);
  const int c = add_allreduce(s, 2e6);
  for (auto& program : s.programs) program.ops = {compute(1e9), Op::post_op(c), Op::wait_op(c), Op::mark_op(0)};
  Platform p = test_platform(2);
  p.nodes.speed_factors = {1.0, 0.5};
  p.resolve_speed_factors();
  const Trace t = analytic_replay(s, p);
  const CollectiveRecord& r0 = t.ranks[0].collectives[0];
  const CollectiveRecord& r1 = t.ranks[1].collectives[0];
  CHECK(r0.posted_s == Approx(2e-3).epsilon(kTol));
  CHECK(r0.comm_start_s == Approx(2e-3).epsilon(kTol));
  CHECK(r1.comm_start_s == Approx(4e-3).epsilon(kTol));
  CHECK(r0.comm_end_s == Approx(0.006003).epsilon(kTol));
  CHECK(r1.comm_end_s == Approx(0.006003).epsilon(kTol));
  CHECK(exposed_comm_s(r0) == Approx(0.004003).epsilon(kTol));
  const TraceMetrics m = compute_metrics(t);
  CHECK(m.load_balance == Approx(0.75).epsilon(kTol));  // mean(2e-3, 4e-3) / 4e-3
  CHECK(m.sync_wait_s == Approx(2e-3).epsilon(kTol));   // BPT-CNN Eq. 8: (4e-3 − 2e-3) + 0
}

TEST_CASE("compute slows down while communication progresses", "[analytic]") {
  // 2 ranks: post allreduce T = 0.002003 s (2e6 B), compute C = 0.01 s, wait. With slow-down s = 1 compute
  // runs at half speed during [0, T]: it finishes at T + (C − T/2) = C + T/2 = 0.0110015 s.
  Schedule s = empty_schedule(2);
  const int c = add_allreduce(s, 2e6);
  for (auto& program : s.programs) program.ops = {Op::post_op(c), compute(5e9), Op::wait_op(c), Op::mark_op(0)};
  Platform p = test_platform(2);
  p.comm_compute_slowdown = 1.0;
  const Trace t = analytic_replay(s, p);
  CHECK(t.ranks[0].compute[0].end_s == Approx(0.0110015).epsilon(kTol));
  CHECK(t.ranks[0].marks[0].time_s == Approx(0.0110015).epsilon(kTol));
}

TEST_CASE("collective concurrency runs posted collectives side by side", "[analytic]") {
  // 2 ranks post A (2e6 B, 0.002003 s) and B (4e6 B: 2·1.5e-6 + 4e6/1e9 = 0.004003 s), then wait both.
  // Concurrency 1: B starts when A ends → 0.006006 s. Concurrency 2: both at once → 0.004003 s.
  Schedule s = empty_schedule(2);
  const int a = add_allreduce(s, 2e6);
  const int b = add_allreduce(s, 4e6);
  for (auto& program : s.programs)
    program.ops = {Op::post_op(a), Op::post_op(b), Op::wait_op(a), Op::wait_op(b), Op::mark_op(0)};
  Platform p = test_platform(2);
  CHECK(analytic_replay(s, p).ranks[0].marks[0].time_s == Approx(0.006006).epsilon(kTol));
  p.network.collective_concurrency = 2;
  CHECK(analytic_replay(s, p).ranks[0].marks[0].time_s == Approx(0.004003).epsilon(kTol));
}

TEST_CASE("ranks of different node kinds are never replayed as one", "[analytic]") {
  // 4 ranks with one program: 1e9 FLOP, then an allreduce of 8e6 B. Ranks 0-1 are a 100 Gf kind
  // (default efficiency 0.5: 1e9 / 5e10 = 0.02 s), ranks 2-3 the nominal 1 Tf (2e-3 s). The
  // allreduce starts when the slow kind joins, at 0.02 s, and takes 0.012009 s (as above), so
  // every rank ends at 0.032009 s; compute is 0.02 s on ranks 0-1 and 2e-3 s on ranks 2-3.
  Schedule s = empty_schedule(4);
  const int c = add_allreduce(s, 8e6);
  for (auto& program : s.programs) program.ops = {compute(1e9), Op::post_op(c), Op::wait_op(c), Op::mark_op(0)};
  Platform p = test_platform(4);
  NodeKind slow;
  slow.name = "slow";
  slow.count = 2;
  slow.host = p.nodes;
  slow.host.peak_flops = 1e11;
  NodeKind nominal;
  nominal.name = "nominal";
  nominal.count = 2;
  nominal.host = p.nodes;
  p.nodes.kinds = {slow, nominal};
  for (ReplayMode mode : {ReplayMode::automatic, ReplayMode::time_ordered}) {
    const Trace t = analytic_replay(s, p, mode);
    for (int r = 0; r < 4; ++r) {
      const RankTrace& rank = t.ranks[std::size_t(r)];
      CAPTURE(r);
      CHECK(rank.compute.at(0).end_s == Approx(r < 2 ? 0.02 : 2e-3).epsilon(kTol));
      CHECK(rank.marks.at(0).time_s == Approx(0.032009).epsilon(kTol));
    }
  }
}

TEST_CASE("calibrated op times override the roofline", "[analytic]") {
  // measured_op_s["conv1.fwd"] = 0.5 s wins over the roofline 2e-3 s; a gemm rate of 1e11 FLOP/s gives
  // 1e9 / 1e11 = 0.01 s for an op without its own entry.
  Schedule s = empty_schedule(1);
  GemmShape shape{10, 10, 10};
  s.programs[0].ops = {compute(1e9, "conv1.fwd"),
                       Op::compute_op("conv2.fwd", 1, Phase::forward, KernelClass::gemm, 1e9, 0, 1, shape),
                       Op::mark_op(0)};
  Platform p = test_platform(1);
  p.measured_op_s["conv1.fwd"] = 0.5;
  p.measured_gemm_flops[shape.to_string()] = 1e11;
  const Trace t = analytic_replay(s, p);
  CHECK(t.ranks[0].compute[0].end_s == Approx(0.5).epsilon(kTol));
  CHECK(t.ranks[0].compute[1].end_s - t.ranks[0].compute[1].start_s == Approx(0.01).epsilon(kTol));
}

TEST_CASE("run-ahead replay equals the time-ordered replay on random schedules", "[analytic]") {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 40; ++trial) {
    const int ranks = 1 + int(rng() % 9);
    Schedule s = empty_schedule(ranks, 3, 1);
    Platform p = test_platform(ranks);
    p.nodes.speed_factors.clear();
    for (int r = 0; r < ranks; ++r) p.nodes.speed_factors.push_back(0.3 + 0.1 * double(rng() % 10));
    p.resolve_speed_factors();
    for (int it = 0; it < 3; ++it) {
      // Same collectives, in the same posting order on every rank, waits at random later points.
      const int count = 1 + int(rng() % 5);
      std::vector<int> ids;
      for (int k = 0; k < count; ++k) ids.push_back(add_allreduce(s, double(1 + rng() % 5000) * 1000.0, it));
      for (int r = 0; r < ranks; ++r) {
        auto& ops = s.programs[std::size_t(r)].ops;
        std::vector<int> pending;
        for (int id : ids) {
          ops.push_back(compute(double(1 + rng() % 100) * 1e7));
          ops.push_back(Op::post_op(id));
          pending.push_back(id);
          while (!pending.empty() && rng() % 2 == 0) {
            ops.push_back(Op::wait_op(pending.front()));
            pending.erase(pending.begin());
            ops.push_back(compute(double(1 + rng() % 100) * 1e7));
          }
        }
        for (int id : pending) ops.push_back(Op::wait_op(id));
        ops.push_back(Op::mark_op(it));
      }
    }
    const Trace fast = analytic_replay(s, p, ReplayMode::automatic);
    const Trace reference = analytic_replay(s, p, ReplayMode::time_ordered);
    for (int r = 0; r < ranks; ++r) {
      const RankTrace& a = fast.ranks[std::size_t(r)];
      const RankTrace& b = reference.ranks[std::size_t(r)];
      REQUIRE(a.compute.size() == b.compute.size());
      REQUIRE(a.collectives.size() == b.collectives.size());
      for (std::size_t i = 0; i < a.compute.size(); ++i) {
        CHECK(a.compute[i].start_s == Approx(b.compute[i].start_s).epsilon(1e-12));
        CHECK(a.compute[i].end_s == Approx(b.compute[i].end_s).epsilon(1e-12));
      }
      for (std::size_t i = 0; i < a.collectives.size(); ++i) {
        CHECK(a.collectives[i].comm_start_s == Approx(b.collectives[i].comm_start_s).epsilon(1e-12));
        CHECK(a.collectives[i].comm_end_s == Approx(b.collectives[i].comm_end_s).epsilon(1e-12));
        CHECK(a.collectives[i].wait_start_s == Approx(b.collectives[i].wait_start_s).epsilon(1e-12));
        CHECK(a.collectives[i].wait_end_s == Approx(b.collectives[i].wait_end_s).epsilon(1e-12));
      }
      for (std::size_t i = 0; i < a.marks.size(); ++i)
        CHECK(a.marks[i].time_s == Approx(b.marks[i].time_s).epsilon(1e-12));
    }
  }
}

TEST_CASE("collectives reached in different orders deadlock and are reported", "[analytic]") {
  // Rank 0 posts A then B, rank 1 posts B then A: with one collective at a time neither can start.
  Schedule s = empty_schedule(2);
  const int a = add_allreduce(s, 1e6);
  const int b = add_allreduce(s, 1e6);
  s.programs[0].ops = {Op::post_op(a), Op::post_op(b), Op::wait_op(a), Op::wait_op(b), Op::mark_op(0)};
  s.programs[1].ops = {Op::post_op(b), Op::post_op(a), Op::wait_op(b), Op::wait_op(a), Op::mark_op(0)};
  for (ReplayMode mode : {ReplayMode::automatic, ReplayMode::time_ordered}) {
    try {
      analytic_replay(s, test_platform(2), mode);
      FAIL("expected a deadlock");
    } catch (const InternalError& error) {
      const std::string what = error.what();
      CHECK(what.find("deadlock") != std::string::npos);
      CHECK(what.find("rank 0") != std::string::npos);
      CHECK(what.find("rank 1") != std::string::npos);
    }
  }
}

TEST_CASE("a wait without its post is an internal error", "[analytic]") {
  Schedule s = empty_schedule(1);
  const int a = add_allreduce(s, 1e6);
  s.programs[0].ops = {Op::wait_op(a), Op::mark_op(0)};
  CHECK_THROWS_AS(analytic_replay(s, test_platform(1)), InternalError);
}

TEST_CASE("more ranks than nodes is bad input", "[analytic]") {
  Schedule s = empty_schedule(4);
  for (auto& program : s.programs) program.ops = {Op::mark_op(0)};
  CHECK_THROWS_AS(analytic_replay(s, test_platform(2)), InputError);
}

TEST_CASE("metrics of the unexpanded rank classes equal the metrics of the expanded trace", "[analytic]") {
  // dp and lee with an uneven batch split into two classes; hybrid's model-parallel fc layers
  // into more. The class path must give exactly (bit for bit) what the full trace gives.
  const Network network = load_network("vgg-a");
  const Platform platform = load_platform("cori-haswell");
  for (const char* strategy : {"dp", "lee", "hybrid", "dp_layerwise"}) {
    for (int ranks : {2, 7, 13}) {
      const Schedule schedule = test::uneven_schedule(network, platform, strategy, ranks);
      ClassedTrace classed = analytic::analytic_replay_classed(schedule, platform);
      CAPTURE(strategy, ranks);
      if (std::string(strategy) == "dp") CHECK_FALSE(classed.representative_of.empty());
      const std::string from_classes = to_json(compute_metrics(classed)).dump();
      const Trace expanded = std::move(classed).expand(schedule);
      CHECK(from_classes == to_json(compute_metrics(expanded)).dump());
      CHECK(to_json(expanded).dump() == to_json(analytic_replay(schedule, platform)).dump());
    }
  }
}

TEST_CASE("jobs sharing a replay plan through a memo summarise as jobs that plan alone", "[analytic]") {
  // A sweep over link rates: one schedule, platforms that differ in the network's rates only
  // (what ScheduleMemo allows). The memo's shared plan and the label-free timing trace of
  // summarize_classed must give, bit for bit, the metrics of a full trace replayed alone.
  const Network network = load_network("vgg-a");
  const Platform base = load_platform("cori-haswell");
  std::vector<Platform> platforms;
  for (double bandwidth_Bps : {1.25e8, 1.25e9, 8e9}) {
    Platform platform = base;
    platform.network.bandwidth_Bps = bandwidth_Bps;
    platform.network.latency_s = 1e-6 * bandwidth_Bps / 1e9;
    platforms.push_back(platform);
  }
  const MetricsDetail summary_detail{.per_collective = false, .per_layer = false};
  for (const char* strategy : {"dp", "lee", "hybrid"}) {
    CAPTURE(strategy);
    const auto schedule =
        std::make_shared<const Schedule>(test::uneven_schedule(network, base, strategy, 7));
    const auto memo = std::make_shared<ScheduleMemo>(int(platforms.size()));
    std::vector<EngineJob> shared, alone;
    std::size_t labelled_records = 0;
    for (const Platform& platform : platforms) {
      shared.push_back({.schedule = [schedule] { return schedule; },
                        .platform = &platform,
                        .summarize = [&](const Trace& t) { return to_json(compute_metrics(t, summary_detail)); },
                        .summarize_classed =
                            [&](const ClassedTrace& t) {
                              for (const RankTrace& rank : t.trace.ranks) {
                                for (const ComputeRecord& r : rank.compute) labelled_records += !r.label.empty();
                                for (const CollectiveRecord& r : rank.collectives) labelled_records += !r.label.empty();
                              }
                              return to_json(compute_metrics(t, summary_detail));
                            },
                        .memo = memo});
      alone.push_back({.schedule = [schedule] { return schedule; },
                       .platform = &platform,
                       .summarize = [&](const Trace& t) { return to_json(compute_metrics(t, summary_detail)); }});
    }
    const std::vector<nlohmann::json> with_memo = make_analytic_engine()->run_all(shared, {.workers = 1});
    const std::vector<nlohmann::json> without = make_analytic_engine()->run_all(alone, {.workers = 1});
    CHECK(labelled_records == 0);  // TraceDetail::timing
    REQUIRE(with_memo.size() == without.size());
    for (std::size_t j = 0; j < with_memo.size(); ++j) CHECK(with_memo[j].dump() == without[j].dump());
    // The rates matter: the summaries differ between platforms.
    CHECK(without.front().dump() != without.back().dump());
  }
}
