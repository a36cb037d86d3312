// A parameter server's trace in analysis/: its components (analysis/components.hpp: Eq. 8,
// workload balance, Eq. 11's volume as it ran, staleness) and the loss against time
// (analysis/loss_curve.hpp), on a hand-built trace whose values are worked out below.
#include <optional>

#include <catch2/catch.hpp>

#include "analysis/components.hpp"
#include "analysis/loss_curve.hpp"
#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "hand_trace.hpp"

namespace cnnpar {
namespace {

using test::op;

constexpr double kTol = 1e-12;   // relative: sums and ratios of a few seconds
constexpr double kPushBytes = 4000;  // c_w: every push and every reply

// Server rank 0, workers 1 and 2, rounds 0..3 (round 0 warm-up). Worker compute per round (s):
//   worker 1: 1.0, 2.0, 3.0, 1.0      (one op a round)
//   worker 2: 5.0, 1.0, 2.4, 4.0      (round 1 in two ops: 0.4 + 0.6)
// Worker 1 marks 1.5, 4.0, 7.5, 9.0; worker 2 marks 5.5, 7.0, 10.0, 14.5.
// AGWU merges in push order (w1 r0 1.0, w1 r1 3.5, w2 r0 5.0, w2 r1 6.6, w1 r2 7.0, w1 r3 8.5,
// w2 r2 9.4, w2 r3 14.0); a worker's base is the version its last merge made:
//   (worker, round, base -> version): (1,0,0->1) (1,1,1->2) (2,0,0->3) (2,1,3->4) (1,2,2->5)
//   (1,3,5->6) (2,2,4->7) (2,3,7->8); staleness = version - 1 - base: 0 0 2 0 2 0 2 0.
Trace server_trace() {
  Trace t;
  t.engine = "hand";
  t.warmup_iterations = 1;
  t.metadata = {{"strategy", "param_server"},
                {"server_ranks", nlohmann::json::array({0})},
                {"options", {{"iterations", 4}}}};
  t.ranks.resize(3);
  for (int r = 0; r < 3; ++r) t.ranks[std::size_t(r)].rank = r;
  RankTrace& w1 = t.ranks[1];
  w1.compute = {op(0, "train", 0, Phase::forward, 0.0, 1.0), op(1, "train", 0, Phase::forward, 1.5, 3.5),
                op(2, "train", 0, Phase::forward, 4.0, 7.0), op(3, "train", 0, Phase::forward, 7.5, 8.5)};
  w1.marks = {{0, 1.5}, {1, 4.0}, {2, 7.5}, {3, 9.0}};
  RankTrace& w2 = t.ranks[2];
  w2.compute = {op(0, "train", 0, Phase::forward, 0.0, 5.0), op(1, "train", 0, Phase::forward, 5.5, 5.9),
                op(2, "train", 0, Phase::forward, 6.0, 6.6), op(3, "train", 0, Phase::forward, 7.0, 9.4),
                op(4, "train", 0, Phase::forward, 10.0, 14.0)};
  w2.marks = {{0, 5.5}, {1, 7.0}, {2, 10.0}, {3, 14.5}};
  // Each worker's side of its pushes and replies (not the server's traffic), and the server's.
  int id = 0;
  for (int round = 0; round < 4; ++round)
    for (RankTrace* worker : {&w1, &w2}) {
      const double at = worker->marks[std::size_t(round)].time_s - 0.4;
      for (int k = 0; k < 2; ++k, ++id) {
        worker->collectives.push_back(test::coll(id, round, at, at, at + 0.1, at, at + 0.1, kPushBytes));
        t.ranks[0].collectives.push_back(test::coll(id, round, at, at, at + 0.1, at, at + 0.1, kPushBytes));
      }
    }
  // The server's merges, 0.1 s each; its compute would make a 10 s round if it counted.
  const int merges[8][4] = {{1, 0, 0, 1}, {1, 1, 1, 2}, {2, 0, 0, 3}, {2, 1, 3, 4},
                            {1, 2, 2, 5}, {1, 3, 5, 6}, {2, 2, 4, 7}, {2, 3, 7, 8}};
  for (const auto& m : merges) {
    const double start_s = 0.5 * m[3];
    t.ranks[0].merges.push_back({.worker = m[0], .round = m[1], .base_version = m[2], .version = m[3],
                                 .start_s = start_s, .end_s = start_s + 0.1});
  }
  t.ranks[0].compute.push_back(op(0, "merge", -1, Phase::update, 0.0, 10.0));
  return t;
}

}  // namespace

TEST_CASE("parameter_server_components: Eq. 8, workload balance, volume and staleness by hand", "[components][serve]") {
  const ParameterServerComponents c = parameter_server_components(server_trace());
  CHECK(c.workers == 2);
  // Eq. 8 over the measured rounds 1..3, t = (w1, w2):
  //   round 1: (2.0, 1.0), max 2.0: 0 + 1.0 = 1.0
  //   round 2: (3.0, 2.4), max 3.0: 0 + 0.6 = 0.6
  //   round 3: (1.0, 4.0), max 4.0: 3.0 + 0 = 3.0          T_SGWU = 4.6 s (round 0's 4.0 s is warm-up)
  CHECK(c.sync_wait_s == Approx(4.6).epsilon(kTol));
  // The run ends at the last worker's last mark, 14.5 s; over the nominal K = 4 rounds an epoch
  // takes 14.5 / 4 = 3.625 s.
  CHECK(c.run_s == Approx(14.5).epsilon(kTol));
  CHECK(c.epoch_s == Approx(3.625).epsilon(kTol));
  // Workload balance: per round mean / max = 1.5/2 = 0.75, 2.7/3 = 0.9, 2.5/4 = 0.625; median 0.75.
  CHECK(c.workload_balance == Approx(0.75).epsilon(kTol));
  // The server moved 4 rounds x 2 workers x (push + reply) of 4,000 B: 2·c_w·m·K = 64,000 B
  // (the workers' own records of the same messages are not counted again).
  CHECK(c.volume_bytes == Approx(2 * kPushBytes * 2 * 4).epsilon(kTol));
  CHECK(c.merges == 8);
  CHECK(c.staleness == std::vector<int>{0, 0, 2, 0, 2, 0, 2, 0});
  CHECK(c.staleness_mean == Approx(6.0 / 8.0).epsilon(kTol));
  CHECK(c.staleness_max == 2);

  const nlohmann::json j = to_json(c);
  CHECK(j.at("staleness_max") == 2);
  CHECK(j.at("merges") == 8);
  const std::optional<nlohmann::json> by_strategy = components_json(server_trace(), nullptr, 4);
  REQUIRE(by_strategy);
  CHECK(by_strategy->at("strategy") == "param_server");
  CHECK(by_strategy->at("sync_wait_s").get<double>() == Approx(4.6).epsilon(kTol));

  // Without the nominal K there is no time per epoch: refused, naming the path.
  Trace without_k = server_trace();
  without_k.metadata.erase("options");
  CHECK_THROWS_WITH(parameter_server_components(without_k), Catch::Contains("/metadata/options/iterations"));
}

TEST_CASE("parameter_server_components: the metrics are the workers', and a trace without a server is refused",
          "[components][serve]") {
  // Without server_ranks the server (no marks) leaves no measured round: the metrics refuse it.
  Trace unnamed = server_trace();
  unnamed.metadata.erase("server_ranks");
  CHECK_THROWS_AS(compute_metrics(unnamed), InputError);
  CHECK_THROWS_AS(parameter_server_components(unnamed), InputError);
  // With it, the iteration time is the workers': per round the longest span between marks,
  // round 1 max(4.0 - 1.5, 7.0 - 5.5) = 2.5 s, round 2 max(3.5, 3.0) = 3.5 s, round 3
  // max(1.5, 4.5) = 4.5 s; median 3.5 s.
  const TraceMetrics metrics = compute_metrics(server_trace());
  CHECK(metrics.measured_iterations == std::vector<int>{1, 2, 3});
  CHECK(metrics.iteration_s == Approx(3.5).epsilon(kTol));
  CHECK(server_ranks(server_trace()) == std::vector<int>{0});
}

TEST_CASE("server_ranks that name every rank, or one rank twice, are bad input", "[metrics][serve]") {
  // Every rank a server: no worker is left to measure (this read past an empty list of ranks).
  Trace all = server_trace();
  all.metadata["server_ranks"] = {0, 1, 2};
  try {
    compute_metrics(all);
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.json_path() == "/metadata/server_ranks");
  }
  Trace lone;
  lone.engine = "hand";
  lone.metadata = {{"server_ranks", nlohmann::json::array({0})}};
  lone.ranks.resize(1);
  CHECK_THROWS_AS(compute_metrics(lone), InputError);
  // A rank named twice would count the server's traffic twice and one worker too few.
  Trace twice = server_trace();
  twice.metadata["server_ranks"] = {0, 0};
  try {
    server_ranks(twice);
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.json_path() == "/metadata/server_ranks");
  }
  CHECK_THROWS_AS(parameter_server_components(twice), InputError);
}

TEST_CASE("loss_curve: a round's loss at its last worker's mark, server ranks skipped", "[loss_curve][serve]") {
  Trace t = server_trace();
  t.metadata["loss"] = {2.3, 1.9, nullptr, 1.5, 1.2};  // round 2 unrecorded; round 4 never marked
  t.ranks[0].marks.push_back({1, 100.0});  // a server mark would make round 1 end at 100 s
  // Round ends: max over workers of their marks: 5.5, 7.0, 10.0, 14.5 (s).
  CHECK(iteration_end_s(t, 0).value() == 5.5);
  CHECK(iteration_end_s(t, 1).value() == 7.0);
  CHECK(iteration_end_s(t, 3).value() == 14.5);
  CHECK_FALSE(iteration_end_s(t, 4));
  const std::vector<LossPoint> curve = loss_curve(t);
  REQUIRE(curve.size() == 3);
  const int iterations[] = {0, 1, 3};
  const double ends[] = {5.5, 7.0, 14.5}, losses[] = {2.3, 1.9, 1.5};
  for (std::size_t k = 0; k < 3; ++k) {
    CHECK(curve[k].iteration == iterations[k]);
    CHECK(curve[k].end_s == ends[k]);
    CHECK(curve[k].loss == losses[k]);
  }
  // The first point at or below the target.
  REQUIRE(first_reaching(curve, 1.9));
  CHECK(first_reaching(curve, 1.9)->iteration == 1);
  CHECK(first_reaching(curve, 1.8)->end_s == 14.5);
  CHECK(first_reaching(curve, 3.0)->iteration == 0);
  CHECK_FALSE(first_reaching(curve, 1.0));
  // No loss recorded: no curve.
  CHECK(loss_curve(server_trace()).empty());
}

}  // namespace cnnpar
