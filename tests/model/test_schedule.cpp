#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

TEST_CASE("a Schedule round-trips through JSON unchanged") {
  const Network network = load_network("vgg-a-32");
  const Platform platform = load_platform("local");
  StrategyOptions options;
  options.name = "lee";
  options.ranks = 2;
  options.global_batch = 64;
  options.set("k", 3).set("f", 1);
  const Schedule schedule = build_schedule(network, platform, options);
  const nlohmann::json first = to_json(schedule);
  const Schedule again = schedule_from_json(first, "roundtrip.json");
  CHECK(to_json(again) == first);
  REQUIRE(again.programs.size() == schedule.programs.size());
  const Op& op = again.programs[1].ops[1];
  CHECK(op.kernel == schedule.programs[1].ops[1].kernel);
  CHECK(op.gemm == schedule.programs[1].ops[1].gemm);
  CHECK(verify(again).empty());
}

TEST_CASE("bad schedule JSON names the path and value") {
  nlohmann::json document = nlohmann::json::parse(R"({
    "iterations": 1,
    "collectives": [{"kind": "allreduce", "bytes": 8, "group": [0, 7]}],
    "programs": [{"ops": [{"op": "post", "collective": 0}, {"op": "wait", "collective": 0}]}]
  })");
  try {
    schedule_from_json(document, "s.json");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.json_path() == "/collectives/0/group/1");
    CHECK(error.value() == "7");
  }
  document["collectives"][0]["group"] = {0};
  document["programs"][0]["ops"][0]["op"] = "launch";
  CHECK_THROWS_AS(schedule_from_json(document, "s.json"), InputError);
  document["programs"][0]["ops"][0] = {{"op", "compute"}, {"label", "x"}, {"phase", "forward"}, {"kernel", "gemm 0x1x2"}, {"flops", 1}};
  try {
    schedule_from_json(document, "s.json");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.json_path() == "/programs/0/ops/0/kernel");
  }
}

TEST_CASE("a Trace round-trips through JSON") {
  Trace trace;
  trace.engine = "analytic";
  trace.warmup_iterations = 1;
  trace.metadata = {{"strategy", "dp"}};
  RankTrace rank;
  rank.rank = 0;
  rank.compute.push_back({3, "conv1.fwd", 0, Phase::forward, KernelClass::gemm, 1e9, 0.5, 0.75});
  rank.collectives.push_back({0, "allreduce conv1", CollectiveKind::allreduce, 4096, 1, 1.0, 1.0, 1.5, 1.2, 1.5});
  rank.marks.push_back({0, 2.0});
  trace.ranks.push_back(rank);
  const nlohmann::json first = to_json(trace);
  const Trace again = trace_from_json(first, "t.json");
  CHECK(to_json(again) == first);
  CHECK(again.ranks[0].collectives[0].wait_start_s == 1.2);
  nlohmann::json broken = first;
  broken["ranks"][0]["compute"][0]["end"] = 0.1;  // before its start
  CHECK_THROWS_AS(trace_from_json(broken, "t.json"), InputError);
}
