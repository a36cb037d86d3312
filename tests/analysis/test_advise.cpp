// cnnpar advise's library: the rule's numbers worked by hand, and the exhaustive search
// checked against every assignment scored independently.
#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "experiments/advise.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "workload/strategies/per_layer.hpp"

using namespace cnnpar;

TEST_CASE("the rule on VGG-A, batch 256, 64 nodes: data for the conv layers, model for the fc layers", "[advise]") {
  const Network network = load_network("vgg-a");
  const std::vector<RuleRow> rule = advise_rule(network, load_platform("cori-haswell"), 256, 64);
  REQUIRE(rule.size() == 11);  // 8 conv + 3 fc
  // conv1: 3·224·224·256 = 38,535,168 against 64 maps · 3·3 = 576 → data.
  CHECK(rule[0].name == "conv1");
  CHECK(rule[0].data_side == 38535168.0);
  CHECK(rule[0].model_side == 576.0);
  // conv5_2: 3·14·14·256 = 150,528 against 512 · 3·3 = 4,608 → data.
  CHECK(rule[7].data_side == 150528.0);
  CHECK(rule[7].model_side == 4608.0);
  // fc6 counts as a conv layer with 1×1 maps and a 1×1 kernel: 3·1·1·256 = 768 against 4,096
  // outputs → model; fc8: 768 against 1,000 → model.
  CHECK(rule[8].name == "fc6");
  CHECK(rule[8].data_side == 768.0);
  CHECK(rule[8].model_side == 4096.0);
  CHECK(rule[10].model_side == 1000.0);
  for (const RuleRow& row : rule) {
    INFO(row.name);
    CHECK(row.choice == (row.name.rfind("fc", 0) == 0 ? PartitionKind::model : PartitionKind::data));
  }
}

TEST_CASE("the exhaustive search finds the fastest of all assignments, scored independently", "[advise]") {
  // LeNet-5 has 5 conv and fc layers: 3^5 = 243 assignments, searched exhaustively.
  const Network network = load_network("lenet-5");
  const Platform platform = load_platform("cori-haswell");
  StrategyOptions base;
  base.name = "per_layer";
  base.global_batch = 64;
  base.ranks = 4;
  const SearchResult result = search_assignments(
      network, engine_scorer(network, platform, base, [] { return make_analytic_engine(); }), {}, 5);
  CHECK(result.exhaustive);
  CHECK(result.space == 243);
  CHECK(result.scored == 243);
  REQUIRE_FALSE(result.best.empty());

  // Independently: every assignment as the text --assign takes, through build_schedule.
  const char* kinds[] = {"data", "model", "replicated"};
  std::vector<std::string> names;
  for (const Layer& layer : network.layers)
    if (layer.has_parameters()) names.push_back(layer.spec.name);
  REQUIRE(names.size() == 5);
  double fastest_s = 1e300;
  std::size_t refused = 0;
  for (int code = 0; code < 243; ++code) {
    std::string text;
    for (std::size_t i = 0, c = std::size_t(code); i < names.size(); ++i, c /= 3)
      text += (i ? "," : "") + names[i] + "=" + kinds[c % 3];
    StrategyOptions options = base;
    options.values["assign"] = text;
    try {
      const Trace trace = make_analytic_engine()->run(build_schedule(network, platform, options), platform);
      fastest_s = std::min(fastest_s, compute_metrics(trace).iteration_s);
    } catch (const InputError&) {
      ++refused;
    }
  }
  CHECK(result.infeasible == refused);
  CHECK(result.best.front().iteration_s == fastest_s);
  for (std::size_t i = 1; i < result.best.size(); ++i) CHECK(result.best[i - 1].iteration_s <= result.best[i].iteration_s);
  // The file advise writes reads back as the winner.
  const nlohmann::json file = assignment_file(network, result.best.front().assignment);
  std::string from_file;
  for (const std::string& name : names) from_file += (from_file.empty() ? "" : ",") + name + "=" + file["assign"][name].get<std::string>();
  CHECK(from_file == result.best.front().text);
}

TEST_CASE("the heuristic search on VGG-A starts from its seeds and never ends worse than them", "[advise]") {
  const Network network = load_network("vgg-a");
  const Platform platform = load_platform("cori-haswell");
  StrategyOptions base;
  base.name = "per_layer";
  base.global_batch = 256;
  base.ranks = 64;
  const AssignmentScorer score = engine_scorer(network, platform, base, [] { return make_analytic_engine(); });
  strategies::LayerAssignment all_data;
  all_data.kinds.assign(network.layers.size(), PartitionKind::data);
  const strategies::LayerAssignment hybrid = strategies::hybrid_assignment(network, 64);
  const SearchResult result = search_assignments(network, score, {all_data, hybrid}, 3);
  CHECK_FALSE(result.exhaustive);
  CHECK(result.space == 177147);  // 3^11
  ScoredAssignment seed;
  for (const strategies::LayerAssignment& start : {all_data, hybrid}) {
    REQUIRE(score(start, seed));
    CHECK(result.best.front().iteration_s <= seed.iteration_s);
  }
}
