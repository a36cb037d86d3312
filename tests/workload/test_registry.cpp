// The strategy registry: one schema per strategy, defaults filled, ranges enforced, and the
// run-spec that carries a run from `cnnpar run` to `cnnpar-run`.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <string>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "workload/registry.hpp"
#include "workload/run_spec.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

TEST_CASE("registry: every strategy is registered once with a builder and a documented schema") {
  // The registration table, read as text: one registered strategy per line of it.
  std::ifstream table(CNNPAR_SOURCE_DIR "/workload/strategies/registered.def");
  REQUIRE(table);
  std::size_t lines = 0;
  for (std::string line; std::getline(table, line);) lines += line.rfind("CNNPAR_STRATEGY(", 0) == 0 ? 1 : 0;
  CHECK(lines == strategy_registry().size());
  CHECK(strategy_names().size() == strategy_registry().size());

  std::set<std::string> names;
  for (const StrategySpec& spec : strategy_registry()) {
    INFO(spec.name);
    CHECK(names.insert(spec.name).second);
    // A name is a flag value and a CSV cell: lower case, digits and '_'.
    CHECK(!spec.name.empty());
    CHECK(spec.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos);
    CHECK(spec.build != nullptr);
    CHECK(!spec.summary.empty());
    CHECK(spec.min_ranks >= 1);
    for (const OptionSpec& o : spec.options) {
      CHECK(!o.help.empty());
      CHECK_NOTHROW(o.default_value());  // the default parses and lies in its own range
    }
    // A run-time probe is asked for and resolved by the same unit.
    CHECK((spec.probes_ranks == nullptr) == (spec.resolve_probe == nullptr));
    // The speedup baseline is a registered strategy that runs on one rank.
    StrategyOptions options;
    options.name = spec.name;
    options.ranks = 2 * spec.min_ranks;
    const StrategyOptions baseline = single_rank_baseline(options);
    CHECK(baseline.ranks == 1);
    CHECK(strategy_spec(baseline.name).min_ranks == 1);
  }
  // A key means one thing everywhere: k is lee's chunk size in lee, per_layer and hybrid.
  for (const SharedOption& shared : all_strategy_options())
    if (shared.spec.key == "k") CHECK(shared.strategies == std::vector<std::string>{"lee", "per_layer", "hybrid"});
}

TEST_CASE("registry: defaults come from the schema and land in Schedule::options") {
  const Network network = load_network("vgg-a");
  const Platform platform = load_platform("cori-haswell");
  StrategyOptions options;
  options.name = "lee";
  options.ranks = 4;
  CHECK(options.integer("k") == 9);  // Lee et al. Fig. 6's k and f
  CHECK(options.integer("f") == 2);
  const Schedule schedule = build_schedule(network, platform, options);
  CHECK(schedule.options.at("k") == 9);
  CHECK(schedule.options.at("f") == 2);
  options.name = "dp_buckets";
  CHECK(options.number("bucket_bytes") == 25.0 * 1024 * 1024);  // "25MiB"
  options.name = "per_layer";
  CHECK(options.text("sync") == "layerwise");
}

TEST_CASE("registry: values parse by type and range, errors name file, path and value") {
  const OptionSpec& k = *strategy_spec("lee").option("k");
  CHECK(k.parse("12", "f", "/k") == 12);
  CHECK(k.parse_value(nlohmann::json(12), "f", "/k") == 12);
  const auto error = [](const auto& call) {
    try {
      call();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error([&] { k.parse("twelve", "study.json", "/series/0/k"); }).find("study.json") != std::string::npos);
  CHECK(error([&] { k.parse("twelve", "study.json", "/series/0/k"); }).find("/series/0/k") != std::string::npos);
  CHECK(error([&] { k.parse_value(nlohmann::json(2.5), "f", "/k"); }).find("whole number") != std::string::npos);
  CHECK(error([&] { k.parse("0", "f", "/k"); }).find("at least 1") != std::string::npos);
  const OptionSpec& bucket = *strategy_spec("dp_buckets").option("bucket_bytes");
  CHECK(bucket.parse("1MiB", "f", "/bucket_bytes") == 1048576.0);
  CHECK(error([&] { bucket.parse("1 furlong", "f", "/bucket_bytes"); }).find("furlong") != std::string::npos);
  const OptionSpec& sync = *strategy_spec("per_layer").option("sync");
  CHECK(error([&] { sync.parse("sometimes", "f", "/sync"); }).find("end | layerwise | chunks") != std::string::npos);
  CHECK(error([] { strategy_spec("model_parallel", "study.json"); }).find("per_layer") != std::string::npos);
}

TEST_CASE("run-spec: the JSON round trip keeps every field, bad specs name file, path and value") {
  RunSpec spec;
  spec.network = "vgg-a-32";
  spec.platform = "local";
  spec.strategy.name = "lee";
  spec.strategy.values = {{"k", 3}, {"f", 1}};
  spec.strategy.global_batch = 64;
  spec.strategy.iterations = 5;
  spec.strategy.warmup_iterations = 2;
  spec.seed = 9;
  spec.learning_rate = 0.02;
  spec.comm_progress = "thread";
  spec.progress = true;
  spec.trace = "/tmp/t.json";
  const RunSpec back = run_spec_from_json(to_json(spec), "spec.json");
  CHECK(back.network == "vgg-a-32");
  CHECK(back.strategy.name == "lee");
  CHECK(back.strategy.values == spec.strategy.values);
  CHECK(back.strategy.global_batch == 64);
  CHECK(back.strategy.iterations == 5);
  CHECK(back.strategy.warmup_iterations == 2);
  CHECK(back.seed == 9);
  CHECK(back.learning_rate == 0.02);
  CHECK_FALSE(back.momentum.has_value());
  CHECK(back.comm_progress == "thread");
  CHECK(back.progress);
  CHECK(back.trace == "/tmp/t.json");

  nlohmann::json bad = to_json(spec);
  bad["options"]["bucket_bytes"] = "1MiB";  // lee has no bucket size
  try {
    run_spec_from_json(bad, "spec.json");
    FAIL("accepted an option lee does not have");
  } catch (const InputError& e) {
    CHECK(e.file() == "spec.json");
    CHECK(e.json_path() == "/options/bucket_bytes");
  }
  bad = to_json(spec);
  bad["options"]["k"] = "many";
  CHECK_THROWS_AS(run_spec_from_json(bad, "spec.json"), InputError);

  // Slowed-down ranks survive the hand-over; "RANK:FACTOR" is the only syntax.
  spec.slowdown = {{1, 2.0}, {3, 1.5}};
  CHECK(run_spec_from_json(to_json(spec), "spec.json").slowdown == spec.slowdown);
  spec.slowdown.clear();
  Slowdowns slowdowns;
  add_slowdown(slowdowns, "0:1", "command line", "/slowdown");
  add_slowdown(slowdowns, "12:2.5", "command line", "/slowdown");
  CHECK(slowdowns == Slowdowns{{0, 1.0}, {12, 2.5}});
  for (const char* text : {"1", "1:", ":2", "-1:2", "1:0.5", "1:0", "1:-2", "1:nan", "1:inf", "1:101", "a:2", "1:2x", "12:3"}) {
    INFO(text);
    try {
      add_slowdown(slowdowns, text, "command line", "/slowdown");
      FAIL("accepted " << text);
    } catch (const InputError& e) {
      CHECK(e.json_path() == "/slowdown");
      CHECK(e.value() == text);
    }
  }
  CHECK_NOTHROW(check_slowdown_ranks(slowdowns, 13, "command line", "/slowdown"));
  CHECK_THROWS_AS(check_slowdown_ranks(slowdowns, 12, "command line", "/slowdown"), InputError);

  // The largest seed the flags take (2^64 - 1) survives the file cnnpar run hands cnnpar-run.
  spec.seed = 18446744073709551615ULL;
  CHECK(run_spec_from_json(to_json(spec), "spec.json").seed == 18446744073709551615ULL);
}

TEST_CASE("calibration parts: a comma list of compute, network and progress, each once") {
  const CalibrationParts all = parse_calibration_parts(kAllCalibrationParts, "command line", "--calibrate-parts");
  CHECK((all.compute && all.network && all.progress));
  const CalibrationParts two = parse_calibration_parts("progress,network", "command line", "--calibrate-parts");
  CHECK((!two.compute && two.network && two.progress));
  CHECK(to_string(two) == "network,progress");  // written in the fixed order
  CHECK(to_string(CalibrationParts{false, false, false}).empty());
  for (const char* text : {"", "compute,", ",network", "compute,compute", "gemm", "Compute", "compute network"}) {
    INFO(text);
    try {
      parse_calibration_parts(text, "command line", "--calibrate-parts");
      FAIL("accepted '" << text << "'");
    } catch (const InputError& e) {
      CHECK(e.json_path() == "--calibrate-parts");
      CHECK(e.value() == text);
    }
  }
}

TEST_CASE("schedule_platform_key: a link model that differs leaves every strategy's schedule as it was") {
  const Network network = load_network("lenet-5");
  Platform platform = load_platform("bpt-cnn-cluster");  // node kinds: uneven batches and probes read them
  Platform links = platform;
  links.network.bandwidth_Bps *= 10;
  links.network.latency_s *= 3;
  links.network.overhead_s += 2e-6;
  links.network.message_factors = {{.from_bytes = 0, .latency_factor = 2, .bandwidth_factor = 0.5}};
  links.network.reduction_rate_Bps = 1e9;
  links.network.busy_bandwidth_fraction = 0.5;
  links.network.collective_concurrency = 2;
  links.network.injection_contention = true;
  links.network.link_burst_bytes = 256 * 1024;
  links.network.link_peak_bandwidth_Bps = 4e9;
  CHECK(schedule_platform_key(links) == schedule_platform_key(platform));

  for (const StrategySpec& spec : strategy_registry()) {
    for (const bool uneven : {false, true}) {
      INFO(spec.name << (uneven ? " uneven batch" : ""));
      StrategyOptions options;
      options.name = spec.name;
      options.ranks = std::max(4, spec.min_ranks);
      options.global_batch = 64;
      options.iterations = 4;  // param_server's IDPA needs more rounds than its increments
      options.uneven_batch = uneven;
      CHECK(to_json(build_schedule(network, links, options)) == to_json(build_schedule(network, platform, options)));
    }
  }

  // What builders do read changes the key.
  Platform elements = platform;
  elements.network.element_bytes = 8;
  CHECK(schedule_platform_key(elements) != schedule_platform_key(platform));
  Platform algorithms = platform;
  algorithms.network.algorithms["allreduce"] = Algorithm::recursive_doubling;
  CHECK(schedule_platform_key(algorithms) != schedule_platform_key(platform));
  Platform compute = platform;
  compute.nodes.peak_flops *= 2;
  CHECK(schedule_platform_key(compute) != schedule_platform_key(platform));
}
