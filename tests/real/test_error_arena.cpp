// Error buffers shared by lifetime: the arena planner against hand-worked cases and a brute-force
// check, and the Runtime's training with the arena against its own buffers per layer (the
// reference: each layer's errors in memory of their own, as the executor had them before).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "real/arena_plan.hpp"
#include "real/dataset.hpp"
#include "real/local_executor.hpp"
#include "tests/real/real_test_util.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

namespace {

BufferLife life(std::int64_t floats, std::vector<LiveSpan> spans) { return {.floats = floats, .spans = std::move(spans)}; }

bool overlap_in_memory(std::int64_t a, std::int64_t a_floats, std::int64_t b, std::int64_t b_floats) {
  return a < b + b_floats && b < a + a_floats;
}

// Every pair of buffers whose lives meet lies apart in memory, inside the arena, aligned.
void check_plan(const std::vector<BufferLife>& buffers, const ArenaPlan& plan, std::int64_t alignment) {
  REQUIRE(plan.offsets.size() == buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    CHECK(plan.offsets[i] % alignment == 0);
    CHECK(plan.offsets[i] + buffers[i].floats <= plan.floats);
    for (std::size_t j = i + 1; j < buffers.size(); ++j)
      if (lives_meet(buffers[i], buffers[j]))
        CHECK_FALSE(overlap_in_memory(plan.offsets[i], buffers[i].floats, plan.offsets[j], buffers[j].floats));
  }
}

std::vector<std::vector<float>> all_weights(LocalExecutor& ex) {
  std::vector<std::vector<float>> weights;
  for (int r = 0; r < ex.ranks(); ++r) weights.push_back(ex.runtime(r).flat_weights());
  return weights;
}

}  // namespace

TEST_CASE("arena plan: lives that never meet share one offset, lives that all meet are stacked") {
  // Disjoint lives: the arena is the largest buffer, 30 floats; all at offset 0.
  const std::vector<BufferLife> apart = {life(10, {{0, 1}}), life(30, {{2, 3}}), life(20, {{4, 9}})};
  const ArenaPlan a = plan_arena(apart, 1);
  check_plan(apart, a, 1);
  CHECK(a.floats == 30);
  CHECK(a.offsets == std::vector<std::int64_t>{0, 0, 0});
  // Lives that all meet at op 5: the arena is the sum, 10 + 30 + 20 = 60.
  const std::vector<BufferLife> together = {life(10, {{0, 5}}), life(30, {{5, 6}}), life(20, {{3, 8}})};
  const ArenaPlan t = plan_arena(together, 1);
  check_plan(together, t, 1);
  CHECK(t.floats == 60);
}

TEST_CASE("arena plan: a chain of layers needs the largest neighbouring pair") {
  // Backward through a chain: the errors of layer i live from op i to op i + 1. At op 1 buffers
  // 0 and 1 live (30 + 20), at op 2 buffers 1 and 2 (20 + 30): no plan can use less than 50,
  // and buffers 0 and 2 share the same memory.
  const std::vector<BufferLife> chain = {life(30, {{0, 1}}), life(20, {{1, 2}}), life(30, {{2, 3}})};
  const ArenaPlan p = plan_arena(chain, 1);
  check_plan(chain, p, 1);
  CHECK(p.floats == 50);
  CHECK(p.offsets[0] == p.offsets[2]);
}

TEST_CASE("arena plan: offsets are aligned, and spans of several iterations meet only where they overlap") {
  // Two 10-float buffers that meet, 16-float alignment: offsets 0 and 16, arena 26.
  const std::vector<BufferLife> two = {life(10, {{0, 2}}), life(10, {{1, 3}})};
  const ArenaPlan p = plan_arena(two, 16);
  check_plan(two, p, 16);
  CHECK(p.floats == 26);
  // One life per iteration: [0,1] [10,11] and [2,3] [12,13] never meet; [5,6] [11,12] meets at 11.
  CHECK_FALSE(lives_meet(life(1, {{0, 1}, {10, 11}}), life(1, {{2, 3}, {12, 13}})));
  CHECK(lives_meet(life(1, {{0, 1}, {10, 11}}), life(1, {{5, 6}, {11, 12}})));
  CHECK(lives_meet(life(1, {{4, 4}}), life(1, {{0, 9}})));
}

TEST_CASE("arena plan: random lives are placed apart where they meet, within the live-sum bound") {
  // Bounds independent of the planner: the arena holds at least what lives at the busiest op
  // (the sum of the buffers live there) and at most every buffer side by side.
  std::mt19937 random(7);
  for (int instance = 0; instance < 300; ++instance) {
    const int count = 1 + int(random() % 12);
    std::vector<BufferLife> buffers;
    for (int b = 0; b < count; ++b) {
      BufferLife l{.floats = std::int64_t(random() % 100), .spans = {}};
      std::int64_t at = std::int64_t(random() % 5);
      for (int s = 0, spans = 1 + int(random() % 3); s < spans; ++s) {
        const std::int64_t first = at + std::int64_t(random() % 6);
        const std::int64_t last = first + std::int64_t(random() % 6);
        l.spans.push_back({first, last});
        at = last + 1;
      }
      buffers.push_back(l);
    }
    const ArenaPlan plan = plan_arena(buffers, 1);
    check_plan(buffers, plan, 1);
    std::int64_t busiest = 0, side_by_side = 0;
    for (std::int64_t op = 0; op < 64; ++op) {
      std::int64_t live = 0;
      for (const BufferLife& l : buffers)
        for (const LiveSpan& s : l.spans) live += s.first <= op && op <= s.last ? l.floats : 0;
      busiest = std::max(busiest, live);
    }
    for (const BufferLife& l : buffers) side_by_side += l.floats;
    CHECK(plan.floats >= busiest);
    CHECK(plan.floats <= side_by_side);
  }
}

TEST_CASE("runtime: errors in a shared arena train to the bits of errors in buffers of their own") {
  // The arena changes where errors live, not one arithmetic operation: every strategy's
  // weights on every rank must be bit for bit those of the same run with a buffer per layer.
  struct Case {
    std::string strategy;
    int ranks;
    bool graph;
    nlohmann::json values;
  };
  const std::vector<Case> cases = {
      {"dp", 1, false, nlohmann::json::object()},
      {"dp_buckets", 2, false, nlohmann::json::object()},
      {"lee", 2, false, {{"k", 3}, {"f", 1}}},
      {"veeriah", 4, false, {{"scheme", "c"}}},
      {"conv_split", 3, false, {{"shares", "uniform"}}},
      {"param_server", 3, false, nlohmann::json::object()},
      {"dp", 1, true, nlohmann::json::object()},
      {"dp_layerwise", 2, true, {{"sync_bn", "on"}}},
      {"hybrid", 2, true, {{"sync_bn", "on"}}},
      {"per_layer", 2, true, {{"assign", "fc=replicated"}}},
  };
  for (const Case& c : cases) {
    const Network net = c.graph ? testing::smooth_graph_network() : testing::small_network();
    SyntheticDataset data(net.input, net.classes(), 96, 21);
    const Schedule s = testing::schedule_with(net, c.strategy, c.ranks, 12, 6, c.values);
    const SgdConfig sgd{0.05f, 0.9f, 5e-4f};
    LocalExecutor shared(net, s, 5, sgd), own(net, s, 5, sgd);
    std::int64_t shared_floats = 0, own_floats = 0;
    for (int r = 0; r < own.ranks(); ++r) {
      shared_floats += shared.runtime(r).error_floats();
      own.runtime(r).set_share_errors(false);
      own_floats += own.runtime(r).error_floats();
    }
    const std::vector<double> shared_losses = shared.run(data), own_losses = own.run(data);
    std::printf("%-12s P=%d %-5s: error floats %lld in the arena plan, %lld in buffers of their own\n",
                c.strategy.c_str(), c.ranks, c.graph ? "graph" : "chain", static_cast<long long>(shared_floats),
                static_cast<long long>(own_floats));
    CHECK(shared_losses == own_losses);
    CHECK(all_weights(shared) == all_weights(own));
    CHECK(shared_floats <= own_floats);
  }
}

TEST_CASE("runtime: a chain's errors need the largest neighbouring pair, not their sum") {
  // small_network, dp, one rank, 8 images. Error storages (floats per image; relu and dropout
  // work in place): conv1 720, lrn1 720, pool1 180, conv2 72, pool2 32, fc1 16, fc2 12, fc3 5,
  // loss 5. Buffers of their own: 8 x 1,762 = 14,096 floats.
  // Shared: lrn1's backward-data op reads lrn1's errors and writes conv1's, so both live there:
  // at least 8 x (720 + 720) = 11,520 floats. Nothing else meets conv1's errors (they are
  // written last), and the rest (8 x 317 = 2,536 floats) fits beside lrn1's in conv1's place:
  // 11,520 floats in the arena, plus the loss layer's 40 of its own (its errors are never
  // written by a reader): 11,560.
  const Network net = testing::small_network();
  LocalExecutor ex(net, testing::make_schedule(net, "dp", 1, 8, 2), 5);
  Runtime& rt = ex.runtime(0);
  const std::int64_t shared = rt.error_floats();
  rt.set_share_errors(false);
  const std::int64_t own = rt.error_floats();
  std::printf("small network, batch 8: errors %lld floats shared, %lld in buffers of their own\n",
              static_cast<long long>(shared), static_cast<long long>(own));
  CHECK(own == 14096);
  CHECK(shared == 11560);
}
