#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "workload/study.hpp"

using namespace cnnpar;

namespace {
nlohmann::json minimal_study() {
  return nlohmann::json::parse(R"({
    "name": "s", "platform": "cori-haswell", "network": "vgg-a", "batch": 128, "nodes": [1, 2, 4],
    "series": [{"label": "lee", "strategy": "lee", "k": 6, "f": 1, "paper": {"speedup_at": {"4": 3.5}}},
               {"label": "dp n=64", "strategy": "dp", "batch": 64, "network": "alexnet"}]
  })");
}
}  // namespace

TEST_CASE("a study's series inherit the study's network and batch unless they override them") {
  const Study study = parse_study(minimal_study(), "s.json");
  REQUIRE(study.series.size() == 2);
  CHECK(study.nodes == std::vector<int>{1, 2, 4});
  CHECK(study.series[0].network == "vgg-a");
  CHECK(study.series[0].strategy.global_batch == 128);
  CHECK(study.series[0].strategy.integer("k") == 6);
  CHECK(study.series[0].paper_speedup_at.at(4) == 3.5);
  CHECK(study.series[1].network == "alexnet");
  CHECK(study.series[1].strategy.global_batch == 64);
  CHECK(study.series[1].strategy.origin == "s.json");
}

TEST_CASE("bad studies name the file, the JSON path and the value") {
  const auto expect = [](nlohmann::json document, const std::string& path) {
    try {
      parse_study(document, "bad.json");
      FAIL("no error for " << path);
    } catch (const InputError& error) {
      CHECK(error.file() == "bad.json");
      CHECK(error.json_path() == path);
    }
  };
  nlohmann::json unsorted = minimal_study();
  unsorted["nodes"] = {4, 2};
  expect(unsorted, "/nodes");
  nlohmann::json twice = minimal_study();
  twice["series"][1]["label"] = "lee";
  expect(twice, "/series/1/label");
  nlohmann::json typo = minimal_study();
  typo["series"][0]["kk"] = 3;
  expect(typo, "/series/0/kk");
  nlohmann::json paper = minimal_study();
  paper["series"][0]["paper"]["speedup_at"] = {{"many", 3.0}};
  expect(paper, "/series/0/paper/speedup_at/many");
  nlohmann::json slash = minimal_study();
  slash["name"] = "a/b";
  expect(slash, "/name");
}

TEST_CASE("every embedded study loads and names known networks and platforms") {
  const std::vector<std::string> names = scenario_names("studies");
  CHECK(names.size() >= 5);
  for (const std::string& name : names) {
    INFO(name);
    const Study study = load_study(name);
    CHECK(study.name == name);
    CHECK_NOTHROW(load_platform(study.platform));
    for (const StudySeries& series : study.series) CHECK_NOTHROW(load_network(series.network));
  }
}

TEST_CASE("published iteration times, weak scaling and findings of a study") {
  nlohmann::json document = minimal_study();
  document["nodes"] = {2, 4, 6};
  document["series"][0]["paper"]["iteration_s_at"] = {{"4", 0.00184}, {"6", 0.00224}};
  document["series"][0]["weak_scaling"] = true;
  document["findings"] = {"first paragraph", "second"};
  const Study study = parse_study(document, "s.json");
  CHECK(study.series[0].paper_iteration_s_at.at(4) == 0.00184);
  CHECK(study.series[0].paper_iteration_s_at.at(6) == 0.00224);
  CHECK(study.series[0].paper_speedup_at.at(4) == 3.5);
  CHECK(study.findings == std::vector<std::string>{"first paragraph", "second"});
  // Batch 128 at the first node count (2): 128·4/2 = 256 at 4 and 128·6/2 = 384 at 6.
  CHECK(series_options_at(study, study.series[0], 2).global_batch == 128);
  CHECK(series_options_at(study, study.series[0], 6).global_batch == 384);
  CHECK(series_options_at(study, study.series[0], 6).ranks == 6);
  // Not weak: the batch stays.
  CHECK(series_options_at(study, study.series[1], 6).global_batch == 64);
  document["findings"] = "one paragraph";
  CHECK(parse_study(document, "s.json").findings == std::vector<std::string>{"one paragraph"});
}

TEST_CASE("bad iteration times and weak scaling name the path") {
  const auto path_of = [](const nlohmann::json& document) {
    try {
      parse_study(document, "bad.json");
    } catch (const InputError& error) {
      return error.json_path();
    }
    return std::string("(no error)");
  };
  nlohmann::json negative = minimal_study();
  negative["series"][0]["paper"]["iteration_s_at"] = {{"4", -0.1}};
  CHECK(path_of(negative) == "/series/0/paper/iteration_s_at/4");
  nlohmann::json key = minimal_study();
  key["series"][0]["paper"]["iteration_s_at"] = {{"0", 0.1}};
  CHECK(path_of(key) == "/series/0/paper/iteration_s_at/0");
  // Batch 64 at 3 nodes scaled to 4: 64·4/3 images is not whole.
  nlohmann::json fraction = minimal_study();
  fraction["nodes"] = {3, 4};
  fraction["series"][1]["weak_scaling"] = true;
  CHECK(path_of(fraction) == "/series/1/weak_scaling");
}

TEST_CASE("published orderings parse and name their path when bad") {
  nlohmann::json document = minimal_study();
  document["orderings"] = {{{"claim", "lee is best at 4 nodes"}, {"best", "lee"}, {"at", 4}},
                           {{"claim", "more images, more speedup"}, {"increasing", {"dp n=64", "lee"}}},
                           {{"claim", "dp stops scaling"}, {"flat_after", "dp n=64"}, {"from", 2}, {"max_gain", 1.2}}};
  const Study study = parse_study(document, "s.json");
  REQUIRE(study.orderings.size() == 3);
  CHECK(study.orderings[0].kind == StudyOrdering::Kind::best);
  CHECK(study.orderings[0].nodes == 4);
  CHECK(study.orderings[1].labels == std::vector<std::string>{"dp n=64", "lee"});
  CHECK(study.orderings[2].max_gain == 1.2);
  const auto expect = [](nlohmann::json bad, const std::string& path) {
    try {
      parse_study(bad, "bad.json");
      FAIL("no error for " << path);
    } catch (const InputError& error) {
      CHECK(error.json_path() == path);
    }
  };
  nlohmann::json unknown = document;
  unknown["orderings"][0]["best"] = "nope";
  expect(unknown, "/orderings/0/best");
  nlohmann::json not_a_count = document;
  not_a_count["orderings"][2]["from"] = 3;
  expect(not_a_count, "/orderings/2/from");
  nlohmann::json two_kinds = document;
  two_kinds["orderings"][0]["increasing"] = {"lee", "dp n=64"};
  expect(two_kinds, "/orderings/0");
}
