// The per-layer breakdown (analysis/layer_breakdown.hpp): a hand-built trace whose values are
// worked out in the comments, and whole schedules whose per-layer bytes follow from the
// network's parameter counts.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/layer_breakdown.hpp"
#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "hand_trace.hpp"
#include "model/cost.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

namespace {

constexpr double kTol = 1e-12;

using test::op;

// Posted when it starts; 1000 bytes.
CollectiveRecord coll(int id, int iteration, double start, double end, double wait_start, double wait_end) {
  return test::coll(id, iteration, start, start, end, wait_start, wait_end);
}

// Two ranks, iteration 0 warm-up, 1 and 2 measured (marks at 1, 2, 3.5 on both ranks).
//  compute: c1 (layer 0) forward: rank 0 0.4 + 0.5, rank 1 0.8 + 0.3 → max 1.1 / 2 = 0.55 s;
//           c3 (layer 3) backward_weight: rank 0 0.2 in iteration 1 → 0.1 s.
//  collective 1 (iteration 1) carries layer 0's gradients, collective 3 (iteration 2) carries
//  the gradients of layers 0 and 3 (a bucket); collective 2 carries layer 3's activations.
//    rank 0: c1 T_c 0.3 T_b 0.2; c3 T_c 0.5 T_b 0.5; c2 T_c 0.2 T_b 0
//    rank 1: c1 T_c 0.1 T_b 0;   c3 T_c 0.2 T_b 0.1
//  warm-up collective 0 (iteration 0): ignored.
Trace bucket_trace() {
  Trace t;
  t.engine = "hand";
  t.warmup_iterations = 1;
  t.metadata["collective_layers"] = nlohmann::json::array(
      {{{"payload", "gradients"}, {"layers", {0}}},
       {{"payload", "gradients"}, {"layers", {0}}},
       {{"payload", "activations"}, {"layers", {3}}},
       {{"payload", "gradients"}, {"layers", {0, 3}}}});
  t.ranks.resize(2);
  RankTrace& a = t.ranks[0];
  a.rank = 0;
  a.compute = {op(0, "c1.fwd", 0, Phase::forward, 0.0, 0.9), op(1, "c1.fwd", 0, Phase::forward, 1.0, 1.4),
               op(2, "c3.bwd_w", 3, Phase::backward_weight, 1.4, 1.6), op(3, "c1.fwd", 0, Phase::forward, 2.0, 2.5)};
  a.collectives = {coll(0, 0, 0.9, 0.95, 0.95, 0.95), coll(1, 1, 1.6, 1.9, 1.7, 1.9), coll(2, 1, 1.2, 1.4, 1.5, 1.5),
                   coll(3, 2, 2.5, 3.0, 2.5, 3.0)};
  a.marks = {{0, 1.0}, {1, 2.0}, {2, 3.5}};
  RankTrace& b = t.ranks[1];
  b.rank = 1;
  b.compute = {op(0, "c1.fwd", 0, Phase::forward, 0.0, 0.9), op(1, "c1.fwd", 0, Phase::forward, 1.0, 1.8),
               op(3, "c1.fwd", 0, Phase::forward, 2.5, 2.8)};
  b.collectives = {coll(1, 1, 1.8, 1.9, 2.0, 2.0), coll(3, 2, 2.8, 3.0, 2.9, 3.0)};
  b.marks = {{0, 1.0}, {1, 2.0}, {2, 3.5}};
  return t;
}

const LayerPhaseBreakdown& find_row(const std::vector<LayerPhaseBreakdown>& rows, int layer, Phase phase) {
  for (const LayerPhaseBreakdown& r : rows)
    if (r.layer == layer && r.phase == phase) return r;
  FAIL("no row for layer " << layer << " phase " << to_string(phase));
  return rows.front();
}

}  // namespace

TEST_CASE("a collective counts in the phase of its payload", "[layers]") {
  CHECK(collective_phase(Payload::activations) == Phase::forward);
  CHECK(collective_phase(Payload::errors) == Phase::backward_data);
  CHECK(collective_phase(Payload::gradients) == Phase::backward_weight);
  CHECK(collective_phase(Payload::weights) == Phase::update);
}

TEST_CASE("per-layer breakdown of a hand-built trace, without the network: buckets split evenly", "[layers]") {
  const Trace t = bucket_trace();
  const std::vector<LayerPhaseBreakdown> rows = layer_breakdown(t, compute_metrics(t), nullptr);
  // Rows: layer 0 forward, layer 0 backward_weight (comm only), layer 3 forward (comm only),
  // layer 3 backward_weight; in layer, then phase order.
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].layer == 0);
  CHECK(rows[0].phase == Phase::forward);
  CHECK(rows[3].layer == 3);
  CHECK(rows[3].phase == Phase::backward_weight);
  const LayerPhaseBreakdown& c1_fwd = find_row(rows, 0, Phase::forward);
  CHECK(c1_fwd.name == "c1");
  CHECK(c1_fwd.compute_s == Approx(0.55).epsilon(kTol));
  CHECK(c1_fwd.comm_s == 0);
  // Layer 0, gradients: rank 0 T_c 0.3 + 0.5·½ = 0.55, rank 1 0.1 + 0.2·½ = 0.2 → 0.55 / 2 iterations.
  const LayerPhaseBreakdown& c1_grad = find_row(rows, 0, Phase::backward_weight);
  CHECK(c1_grad.compute_s == 0);
  CHECK(c1_grad.comm_s == Approx(0.275).epsilon(kTol));
  // T_b: rank 0 0.2 + 0.5·½ = 0.45, rank 1 0 + 0.1·½ = 0.05 → 0.225.
  CHECK(c1_grad.exposed_comm_s == Approx(0.225).epsilon(kTol));
  // Bytes: 1000 + 1000·½ on both ranks → 750 per iteration.
  CHECK(c1_grad.bytes == Approx(750).epsilon(kTol));
  // Layer 3 activations (forward): rank 0 T_c 0.2, T_b 0 (the wait ended before it started
  // to matter: wait 1.5..1.5) → 0.1 per iteration; 1000 B / 2 = 500.
  const LayerPhaseBreakdown& c3_act = find_row(rows, 3, Phase::forward);
  CHECK(c3_act.name == "layer3");  // no compute op names it and no network is given
  CHECK(c3_act.comm_s == Approx(0.1).epsilon(kTol));
  CHECK(c3_act.exposed_comm_s == 0);
  CHECK(c3_act.bytes == Approx(500).epsilon(kTol));
  // Layer 3 gradients: rank 0 0.5·½ = 0.25 → 0.125; compute 0.2 / 2 = 0.1.
  const LayerPhaseBreakdown& c3_grad = find_row(rows, 3, Phase::backward_weight);
  CHECK(c3_grad.compute_s == Approx(0.1).epsilon(kTol));
  CHECK(c3_grad.comm_s == Approx(0.125).epsilon(kTol));
  CHECK(c3_grad.exposed_comm_s == Approx(0.125).epsilon(kTol));

  const std::vector<LayerPhaseBreakdown> totals = layer_totals(rows);
  REQUIRE(totals.size() == 2);
  CHECK(totals[0].compute_s == Approx(0.55).epsilon(kTol));
  CHECK(totals[0].comm_s == Approx(0.275).epsilon(kTol));
  CHECK(totals[1].comm_s == Approx(0.225).epsilon(kTol));
}

TEST_CASE("per-layer breakdown with the network: a bucket splits by parameter bytes", "[layers]") {
  const Network lenet = load_network("lenet-5");
  // lenet-5: layer 0 c1 = 6·1·5·5 + 6 = 156 parameters, layer 3 c3 = 16·6·5·5 + 16 = 2416.
  REQUIRE(layer_cost(lenet.layers[0]).parameters() == 156);
  REQUIRE(layer_cost(lenet.layers[3]).parameters() == 2416);
  const double w0 = 156.0 / 2572.0, w3 = 2416.0 / 2572.0;
  const Trace t = bucket_trace();
  const std::vector<LayerPhaseBreakdown> rows = layer_breakdown(t, compute_metrics(t), &lenet);
  // Layer 0: rank 0 0.3 + 0.5·w0 → /2; bytes (1000 + 1000·w0) / 2.
  const LayerPhaseBreakdown& c1_grad = find_row(rows, 0, Phase::backward_weight);
  CHECK(c1_grad.comm_s == Approx((0.3 + 0.5 * w0) / 2).epsilon(kTol));
  CHECK(c1_grad.bytes == Approx((1000 + 1000 * w0) / 2).epsilon(kTol));
  const LayerPhaseBreakdown& c3_grad = find_row(rows, 3, Phase::backward_weight);
  CHECK(c3_grad.name == "c3");  // named by the network
  CHECK(c3_grad.comm_s == Approx(0.5 * w3 / 2).epsilon(kTol));
  CHECK(c3_grad.bytes == Approx(1000 * w3 / 2).epsilon(kTol));
}

TEST_CASE("collectives of a trace without collective_layers are one unattributed row", "[layers]") {
  Trace t = bucket_trace();
  t.metadata.erase("collective_layers");
  const std::vector<LayerPhaseBreakdown> rows = layer_breakdown(t, compute_metrics(t), nullptr);
  const LayerPhaseBreakdown& rest = rows.back();
  CHECK(rest.layer == -1);
  CHECK(rest.name == "(unattributed)");
  // Rank 0: 0.3 + 0.2 + 0.5 = 1.0, rank 1: 0.1 + 0.2 = 0.3 → 1.0 / 2 iterations.
  CHECK(rest.comm_s == Approx(0.5).epsilon(kTol));
}

TEST_CASE("bad collective_layers metadata is bad input naming the path", "[layers]") {
  Trace t = bucket_trace();
  t.metadata["collective_layers"][3]["layers"][1] = -4;
  try {
    layer_breakdown(t, compute_metrics(t), nullptr);
    FAIL("accepted a negative layer index");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("/metadata/collective_layers/3/layers/1") != std::string::npos);
  }
  t = bucket_trace();
  t.metadata["collective_layers"][0]["payload"] = "photons";
  CHECK_THROWS_AS(layer_breakdown(t, compute_metrics(t), nullptr), InputError);
}

TEST_CASE("data parallelism moves each layer's parameter bytes, and the analytic trace says so", "[layers]") {
  // dp allreduces every parameterised layer's gradients once per iteration; the size
  // convention of an allreduce is the vector it reduces (model/schedule.hpp), so a layer's
  // bytes per iteration are its parameter bytes: 4 B · (weights + biases), with buckets split
  // by parameter bytes. Layers without parameters move nothing.
  const Network network = load_network("vgg-a-32");
  const Platform platform = load_platform("local");
  for (const char* strategy : {"dp", "dp_layerwise"}) {
    INFO(strategy);
    StrategyOptions options;
    options.name = strategy;
    options.global_batch = 64;
    options.ranks = 2;
    const Trace trace = make_analytic_engine()->run(build_schedule(network, platform, options), platform);
    const TraceMetrics metrics = compute_metrics(trace);
    const std::vector<LayerPhaseBreakdown> totals = layer_totals(layer_breakdown(trace, metrics, &network));
    double sum_bytes = 0;
    for (const LayerPhaseBreakdown& row : totals) {
      INFO(row.name);
      REQUIRE(row.layer >= 0);
      CHECK(row.bytes == Approx(layer_cost(network.layers[std::size_t(row.layer)]).parameter_bytes()).epsilon(1e-9));
      sum_bytes += row.bytes;
    }
    CHECK(sum_bytes == Approx(metrics.comm_bytes).epsilon(1e-9));
  }
}
