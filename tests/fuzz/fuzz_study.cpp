// Study files (scenarios/studies): parse_study, which also checks each series' strategy
// options against the registry; series on an embedded network are then validated against
// it, as `cnnpar report` does before predicting.
#include <algorithm>
#include <map>

#include "model/scenarios.hpp"
#include "tests/fuzz/fuzz_common.hpp"
#include "workload/strategy.hpp"
#include "workload/study.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  try {
    const nlohmann::json document = parse_json_text(fuzz::text_of(data, size), fuzz::kOrigin);
    const Study study = parse_study(document, fuzz::kOrigin);
    const nlohmann::json& nodes = document.at("nodes");
    for (std::size_t i = 0; i < study.nodes.size(); ++i) {
      FUZZ_REQUIRE(study.nodes[i] >= 1, "nodes");
      if (nodes.at(i).is_number()) FUZZ_REQUIRE(double(study.nodes[i]) == nodes.at(i).get<double>(), "nodes");
    }
    for (const StudySeries& series : study.series) {
      FUZZ_REQUIRE(series.strategy.global_batch >= 1, "batch");
      FUZZ_REQUIRE((series.strategy.iterations >= 1 && series.strategy.warmup_iterations >= 0),
                   "iterations");
      // Embedded networks only: a path would make the target read files.
      static const std::vector<std::string> names = scenario_names("networks");
      static std::map<std::string, Network> networks;
      if (std::find(names.begin(), names.end(), series.network) == names.end()) continue;
      if (!networks.count(series.network)) networks.emplace(series.network, load_network(series.network));
      validate_strategy_options(networks.at(series.network), series.strategy);
    }
    FUZZ_REQUIRE_SAME(document, "iterations", study.series.front().strategy.iterations);
    FUZZ_REQUIRE_SAME(document, "warmup", study.series.front().strategy.warmup_iterations);
  } catch (const InputError&) {
  }
  return 0;
}
