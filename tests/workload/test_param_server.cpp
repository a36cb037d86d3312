// The param_server strategy (workload/strategies/param_server.hpp, BPT-CNN Sec. 3.3): what it
// builds for idpa|udpa x sgwu|agwu, the IDPA plan of a hand-worked case (Algorithm 3.1, Eq. 2-6),
// the server option and the inputs it refuses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "workload/strategies/param_server.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using Counts = std::vector<std::int64_t>;

namespace {

// lenet-5's weights and biases, counted from scenarios/networks/lenet-5.json (fan-in x maps +
// maps): c1 1·25·6 + 6 = 156, c3 6·25·16 + 16 = 2,416, c5 16·25·120 + 120 = 48,120,
// f6 120·84 + 84 = 10,164, output 84·10 + 10 = 850: 61,706 parameters of 4 B.
constexpr double kLenetWeightBytes = 4.0 * 61706;

const Network& lenet() {
  static const Network network = load_network("lenet-5");
  return network;
}

/** 4 identical nodes; `speeds` (one per rank) scale them when given. */
Platform four_nodes(std::vector<double> speeds = {}) {
  Platform platform;
  platform.name = "ps-test";
  platform.nodes.count = 4;
  platform.nodes.peak_flops = 1e12;
  platform.nodes.speed_factors = std::move(speeds);
  platform.resolve_speed_factors();
  return platform;
}

StrategyOptions ps_options(int ranks, const std::string& partition, const std::string& update) {
  StrategyOptions options;
  options.name = "param_server";
  options.ranks = ranks;
  options.global_batch = 48;
  options.iterations = 3;
  options.warmup_iterations = 1;
  const std::string per_sample = ranks == 3 ? "0.002,0.001" : "0.002,0.001,0.003";  // s, one per worker
  options.set("partition", partition).set("update", update).set("per_sample", per_sample).set("increments", 2);
  return options;
}

std::string path_of_error(const StrategyOptions& options) {
  try {
    build_schedule(lenet(), four_nodes(), options);
  } catch (const InputError& error) {
    return error.json_path();
  }
  return "(built)";
}

std::string messages(const std::vector<VerifyIssue>& issues) {
  std::string all;
  for (const VerifyIssue& issue : issues) all += issue.message + "\n";
  return all;
}

}  // namespace

TEST_CASE("param_server builds and verifies for idpa|udpa x sgwu|agwu at 3 and 4 ranks", "[param_server]") {
  for (int ranks : {3, 4}) {
    for (const std::string partition : {"idpa", "udpa"}) {
      for (const std::string update : {"sgwu", "agwu"}) {
        INFO(partition << " " << update << " on " << ranks << " ranks");
        const Schedule schedule = build_schedule(lenet(), four_nodes(), ps_options(ranks, partition, update));
        CHECK(messages(verify(schedule)).empty());
        CHECK(messages(verify_partitions(schedule, lenet())).empty());
        const int m = ranks - 1;
        // K = 3; IDPA with A = 2: K' = K + ceil(A/2) - 1 = 3 + 1 - 1 = 3 rounds (Eq. 6).
        const int K = 3;
        CHECK(schedule.iterations == K);
        // The server (rank 0, the default) runs only serve ops: one per round (SGWU) or one (AGWU).
        const auto& server = schedule.programs[0].ops;
        CHECK(std::all_of(server.begin(), server.end(), [](const Op& op) { return op.kind == OpKind::serve; }));
        CHECK(server.size() == std::size_t(update == "sgwu" ? K : 1));
        CHECK(schedule.serves.size() == server.size());
        std::size_t entries = 0;
        for (std::size_t s = 0; s < schedule.serves.size(); ++s) {
          const Serve& serve = schedule.serves[s];
          CHECK(serve.order == (update == "sgwu" ? ServeOrder::together : ServeOrder::arrival));
          entries += serve.entries.size();
          if (update == "sgwu") {
            CHECK(serve.entries.size() == std::size_t(m));  // every worker's push of round s
            for (const ServeEntry& entry : serve.entries) CHECK(entry.round == int(s));
          }
        }
        CHECK(entries == std::size_t(m * K));
        for (int w = 1; w < ranks; ++w) {
          const auto& ops = schedule.programs[std::size_t(w)].ops;
          CHECK(std::count_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::mark; }) == K);
          CHECK(std::none_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::serve; }));
        }
        // Eq. 11: every round each worker pushes c_w and pulls c_w: 2·c_w·m·K bytes in all.
        double bytes = 0;
        for (const Collective& c : schedule.collectives) bytes += c.bytes;
        CHECK(schedule.collectives.size() == std::size_t(2 * m * K));
        CHECK(bytes == Approx(2 * kLenetWeightBytes * m * K).epsilon(1e-12));
      }
    }
  }
}

TEST_CASE("param_server IDPA plan: per-round samples follow Algorithm 3.1 for a hand-worked case", "[param_server]") {
  // 3 ranks: server 0, workers 1 and 2 at speed factors 1 and 2 (mu = 1e12, 2e12 FLOP/s).
  // N = 60, A = 3, K = 5, t̄ = (0.2, 0.1) s per sample; floor(N/A) = 20.
  //   a = 1 (Eq. 2): n_1 = floor(20·1/3) = 6, n_2 = 20 - 6 = 14                  -> held (6, 14)
  //   a = 2: mean t̄ = 0.15 s; T_2 = 20·2·0.15/2 = 3 s (Eq. 3); n'_1 = 3/0.2 = 15 (Eq. 4);
  //          n_1 = 15 - 6 = 9, n_2 = 20 - 9 = 11 (Eq. 5)                           -> held (15, 25)
  //   a = 3: T_3 = 20·3·0.15/2 = 4.5 s; n'_1 = 4.5/0.2 = 22.5 -> 22; n_1 = 22 - 15 = 7,
  //          n_2 = 20 - 7 = 13                                                     -> held (22, 38)
  // Rounds (Eq. 6): K + ceil(A/2) - 1 = 5 + 2 - 1 = 6; rounds 3..5 train the whole partition.
  const Platform platform = four_nodes({1.0, 1.0, 2.0, 1.0});
  StrategyOptions options;
  options.name = "param_server";
  options.ranks = 3;
  options.global_batch = 60;
  options.iterations = 5;
  options.set("partition", "idpa").set("increments", 3).set("per_sample", "0.2,0.1");
  const strategies::ServerPlan plan = strategies::param_server_plan(lenet(), platform, options);
  CHECK(plan.server == 0);
  CHECK(plan.workers == std::vector<int>{1, 2});
  CHECK(plan.rounds == 6);
  CHECK(plan.samples == std::vector<Counts>{{6, 14}, {15, 25}, {22, 38}});
  CHECK(plan.offsets == Counts{0, 22});
  CHECK(plan.per_sample_s == std::vector<double>{0.2, 0.1});
  const Counts round_samples[] = {{6, 14}, {15, 25}, {22, 38}, {22, 38}, {22, 38}, {22, 38}};
  for (int r = 0; r < 6; ++r)
    for (int j = 0; j < 2; ++j) CHECK(plan.samples_in_round(j, r) == round_samples[r][std::size_t(j)]);

  // The built schedule trains those images: each round's first forward op covers the worker's
  // first n images from its offset (the whole partition, no image range, once it holds all).
  const Schedule schedule = build_schedule(lenet(), platform, options);
  CHECK(schedule.iterations == 6);
  for (int w = 1; w <= 2; ++w) {
    const std::int64_t offset = plan.offsets[std::size_t(w - 1)];
    std::vector<Range> images;
    std::vector<std::int64_t> batches;
    bool round_start = true;
    for (const Op& op : schedule.programs[std::size_t(w)].ops) {
      if (op.kind == OpKind::mark) round_start = true;
      if (op.kind != OpKind::compute || !round_start) continue;
      images.push_back(op.images);
      batches.push_back(op.batch);
      round_start = false;
    }
    REQUIRE(images.size() == 6);
    for (int r = 0; r < 6; ++r) {
      INFO("worker " << w << " round " << r);
      const std::int64_t n = round_samples[r][std::size_t(w - 1)];
      CHECK(batches[std::size_t(r)] == n);
      CHECK(images[std::size_t(r)] == (r < 2 ? Range{offset, n} : Range{}));
    }
    const LayerPartition& partition = schedule.programs[std::size_t(w)].partitions.at(0);
    CHECK(partition.kind == PartitionKind::data);
    CHECK(partition.batch == Range{offset, round_samples[5][std::size_t(w - 1)]});
  }
  CHECK(schedule.programs[0].partitions.at(0).kind == PartitionKind::none);
}

TEST_CASE("param_server server = 2: the serve ops run on rank 2, ranks 0 and 1 are the workers", "[param_server]") {
  StrategyOptions options = ps_options(3, "udpa", "agwu");
  options.set("server", 2);
  const strategies::ServerPlan plan = strategies::param_server_plan(lenet(), four_nodes(), options);
  CHECK(plan.server == 2);
  CHECK(plan.workers == std::vector<int>{0, 1});
  // UDPA: 48 images over 2 workers, 24 each from the first round.
  CHECK(plan.samples == std::vector<Counts>{{24, 24}});
  const Schedule schedule = build_schedule(lenet(), four_nodes(), options);
  CHECK(messages(verify(schedule)).empty());
  for (int r = 0; r < 3; ++r) {
    const auto& ops = schedule.programs[std::size_t(r)].ops;
    const auto serves = std::count_if(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::serve; });
    CHECK(serves == (r == 2 ? 1 : 0));
  }
  REQUIRE(schedule.serves.size() == 1);
  for (const ServeEntry& entry : schedule.serves[0].entries) {
    CHECK(entry.worker != 2);
    const Collective& push = schedule.collectives[std::size_t(entry.push)];
    CHECK(push.group == std::vector<int>{entry.worker, 2});
    CHECK(push.root == entry.worker);
    CHECK(schedule.collectives[std::size_t(entry.reply)].root == 2);
  }
}

TEST_CASE("param_server refuses one rank, a server out of range and a per-sample list of the wrong length", "[param_server]") {
  StrategyOptions one = ps_options(3, "udpa", "agwu");
  one.ranks = 1;
  CHECK(path_of_error(one) == "/nodes");
  CHECK_THROWS_AS(strategies::param_server_plan(lenet(), four_nodes(), one), InputError);

  StrategyOptions server = ps_options(3, "udpa", "agwu");
  server.set("server", 3);
  CHECK(path_of_error(server) == "/server");

  StrategyOptions times = ps_options(4, "idpa", "sgwu");
  times.set("per_sample", "0.002,0.001");  // 2 times for 3 workers
  CHECK(path_of_error(times) == "/per_sample");
}

TEST_CASE("param_server refuses an IDPA plan that leaves a worker no sample", "[param_server]") {
  // 4 ranks: server 0, workers 1..3 at speed factors 0.01, 1, 1; N = 32, A = 1 (Eq. 2 only):
  // n_1 = floor(32 · 0.01 / 2.01) = floor(0.16) = 0. An empty data partition tiles no layer, so
  // the schedule would fail verify_partitions (cnnpar run, cnnpar-run): bad input instead.
  StrategyOptions options;
  options.name = "param_server";
  options.ranks = 4;
  options.global_batch = 32;
  options.iterations = 2;
  options.set("partition", "idpa").set("increments", 1).set("per_sample", "0.1,0.1,0.1");
  const Platform platform = four_nodes({1.0, 0.01, 1.0, 1.0});
  try {
    build_schedule(lenet(), platform, options);
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.json_path() == "/batch");
    CHECK(error.value() == "32");
    CHECK(std::string(error.what()).find("worker rank 1 no sample") != std::string::npos);
  }
  // With A = 2 the same worker starts with none (floor(16 · 0.01 / 2.01) = 0) but Eq. 3-5 give
  // it some later (T_2 = 16·2·0.1/3 s, n'_1 = floor(10.67) = 10): its rounds from the second on.
  options.iterations = 3;
  options.set("increments", 2);
  const strategies::ServerPlan plan = strategies::param_server_plan(lenet(), platform, options);
  CHECK(plan.samples.front()[0] == 0);
  CHECK(plan.samples.back()[0] == 10);
  const Schedule schedule = build_schedule(lenet(), platform, options);
  CHECK(messages(verify(schedule)).empty());
  CHECK(messages(verify_partitions(schedule, lenet())).empty());
}
