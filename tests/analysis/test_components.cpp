// Per-component metrics of veeriah and conv_split on hand-built traces; every expected value
// is worked out in the comments from the records below.
#include <optional>

#include <catch2/catch.hpp>

#include "analysis/components.hpp"
#include "base/error.hpp"
#include "hand_trace.hpp"
#include "model/scenarios.hpp"

namespace cnnpar {
namespace {

using test::op;

CollectiveRecord record(int id, CollectiveKind kind, double comm_start_s, double comm_end_s, double wait_start_s,
                        double wait_end_s) {
  CollectiveRecord r = test::coll(id, 0, comm_start_s, comm_start_s, comm_end_s, wait_start_s, wait_end_s);
  r.kind = kind;
  return r;
}

nlohmann::json carried(const char* payload, int layer) { return {{"payload", payload}, {"layers", {layer}}}; }

// K = 2: conv ranks 0, 1; fc ranks 2, 3. Layers: 4 = fc1 (its input comes from the conv
// workers), 3 = the layer below it, 6 = the layer fed by fc1's merged output, 8 = a later one.
// Iteration i (0 = warm-up, 1 and 2 measured) starts at t0 = 20·i and every duration is
// scaled by f = 5, 1, 2.
Trace veeriah_trace() {
  Trace t;
  t.engine = "hand";
  t.warmup_iterations = 1;
  t.metadata = {{"strategy", "veeriah"}, {"options", {{"scheme", "b"}, {"conv_workers", 2}}}, {"global_batch", 8}};
  t.metadata["collective_layers"] = nlohmann::json::array({
      carried("activations", 4),  // 0: send conv 0 → fc 2
      carried("activations", 4),  // 1: send conv 0 → fc 3
      carried("activations", 4),  // 2: send conv 1 → fc 2
      carried("activations", 4),  // 3: send conv 1 → fc 3
      carried("activations", 6),  // 4: allgather, fc1's outputs (pass 1)
      carried("errors", 3),       // 5: allreduce of the errors below fc1
      carried("activations", 8),  // 6: allgather of a later layer: not the fc1 merge
      carried("gradients", 0),    // 7: conv-worker gradient allreduce
      carried("errors", 3),       // 8: send of errors fc → conv: not an activation wait
      carried("activations", 6),  // 9: allgather, fc1's outputs (pass 2)
  });
  t.ranks.resize(4);
  for (int r = 0; r < 4; ++r) t.ranks[std::size_t(r)].rank = r;
  const double scale[3] = {5, 1, 2};
  for (int i = 0; i < 3; ++i) {
    const double t0 = 20.0 * i, f = scale[i];
    // Conv ranks: rank 0 also waits 0.9f on its own activation send (a conv rank: not counted).
    t.ranks[0].compute.push_back(op(0, "conv1.fwd", 0, Phase::forward, t0, t0 + f));
    t.ranks[0].collectives.push_back(record(0, CollectiveKind::send, t0 + f, t0 + 1.5 * f, t0 + f, t0 + 1.9 * f));
    t.ranks[0].marks.push_back({i, t0 + 3 * f});
    t.ranks[1].compute.push_back(op(0, "conv1.fwd", 0, Phase::forward, t0, t0 + f));
    t.ranks[1].collectives.push_back(record(7, CollectiveKind::allreduce, t0 + f, t0 + 2 * f, t0 + f, t0 + 2 * f));
    t.ranks[1].marks.push_back({i, t0 + 2.5 * f});
    // Fc rank 2: activation waits 0.4f + 0.1f = 0.5f; compute 1f + 0.5f = 1.5f; fc1 merges
    // 0.2f (pass 1) + 0.1f (pass 2) = 0.3f; the later allgather 0.3f does not count; error
    // allreduce 0.25f; the error send's 2f wait does not count.
    RankTrace& fc2 = t.ranks[2];
    fc2.collectives.push_back(record(0, CollectiveKind::send, t0, t0 + 0.4 * f, t0, t0 + 0.4 * f));
    fc2.collectives.push_back(record(2, CollectiveKind::send, t0 + 0.4 * f, t0 + 0.5 * f, t0 + 0.4 * f, t0 + 0.5 * f));
    fc2.compute.push_back(op(0, "fc1.fwd", 4, Phase::forward, t0 + 0.5 * f, t0 + 1.5 * f));
    fc2.collectives.push_back(record(4, CollectiveKind::allgather, t0 + 1.5 * f, t0 + 1.7 * f, t0 + 1.5 * f, t0 + 1.7 * f));
    fc2.collectives.push_back(record(9, CollectiveKind::allgather, t0 + 1.7 * f, t0 + 1.8 * f, t0 + 1.7 * f, t0 + 1.8 * f));
    fc2.collectives.push_back(record(6, CollectiveKind::allgather, t0 + 1.8 * f, t0 + 2.1 * f, t0 + 1.8 * f, t0 + 2.1 * f));
    fc2.collectives.push_back(record(5, CollectiveKind::allreduce, t0 + 2.1 * f, t0 + 2.35 * f, t0 + 2.1 * f, t0 + 2.35 * f));
    fc2.compute.push_back(op(1, "fc1.bwd_weight", 4, Phase::backward_weight, t0 + 2.35 * f, t0 + 2.85 * f));
    fc2.collectives.push_back(record(8, CollectiveKind::send, t0 + 0.9 * f, t0 + 0.9 * f, t0 + 0.9 * f, t0 + 2.9 * f));
    fc2.marks.push_back({i, t0 + 3.5 * f});
    // Fc rank 3: activation waits 0.3f, compute 1.2f, fc1 merge 0.1f, error allreduce 0.35f.
    RankTrace& fc3 = t.ranks[3];
    fc3.collectives.push_back(record(1, CollectiveKind::send, t0, t0 + 0.3 * f, t0, t0 + 0.3 * f));
    fc3.compute.push_back(op(0, "fc1.fwd", 4, Phase::forward, t0 + 0.3 * f, t0 + 1.5 * f));
    fc3.collectives.push_back(record(4, CollectiveKind::allgather, t0 + 1.5 * f, t0 + 1.6 * f, t0 + 1.5 * f, t0 + 1.6 * f));
    fc3.collectives.push_back(record(5, CollectiveKind::allreduce, t0 + 1.6 * f, t0 + 1.95 * f, t0 + 1.6 * f, t0 + 1.95 * f));
    fc3.marks.push_back({i, t0 + 3.5 * f});
  }
  return t;
}

TEST_CASE("veeriah components: Tables 1-5 from a hand trace", "[components]") {
  const VeeriahComponents c = veeriah_components(veeriah_trace());
  CHECK(c.conv_workers == 2);
  // Conv iteration, mark to mark: rank 0 marks at 15, 23, 46 → 8 and 23; rank 1 at 12.5,
  // 22.5, 45 → 10 and 22.5. Max per iteration 10 and 23, median 16.5 (not 1.5·3f = 4.5: the
  // spans start at the previous mark).
  CHECK(c.conv_iteration_s == Approx(16.5));
  // Per f the fc-rank maxima are 1.5f, 0.5f, 0.3f, 0.35f; the median over f = 1, 2 is ×1.5.
  CHECK(c.fc_pass_s == Approx(2.25));
  CHECK(c.fc_activation_wait_s == Approx(0.75));
  CHECK(c.fc1_merge_s == Approx(0.45));
  CHECK(c.fc1_error_reduce_s == Approx(0.525));
}

TEST_CASE("veeriah components: a rank count that is not 2K is bad input", "[components]") {
  Trace t = veeriah_trace();
  t.metadata["options"]["conv_workers"] = 3;
  CHECK_THROWS_AS(veeriah_components(t), InputError);
  t = veeriah_trace();
  t.metadata["collective_layers"][2]["payload"] = "photons";
  CHECK_THROWS_AS(veeriah_components(t), InputError);
}

// P = 3, conv layers c1 (0) and c2 (2), pool (1) and fc (3) on the master. Warm-up window
// [0, 10) holds a large conv op and a 3 s exposed wait on the master; the measured one is
// [10, 20) on every rank.
Trace conv_split_trace() {
  Trace t;
  t.engine = "hand";
  t.warmup_iterations = 1;
  t.metadata = {{"strategy", "conv_split"},
                {"options", {{"shares", "probe"}, {"kernel_counts", {{"c1", {20, 20, 10}}, {"c2", {200, 100, 200}}}}}},
                {"global_batch", 64}};
  t.ranks.resize(3);
  for (int r = 0; r < 3; ++r) {
    t.ranks[std::size_t(r)].rank = r;
    t.ranks[std::size_t(r)].marks = {{0, 10}, {1, 20}};
  }
  RankTrace& master = t.ranks[0];
  master.compute = {op(0, "c1.fwd", 0, Phase::forward, 0, 5),  // warm-up
                    op(1, "c1.fwd", 0, Phase::forward, 10, 11),
                    op(2, "pool1.fwd", 1, Phase::forward, 11, 11.5),
                    op(3, "c2.fwd", 2, Phase::forward, 11.5, 13.5),
                    op(4, "fc.fwd", 3, Phase::forward, 13.5, 13.8),
                    op(5, "c2.bwd_data", 2, Phase::backward_data, 13.8, 14.2),
                    op(6, "c1.bwd_weight", 0, Phase::backward_weight, 14.2, 14.4),
                    op(7, "c1.update", 0, Phase::update, 14.4, 14.5),
                    op(8, "fc.update", 3, Phase::update, 14.5, 14.55)};
  master.collectives = {record(0, CollectiveKind::send, 1, 4, 2, 5),            // warm-up: T_b 3
                        record(1, CollectiveKind::send, 11, 11.5, 11.2, 11.6),  // T_b 11.6 − 11.2 = 0.4
                        record(2, CollectiveKind::send, 13, 14, 12, 14),        // T_b 14 − 13 = 1.0
                        record(3, CollectiveKind::reduce, 15, 15.3, 16, 16)};   // T_b 0
  t.ranks[1].compute = {op(0, "c1.fwd", 0, Phase::forward, 10, 11.5), op(1, "c2.fwd", 2, Phase::forward, 12, 13),
                        op(2, "c2.bwd_data", 2, Phase::backward_data, 14, 14.3)};
  t.ranks[2].compute = {op(0, "c1.fwd", 0, Phase::forward, 10, 10.5), op(1, "c2.fwd", 2, Phase::forward, 12, 14.5),
                        op(2, "c2.bwd_weight", 2, Phase::backward_weight, 15, 15.5)};
  return t;
}

TEST_CASE("conv_split components: Marques' Comm/Conv/Comp split from a hand trace", "[components]") {
  const ConvSplitComponents c = conv_split_components(conv_split_trace(), nullptr, 8);
  // Master's exposed communication 0.4 + 1.0 + 0 (warm-up's 3 left out).
  CHECK(c.comm_s == Approx(1.4));
  // Per layer, rank 0/1/2: c1 1.2 (1.0 + 0.2) / 1.5 / 0.5, c2 2.4 (2.0 + 0.4) / 1.3 / 3.0:
  // slowest per layer 1.5 + 3.0.
  CHECK(c.conv_s == Approx(4.5));
  // Master's other compute: pool 0.5 + fc 0.3 + updates 0.1 + 0.05.
  CHECK(c.comp_s == Approx(0.95));
  REQUIRE(c.conv_per_rank_s.size() == 3);
  CHECK(c.conv_per_rank_s[0] == Approx(3.6));
  CHECK(c.conv_per_rank_s[1] == Approx(2.8));
  CHECK(c.conv_per_rank_s[2] == Approx(3.5));
  CHECK(c.conv_spread == Approx(3.6 / 2.8 - 1));
  // Workers only (ranks 1 and 2): 3.5 / 2.8 − 1 = 0.25.
  CHECK(c.workers_conv_spread == Approx(0.25));
  CHECK_FALSE(c.has_upload);
}

TEST_CASE("conv_split components: Eq. 2 upload in elements and bytes", "[components]") {
  const Network network = load_network("marques-50-500");
  const ConvSplitComponents c = conv_split_components(conv_split_trace(), &network, 8);
  // Batch 64. c1: (32²·3 + 28²·50)·64 + 5²·50·3 = 42272·64 + 3750 = 2,709,158;
  // c2: (14²·50 + 10²·500)·64 + 5²·500·50 = 59800·64 + 625000 = 4,452,200. Sum 7,161,358
  // elements; doubles: 57,290,864 bytes.
  REQUIRE(c.has_upload);
  CHECK(c.upload_elements == 7161358.0);
  CHECK(c.upload_bytes == 57290864.0);
}

TEST_CASE("components_json only for the two worker-group strategies", "[components]") {
  const std::optional<nlohmann::json> veeriah = components_json(veeriah_trace(), nullptr, 4);
  REQUIRE(veeriah);
  CHECK(veeriah->at("strategy") == "veeriah");
  CHECK(veeriah->at("fc1_merge_s").get<double>() == Approx(0.45));
  Trace dp = veeriah_trace();
  dp.metadata["strategy"] = "dp";
  CHECK_FALSE(components_json(dp, nullptr, 4));
  const std::string table = format_components_comparison(*veeriah, nlohmann::json::object());
  CHECK(table.find("fc1_merge_s") != std::string::npos);
  CHECK(table.find(" -\n") != std::string::npos);
  // Rows in the order of the paper's tables (1 to 5), not alphabetical.
  CHECK(component_keys({&*veeriah}) == std::vector<std::string>{"conv_workers", "conv_iteration_s", "fc_pass_s",
                                                                 "fc_activation_wait_s", "fc1_merge_s",
                                                                 "fc1_error_reduce_s"});
}

}  // namespace
}  // namespace cnnpar
