// Acceptance properties of analytic predictions on real strategy schedules (VGG-A on Cori).
#include <limits>

#include <catch2/catch.hpp>

#include "analysis/metrics.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

namespace {

// Global batch for P ranks: 256 rounded up to a multiple of P (the builders need N % P == 0).
std::int64_t batch_for(int ranks) { return ((256 + ranks - 1) / ranks) * std::int64_t(ranks); }

TraceMetrics predict(const Network& network, const Platform& platform, StrategyOptions options) {
  const Schedule schedule = build_schedule(network, platform, options);
  return compute_metrics(make_analytic_engine()->run(schedule, platform));
}

StrategyOptions lee(int ranks, int k = 9, int f = 2) {
  StrategyOptions o;
  o.name = "lee";
  o.ranks = ranks;
  o.global_batch = batch_for(ranks);
  o.set("k", k).set("f", f);
  o.iterations = 3;
  o.warmup_iterations = 1;
  return o;
}

StrategyOptions dp(int ranks, const std::string& name = "dp") {
  StrategyOptions o;
  o.name = name;
  o.ranks = ranks;
  o.global_batch = batch_for(ranks);
  o.iterations = 3;
  o.warmup_iterations = 1;
  return o;
}

}  // namespace

TEST_CASE("predicted iteration time never rises when bandwidth rises", "[analytic][strategy]") {
  const Network network = load_network("vgg-a");
  Platform platform = load_platform("cori-haswell");
  for (int ranks : {2, 8, 32, 128}) {
    double previous_s = std::numeric_limits<double>::infinity();
    for (double gbps : {0.1, 0.5, 1.0, 2.0, 8.0, 32.0, 100.0}) {
      platform.network.bandwidth_Bps = gbps * 1e9;
      const double t = predict(network, platform, lee(ranks)).iteration_s;
      INFO("P = " << ranks << ", bandwidth = " << gbps << " GB/s");
      CHECK(t <= previous_s * (1 + 1e-12));
      previous_s = t;
    }
  }
}

TEST_CASE("lee with f = 0 is never slower than dp (no compute slow-down)", "[analytic][strategy]") {
  const Network network = load_network("vgg-a");
  Platform platform = load_platform("cori-haswell");
  platform.comm_compute_slowdown = 0.0;
  for (int ranks = 1; ranks <= 128; ++ranks) {
    const double lee_s = predict(network, platform, lee(ranks, 9, 0)).iteration_s;
    const double dp_s = predict(network, platform, dp(ranks)).iteration_s;
    INFO("P = " << ranks << ": lee " << lee_s << " s, dp " << dp_s << " s");
    CHECK(lee_s <= dp_s * (1 + 1e-9));
  }
}

TEST_CASE("R is 0 for dp and within [0, 100] for every strategy", "[analytic][strategy]") {
  const Network network = load_network("vgg-a");
  const Platform platform = load_platform("cori-haswell");
  for (int ranks : {1, 2, 3, 8, 24, 64, 128}) {
    INFO("P = " << ranks);
    const TraceMetrics d = predict(network, platform, dp(ranks));
    CHECK(d.overlap_ratio_percent == Approx(0.0).margin(1e-9));
    CHECK(d.exposed_comm_s == Approx(d.comm_s).epsilon(1e-12));
    for (const StrategyOptions& options :
         {lee(ranks), lee(ranks, 9, 0), lee(ranks, 3, 1), dp(ranks, "dp_layerwise"), dp(ranks, "dp_buckets")}) {
      const TraceMetrics m = predict(network, platform, options);
      INFO(options.name);
      CHECK(m.overlap_ratio_percent >= 0.0);
      CHECK(m.overlap_ratio_percent <= 100.0);
      for (const CollectiveTiming& c : m.collectives) {
        CHECK(c.exposed_s >= 0.0);
        CHECK(c.exposed_s <= c.comm_s * (1 + 1e-12) + 1e-15);
      }
    }
  }
}

TEST_CASE("speedup is 1 at one node and the trace covers every rank", "[analytic][strategy]") {
  const Network network = load_network("vgg-a");
  const Platform platform = load_platform("cori-haswell");
  const TraceMetrics one = predict(network, platform, lee(1));
  const TraceMetrics eight = predict(network, platform, lee(8));
  CHECK(speedup(one.iteration_s, one.iteration_s) == 1.0);
  CHECK(eight.ranks == 8);
  // Compute per rank shrinks with the sub-batch: 8 ranks do 1/8 of the conv work, so their compute
  // time is below the one-node time (fc replication keeps it above 1/8 of it).
  CHECK(eight.compute_max_s < one.compute_max_s);
  CHECK(eight.compute_max_s > one.compute_max_s / 8.0);
}

TEST_CASE("the fast replay paths equal the time-ordered replay on real schedules", "[analytic][strategy]") {
  // lee and dp schedules are symmetric (rank 0 is replayed alone) and use the run-ahead path;
  // the time-ordered replay of every rank is the reference. A heterogeneous platform breaks the
  // symmetry and exercises the run-ahead path on all ranks.
  const Network network = load_network("vgg-a");
  Platform platform = load_platform("cori-haswell");
  for (bool heterogeneous : {false, true}) {
    if (heterogeneous) {
      platform.nodes.speed_factors.assign(std::size_t(platform.nodes.count), 1.0);
      platform.nodes.speed_factors[3] = 0.7;
      platform.resolve_speed_factors();
    }
    StrategyOptions uneven = lee(6);
    uneven.global_batch = 256;  // 256 = 6·42 + 4: ranks 0-3 take 43 images, ranks 4-5 take 42
    uneven.uneven_batch = true;
    for (const StrategyOptions& options : {lee(8), lee(6, 3, 1), dp(8), dp(5, "dp_buckets"), uneven}) {
      const Schedule schedule = build_schedule(network, platform, options);
      const Trace fast = analytic::analytic_replay(schedule, platform, analytic::ReplayMode::automatic);
      const Trace reference = analytic::analytic_replay(schedule, platform, analytic::ReplayMode::time_ordered);
      INFO(options.name << " P = " << options.ranks << (heterogeneous ? " heterogeneous" : ""));
      REQUIRE(fast.ranks.size() == reference.ranks.size());
      for (std::size_t r = 0; r < fast.ranks.size(); ++r) {
        const RankTrace& a = fast.ranks[r];
        const RankTrace& b = reference.ranks[r];
        CHECK(a.rank == b.rank);
        REQUIRE(a.compute.size() == b.compute.size());
        REQUIRE(a.collectives.size() == b.collectives.size());
        REQUIRE(a.marks.size() == b.marks.size());
        for (std::size_t i = 0; i < a.compute.size(); ++i) {
          CHECK(a.compute[i].label == b.compute[i].label);
          CHECK(a.compute[i].end_s == Approx(b.compute[i].end_s).epsilon(1e-12));
        }
        for (std::size_t i = 0; i < a.collectives.size(); ++i) {
          CHECK(a.collectives[i].comm_start_s == Approx(b.collectives[i].comm_start_s).epsilon(1e-12));
          CHECK(a.collectives[i].comm_end_s == Approx(b.collectives[i].comm_end_s).epsilon(1e-12));
          CHECK(a.collectives[i].wait_end_s == Approx(b.collectives[i].wait_end_s).epsilon(1e-12));
        }
        for (std::size_t i = 0; i < a.marks.size(); ++i)
          CHECK(a.marks[i].time_s == Approx(b.marks[i].time_s).epsilon(1e-12));
      }
    }
  }
}
