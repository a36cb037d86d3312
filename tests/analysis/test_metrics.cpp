// Metrics, comparison, sweep writers and Chrome export on hand-built Traces whose values are
// worked out in the comments.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "analysis/chrome_trace.hpp"
#include "analysis/compare.hpp"
#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"
#include "base/units.hpp"
#include "experiments/sweep.hpp"
#include "hand_trace.hpp"

using namespace cnnpar;

namespace {

constexpr double kTol = 1e-12;

using test::coll;
using test::op;

// Two ranks, iterations 0 (warm-up) and 1, 2 (measured).
//  rank 0: marks at 1.0, 2.0, 3.5; rank 1: marks at 1.0, 2.5, 3.5.
//  iteration 1 spans: rank 0 1.0, rank 1 1.5 → 1.5; iteration 2: rank 0 1.5, rank 1 1.0 → 1.5.
//  compute in iteration 1: rank 0 conv1 fwd [1.0,1.4] + conv1 bwd_w [1.4,1.6] = 0.6; rank 1 [1.0,1.8] = 0.8
//  compute in iteration 2: rank 0 [2.0,2.5] = 0.5; rank 1 [2.5,2.8] = 0.3
//  collectives (rank 0): it 1: start 1.6 end 1.9, wait 1.7..1.9 → T_c 0.3, T_b 0.2, wait 0.2
//                         it 2: start 2.5 end 3.0, wait 2.4..3.0 → T_c 0.5, T_b 0.5, wait 0.6
//  collectives (rank 1): it 1: start 1.8 end 1.9, no wait (wait 2.0..2.0) → T_c 0.1, T_b 0
//                         it 2: start 2.8 end 3.0, wait 2.9..3.0 → T_c 0.2, T_b 0.1
//  warm-up collective on rank 0 (iteration 0): ignored.
Trace sample_trace() {
  Trace t;
  t.engine = "hand";
  t.warmup_iterations = 1;
  t.ranks.resize(2);
  RankTrace& a = t.ranks[0];
  a.rank = 0;
  a.compute = {op(0, "conv1.fwd", 0, Phase::forward, 0.0, 0.9), op(2, "conv1.fwd", 0, Phase::forward, 1.0, 1.4),
               op(3, "conv1.bwd_w", 0, Phase::backward_weight, 1.4, 1.6),
               op(6, "conv1.fwd", 0, Phase::forward, 2.0, 2.5)};
  a.collectives = {coll(0, 0, 0.9, 0.9, 0.95, 0.95, 0.95), coll(1, 1, 1.6, 1.6, 1.9, 1.7, 1.9),
                   coll(3, 2, 2.5, 2.5, 3.0, 2.4, 3.0)};
  a.marks = {{0, 1.0}, {1, 2.0}, {2, 3.5}};
  RankTrace& b = t.ranks[1];
  b.rank = 1;
  b.compute = {op(0, "conv1.fwd", 0, Phase::forward, 0.0, 0.9), op(2, "conv1.fwd", 0, Phase::forward, 1.0, 1.8),
               op(6, "conv1.fwd", 0, Phase::forward, 2.5, 2.8)};
  b.collectives = {coll(1, 1, 1.8, 1.8, 1.9, 2.0, 2.0), coll(3, 2, 2.8, 2.8, 3.0, 2.9, 3.0)};
  b.marks = {{0, 1.0}, {1, 2.5}, {2, 3.5}};
  return t;
}

}  // namespace

TEST_CASE("metrics of a hand-built trace", "[metrics]") {
  const TraceMetrics m = compute_metrics(sample_trace());
  REQUIRE(m.measured_iterations == std::vector<int>{1, 2});
  CHECK(m.iteration_times_s[0] == Approx(1.5).epsilon(kTol));
  CHECK(m.iteration_times_s[1] == Approx(1.5).epsilon(kTol));
  CHECK(m.iteration_s == Approx(1.5).epsilon(kTol));
  // compute max over ranks: it 1 0.8, it 2 0.5 → median 0.65; mean: it 1 0.7, it 2 0.4 → 0.55
  CHECK(m.compute_max_s == Approx(0.65).epsilon(kTol));
  CHECK(m.compute_mean_s == Approx(0.55).epsilon(kTol));
  // Σ T_c per rank: it 1 (0.3, 0.1) → 0.3; it 2 (0.5, 0.2) → 0.5; median 0.4
  CHECK(m.comm_s == Approx(0.4).epsilon(kTol));
  // Σ T_b: it 1 (0.2, 0) → 0.2; it 2 (0.5, 0.1) → 0.5; median 0.35
  CHECK(m.exposed_comm_s == Approx(0.35).epsilon(kTol));
  // wait: it 1 (0.2, 0) → 0.2; it 2 (0.6, 0.1) → 0.6; median 0.4
  CHECK(m.wait_s == Approx(0.4).epsilon(kTol));
  // R = 100·(1.1 − 0.8)/1.1 = 27.2727…
  CHECK(m.total_comm_s == Approx(1.1).epsilon(kTol));
  CHECK(m.total_exposed_s == Approx(0.8).epsilon(kTol));
  CHECK(m.overlap_ratio_percent == Approx(100.0 * 0.3 / 1.1).epsilon(kTol));
  // Load balance mean/max: it 1 0.7/0.8 = 0.875, it 2 0.4/0.5 = 0.8 → median 0.8375
  CHECK(m.load_balance == Approx(0.8375).epsilon(kTol));
  // BPT-CNN Eq. 8: it 1 (0.8−0.6)+(0) = 0.2; it 2 (0)+(0.5−0.3) = 0.2 → 0.4
  CHECK(m.sync_wait_s == Approx(0.4).epsilon(kTol));
  // Volume: 1000 B per rank per measured iteration.
  CHECK(m.comm_bytes == Approx(1000.0).epsilon(kTol));
  CHECK(m.collectives.size() == 4);
  // Per layer: conv1 forward: rank 0 0.4 + 0.5 = 0.9, rank 1 0.8 + 0.3 = 1.1 over 2 iterations
  // → mean 0.5 s, max 0.55 s per iteration; conv1 backward_weight: rank 0 0.2 → mean 0.05, max 0.1.
  REQUIRE(m.layers.size() == 2);
  CHECK(m.layers[0].name == "conv1");
  CHECK(m.layers[0].phase == Phase::forward);
  CHECK(m.layers[0].mean_s == Approx(0.5).epsilon(kTol));
  CHECK(m.layers[0].max_s == Approx(0.55).epsilon(kTol));
  CHECK(m.layers[1].phase == Phase::backward_weight);
  CHECK(m.layers[1].mean_s == Approx(0.05).epsilon(kTol));
  CHECK(m.layers[1].max_s == Approx(0.1).epsilon(kTol));
  const nlohmann::json j = to_json(m);
  CHECK(j.at("overlap_ratio_percent").get<double>() == Approx(100.0 * 0.3 / 1.1).epsilon(kTol));
}

TEST_CASE("busy time per rank and its min/max balance", "[metrics]") {
  // sample_trace compute: rank 0 (0.6, 0.5), rank 1 (0.8, 0.3) in iterations 1, 2.
  // Busy (median over iterations): rank 0 0.55, rank 1 0.55 -> min/max 1, though each
  // iteration alone is unbalanced (load_balance 0.8375 above).
  const TraceMetrics m = compute_metrics(sample_trace());
  REQUIRE(m.busy_s.size() == 2);
  CHECK(m.busy_s[0] == Approx(0.55).epsilon(kTol));
  CHECK(m.busy_s[1] == Approx(0.55).epsilon(kTol));
  CHECK(m.busy_min_max == Approx(1.0).epsilon(kTol));
  // Rank 1's iteration-2 op lengthened to [2.5, 2.9]: rank 1 (0.8, 0.4) -> 0.6; rank 0 still
  // 0.55 -> min/max 0.55 / 0.6 = 0.91666...
  Trace t = sample_trace();
  t.ranks[1].compute[2].end_s = 2.9;
  const TraceMetrics uneven = compute_metrics(t);
  CHECK(uneven.busy_s[0] == Approx(0.55).epsilon(kTol));
  CHECK(uneven.busy_s[1] == Approx(0.6).epsilon(kTol));
  CHECK(uneven.busy_min_max == Approx(0.55 / 0.6).epsilon(kTol));
  const nlohmann::json j = to_json(uneven);
  CHECK(j.at("busy_s").size() == 2);
  CHECK(j.at("busy_min_max").get<double>() == Approx(0.55 / 0.6).epsilon(kTol));
  // The existing balance metrics keep their meaning: it 1 (0.6, 0.8) mean/max 0.875, it 2
  // (0.5, 0.4) 0.45/0.5 = 0.9 -> median 0.8875; Eq. 8: 0.2 + 0.1 = 0.3.
  CHECK(uneven.load_balance == Approx(0.8875).epsilon(kTol));
  CHECK(uneven.sync_wait_s == Approx(0.3).epsilon(kTol));
  // No compute at all: balanced by definition, not 0/0.
  Trace idle = sample_trace();
  for (RankTrace& rank : idle.ranks) rank.compute.clear();
  CHECK(compute_metrics(idle).busy_min_max == 1.0);
}

TEST_CASE("non-GEMM compute: the ops of other kernels, per iteration, max over ranks", "[metrics]") {
  Trace t = sample_trace();
  for (RankTrace& rank : t.ranks)
    for (ComputeRecord& r : rank.compute) r.kernel = r.label == "conv1.fwd" ? KernelClass::gemm : KernelClass::im2col;
  // Only rank 0's conv1.bwd_w [1.4, 1.6] is not a GEMM: iteration 1 (0.2, 0) → 0.2,
  // iteration 2 (0, 0) → 0; median 0.1.
  CHECK(compute_metrics(t).non_gemm_compute_s == Approx(0.1).epsilon(kTol));
  // Every op a GEMM: nothing left.
  for (RankTrace& rank : t.ranks)
    for (ComputeRecord& r : rank.compute) r.kernel = KernelClass::gemm;
  CHECK(compute_metrics(t).non_gemm_compute_s == 0.0);
}

TEST_CASE("T_b counts only the part of the wait while the collective runs", "[metrics]") {
  // Waiting from 1.0 for a collective that only starts at 2.0 and ends at 3.0: wait 2.0 s, T_b 1.0 s.
  CHECK(exposed_comm_s(coll(0, 0, 0.5, 2.0, 3.0, 1.0, 3.0)) == Approx(1.0).epsilon(kTol));
  // Collective finished before the wait: T_b 0.
  CHECK(exposed_comm_s(coll(0, 0, 0.5, 0.5, 0.8, 1.0, 1.0)) == 0.0);
}

TEST_CASE("a trace without measured iterations is rejected", "[metrics]") {
  Trace t = sample_trace();
  t.warmup_iterations = 5;
  CHECK_THROWS_AS(compute_metrics(t), InputError);
}

TEST_CASE("median, speedup, efficiency", "[metrics]") {
  CHECK(median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(median({4.0, 1.0, 2.0, 3.0}) == 2.5);
  CHECK(median({}) == 0.0);
  CHECK(speedup(10.0, 2.5) == 4.0);
  CHECK(efficiency(4.0, 8) == 0.5);
}

TEST_CASE("compare two traces", "[compare]") {
  const Trace measured = sample_trace();
  Trace predicted = sample_trace();
  predicted.engine = "model";
  // Predict rank 1's measured-iteration-1 conv1 forward as 0.5 s instead of 0.8 s (deviation −0.3 s).
  predicted.ranks[1].compute[1].end_s = 1.5;
  const CompareReport report = compare_traces(predicted, measured);
  REQUIRE(!report.metrics.empty());
  CHECK(report.metrics[0].name == "iteration_s");
  CHECK(report.metrics[0].absolute_error == 0.0);
  // compute max: predicted it 1 max(0.6, 0.5) = 0.6, it 2 0.5 → 0.55; measured 0.65 → rel error 0.1/0.65
  CHECK(report.metrics[1].name == "compute_max_s");
  CHECK(report.metrics[1].predicted == Approx(0.55).epsilon(kTol));
  CHECK(report.metrics[1].relative_error == Approx(0.1 / 0.65).epsilon(1e-9));
  CHECK(report.matched_ops == 7);
  CHECK(report.unmatched_ops == 0);
  REQUIRE(!report.largest_deviations.empty());
  CHECK(report.largest_deviations[0].rank == 1);
  CHECK(report.largest_deviations[0].op == 2);
  CHECK(report.largest_deviations[0].deviation_s == Approx(-0.3).epsilon(1e-9));
  const std::string table = format_compare_table(report);
  CHECK(table.find("iteration_s") != std::string::npos);
  CHECK(to_json(report).at("largest_deviations").size() == report.largest_deviations.size());
}

TEST_CASE("node lists", "[sweep]") {
  CHECK(parse_node_list("1-4:1") == std::vector<int>{1, 2, 3, 4});
  CHECK(parse_node_list("1-128") == std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128});  // doubling
  CHECK(parse_node_list("3-20") == std::vector<int>{3, 6, 12});
  CHECK(parse_node_list("2-10:4") == std::vector<int>{2, 6, 10});
  CHECK(parse_node_list("8,1,2,2,4") == std::vector<int>{1, 2, 4, 8});
  CHECK(parse_node_list("1-3:1,16") == std::vector<int>{1, 2, 3, 16});
  CHECK(parse_node_list("1-128:1").size() == 128);
  for (const char* bad : {"", "0", "4-2", "a", "1,,2", "-3", "1-", "2.5", "1-8:0", "1-8:"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_node_list(bad), InputError);
  }
}

TEST_CASE("sweep rows, CSV and JSON", "[sweep]") {
  TraceMetrics one, four;
  one.iteration_s = 2.0;
  four.iteration_s = 0.8;
  four.overlap_ratio_percent = 40;
  const std::vector<SweepRow> rows = sweep_rows({1, 4}, {one, four}, 2.0);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].speedup == Approx(2.5).epsilon(kTol));     // 2.0 / 0.8
  CHECK(rows[1].efficiency == Approx(0.625).epsilon(kTol));  // 2.5 / 4
  // The configuration columns come first; a field with a comma is quoted (RFC 4180).
  const ConfigColumns config = config_columns(
      {{"strategy", "per_layer"}, {"batch", 64}, {"ranks", 4}, {"assign", "conv*=data,fc6=model"}, {"sync", "end"}, {"k", 9}},
      "vgg-a", "cori-haswell", "analytic");
  CHECK(config.options == "assign=conv*=data,fc6=model sync=end k=9");  // the per_layer schema's order
  const std::string csv = sweep_csv(config, rows);
  CHECK(csv.rfind("network,platform,engine,strategy,options,batch,nodes,iteration_s,compute_s,comm_s,exposed_comm_s,"
                  "overlap_ratio_percent,speedup,efficiency\n", 0) == 0);
  CHECK(csv.find("\nvgg-a,cori-haswell,analytic,per_layer,\"assign=conv*=data,fc6=model sync=end k=9\",64,4,0.8,0,0,0,40,"
                 "2.5,0.625\n") != std::string::npos);
  CHECK(csv_field("a\"b") == "\"a\"\"b\"");
  const nlohmann::json j = sweep_json(rows, {{"strategy", "x"}});
  CHECK(j.at("rows").size() == 2);
  CHECK(j.at("rows")[1].at("speedup").get<double>() == Approx(2.5).epsilon(kTol));
  // One unit per column, the largest that keeps the column's largest value >= 1: 2 s -> s.
  CHECK(format_sweep_table(rows).find("iteration s") != std::string::npos);
  CHECK(time_unit_for(0.0042).name == std::string("ms"));
  CHECK(time_unit_for(0.0042).per_second == 1e3);
  CHECK(time_unit_for(7e-7).name == std::string("ns"));
}

TEST_CASE("chrome trace export", "[chrome]") {
  const nlohmann::json chrome = to_chrome_trace(sample_trace());
  const auto& events = chrome.at("traceEvents");
  int spans = 0, waits = 0;
  for (const auto& e : events) {
    if (e.at("ph") != "X") continue;
    ++spans;
    if (e.at("cat") == "wait") ++waits;
    if (e.at("name") == "c1" && e.at("pid") == 0) {
      CHECK(e.at("ts").get<double>() == Approx(1.6e6).epsilon(kTol));  // 1.6 s in µs
      CHECK(e.at("dur").get<double>() == Approx(0.3e6).epsilon(1e-9));
    }
  }
  // 7 compute ops + 5 collectives + waits with positive length (rank 0: 2, rank 1: 1).
  CHECK(waits == 3);
  CHECK(spans == 7 + 5 + 3);
}

TEST_CASE("summary metrics skip the lists but not the numbers", "[metrics]") {
  const TraceMetrics full = compute_metrics(sample_trace());
  const TraceMetrics summary = compute_metrics(sample_trace(), MetricsDetail{false, false});
  CHECK(summary.collectives.empty());
  CHECK(summary.layers.empty());
  CHECK(summary.iteration_s == full.iteration_s);
  CHECK(summary.compute_max_s == full.compute_max_s);
  CHECK(summary.comm_s == full.comm_s);
  CHECK(summary.exposed_comm_s == full.exposed_comm_s);
  CHECK(summary.overlap_ratio_percent == full.overlap_ratio_percent);
}

TEST_CASE("waits after the last mark (a final drain) count in no iteration", "[metrics]") {
  // A collective posted in iteration 2 and waited for from 3.6 s, after the last mark (3.5 s): its
  // 1 s of exposed communication lies outside every measured window, so nothing changes.
  Trace t = sample_trace();
  t.ranks[0].collectives.push_back(coll(9, 2, 3.0, 3.0, 4.6, 3.6, 4.6));
  const TraceMetrics with_drain = compute_metrics(t);
  const TraceMetrics without = compute_metrics(sample_trace());
  CHECK(with_drain.comm_s == without.comm_s);
  CHECK(with_drain.exposed_comm_s == without.exposed_comm_s);
  CHECK(with_drain.overlap_ratio_percent == without.overlap_ratio_percent);
  // Posted in iteration 1 but waited for in iteration 2's window (lee's delayed exchanges): it
  // counts in iteration 2. Rank 1: T_c 0.4 (1.9..2.3), wait 2.6..2.6 → T_b 0; Σ T_c becomes 1.5.
  Trace delayed = sample_trace();
  delayed.ranks[1].collectives.push_back(coll(8, 1, 1.9, 1.9, 2.3, 2.6, 2.6));
  const TraceMetrics m = compute_metrics(delayed);
  CHECK(m.total_comm_s == Approx(1.5).epsilon(kTol));
  CHECK(m.overlap_ratio_percent == Approx(100.0 * 0.7 / 1.5).epsilon(kTol));
}

TEST_CASE("measurement warnings: a busy machine, a wide spread, shared memory on one host", "[compare]") {
  // sample_trace: iterations of 1.5 s and 1.5 s (spread 0 %), Σ T_c median 0.4 s.
  Trace measured = sample_trace();
  Trace predicted = sample_trace();
  CHECK(iteration_spread_percent(compute_metrics(measured)) == Approx(0).margin(kTol));
  CHECK(measurement_warnings(&predicted, measured).empty());  // no metadata: nothing to say

  // Load 1.2 on 2 cores is above half the cores (1.0); 0.9 is not.
  measured.metadata = {{"load_average", {1.2, 1.0, 1.0}}, {"cores", 2}};
  REQUIRE(measurement_warnings(&predicted, measured).size() == 1);
  CHECK(measurement_warnings(&predicted, measured)[0].find("load average 1.20 on 2 cores") != std::string::npos);
  measured.metadata["load_average"] = {"high"};  // not a number: nothing recorded, nothing to say
  CHECK(measurement_warnings(&predicted, measured).empty());
  measured.metadata["load_average"] = {0.9, 1.0, 1.0};
  CHECK(measurement_warnings(&predicted, measured).empty());

  // Both ranks on one host: the warning needs measured Σ T_c (0.4 s) above twice the
  // predicted; a prediction with every collective 10× shorter has Σ T_c 0.04 s.
  measured.metadata["hosts"] = {"n1", "n1"};
  CHECK(measurement_warnings(&predicted, measured).empty());  // 0.4 s is not above 2 × 0.4 s
  for (RankTrace& rank : predicted.ranks)
    for (CollectiveRecord& c : rank.collectives) c.comm_end_s = c.comm_start_s + (c.comm_end_s - c.comm_start_s) / 10;
  REQUIRE(measurement_warnings(&predicted, measured).size() == 1);
  CHECK(measurement_warnings(&predicted, measured)[0].find("all 2 ranks ran on one host (n1)") != std::string::npos);
  measured.metadata["hosts"] = {"n1", "n2"};
  CHECK(measurement_warnings(&predicted, measured).empty());
  CHECK(measurement_warnings(nullptr, measured).empty());

  // Rank 1's last mark 1.5 s later: its iteration 2 takes 5.0 − 2.5 = 2.5 s, so iterations
  // of 1.5 s and 2.5 s (max over ranks), median 2.0 s,
  // spread 100 · (2.5 − 1.5) / 2.0 = 50 % (> 10 %).
  measured.ranks[1].marks[2].time_s = 5.0;
  CHECK(iteration_spread_percent(compute_metrics(measured)) == Approx(50).epsilon(kTol));
  REQUIRE(measurement_warnings(nullptr, measured).size() == 1);
  CHECK(measurement_warnings(nullptr, measured)[0].find("spread 50.0 %") != std::string::npos);
}
