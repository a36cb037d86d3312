// The validation's fit on measured runs (experiments/validation_fit.hpp): "measured" traces made by
// the analytic engine on a platform whose comm_compute_slowdown is known, a "calibrated"
// platform that has it wrong, and the fit must find the known value from the observed runs and
// bring the held-out ones to their own times.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <utility>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "base/output_files.hpp"
#include "experiments/validation_fit.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
namespace fs = std::filesystem;

namespace {

// The platform the runs were "measured" on: 2 one-core nodes, a 1 Gbit/s link, and a
// communication that slows compute by 1 + 0.5 while it progresses.
constexpr const char* kTruth = R"({
  "name": "truth", "nodes": {"count": 2, "cores": 1, "peak": "100Gf", "memory_bandwidth": "10GBps",
                             "efficiency": {"gemm": 0.5}, "default_efficiency": 0.3},
  "network": {"bandwidth": "1Gbps", "latency": "20us", "algorithms": {"allreduce": "ring", "allgather": "ring"}},
  "comm_compute_slowdown": 0.5})";

struct Folder {
  fs::path path = fs::temp_directory_path() / ("cnnpar-validation-fit-" + std::to_string(::getpid()));
  Folder() { fs::create_directories(path); }
  ~Folder() { fs::remove_all(path); }
};

nlohmann::json grid_json() {
  return nlohmann::json::parse(R"({
    "name": "fit-unit", "networks": ["veeriah-cifar10"],
    "strategies": ["dp_layerwise", {"strategy": "lee", "k": 3, "f": 1}],
    "batches": [32, 64], "ranks": [2],
    "fit": {"free": ["comm_compute_slowdown"], "observe": {"strategies": ["dp_layerwise"]}}
  })");
}

/** Every configuration of `grid` "measured": its analytic trace on the truth `where` gives it,
 *  written into `folder`, and a result naming the platform file `where` gives it. */
class Measured {
 public:
  using Where = std::function<std::pair<const Platform*, std::string>(const ValidationConfig&)>;
  Measured(const ValidationGrid& grid, const fs::path& folder, const Where& where) {
    const Network network = load_network("veeriah-cifar10");
    for (const ValidationConfig& config : validation_configs(grid)) {
      const auto [truth, platform_file] = where(config);
      const Trace trace = make_analytic_engine()->run(build_schedule(network, *truth, config.strategy), *truth);
      traces_.push_back((folder / (config_key(grid, config) + ".json")).string());
      write_file_atomic(traces_.back(), to_json(trace).dump());
      ConfigResult r;
      r.key = config_key(grid, config);
      r.label = config_label(grid, config);
      r.strategy = strategy_label(config.strategy);
      r.batch = config.strategy.global_batch;
      r.platform = platform_file;
      results_.push_back(r);
    }
  }
  std::vector<ValidationFitInput> inputs() const {
    std::vector<ValidationFitInput> out;
    for (std::size_t i = 0; i < results_.size(); ++i) out.push_back({&results_[i], traces_[i]});
    return out;
  }

 private:
  std::vector<ConfigResult> results_;
  std::vector<std::string> traces_;
};

}  // namespace

TEST_CASE("validation fit: the slowdown is found from the observed runs, and the held-out ones come right", "[validation]") {
  Folder folder;
  const ValidationGrid grid = parse_validation_grid(grid_json(), "grid.json");
  const Platform truth = parse_platform(nlohmann::json::parse(kTruth), "truth.json");
  // The "calibration" got the slowdown wrong: 0.2 instead of 0.5.
  nlohmann::json calibrated = nlohmann::json::parse(kTruth);
  calibrated["comm_compute_slowdown"] = 0.2;
  const std::string platform_file = (folder.path / "calibrated.json").string();
  write_file_atomic(platform_file, calibrated.dump());

  // Every configuration "measured": its analytic trace on the truth. dp_layerwise at batches
  // 32 and 64 is observed (2 runs for 1 parameter); lee at both batches is held out.
  Measured measured(grid, folder.path, [&](const ValidationConfig&) { return std::make_pair(&truth, platform_file); });
  const std::vector<ValidationFitInput> inputs = measured.inputs();

  const ValidationFit fit = fit_validation(grid, inputs, [] { return make_analytic_engine(); });
  REQUIRE(fit.groups.size() == 1);  // one calibrated platform
  const ValidationFitGroup& g = fit.groups[0];
  CHECK(g.skipped.empty());
  CHECK(g.observed.size() == 2);
  CHECK(g.held_out.size() == 2);
  REQUIRE(g.fitted.size() == 1);
  // The observed runs were made with 0.5: an exact fit finds it.
  CHECK(g.fitted[0] == Approx(0.5).epsilon(1e-4));
  // Held out: wrong by the 0.2 slowdown before (lee overlaps, so it was predicted too fast),
  // their own times after.
  CHECK(fit.held_out == 2);
  for (double before : g.before_percent) CHECK(before < -0.1);
  for (double after : g.after_percent) CHECK(std::abs(after) < 1e-3);
  CHECK(fit.held_out_mape_after_percent < 1e-3);
  CHECK(fit.held_out_mape_before_percent > 0.1);
  const nlohmann::json json = to_json(fit);
  CHECK(json.at("groups").at(0).at("free").at(0).at("fitted").get<double>() == Approx(0.5).epsilon(1e-4));
}

TEST_CASE("validation fit: a group with too few observed runs is skipped, and a bad observe is refused", "[validation]") {
  nlohmann::json g = grid_json();
  g["fit"]["observe"]["strategies"] = {"lee k=9 f=2"};  // not a strategy of the grid
  try {
    (void)parse_validation_grid(g, "grid.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/fit/observe/strategies/0");
  }
  g = grid_json();
  g["fit"]["observe"]["batches"] = {48};
  try {
    (void)parse_validation_grid(g, "grid.json");
    FAIL("accepted");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/fit/observe/batches/0");
  }
  // Observing batch 32 only: one run per parameter is enough; observing nothing is not.
  const ValidationGrid grid = parse_validation_grid(grid_json(), "grid.json");
  CHECK(grid.fit.observes("dp_layerwise", 64));
  CHECK_FALSE(grid.fit.observes("lee k=3 f=1", 32));
  Folder folder;
  write_file_atomic((folder.path / "p.json").string(), kTruth);
  ConfigResult held;
  held.strategy = "lee k=3 f=1";
  held.batch = 32;
  held.platform = (folder.path / "p.json").string();
  const Platform truth = parse_platform(nlohmann::json::parse(kTruth), "truth.json");
  ValidationConfig lee = validation_configs(grid)[2];
  const Trace trace = make_analytic_engine()->run(build_schedule(load_network("veeriah-cifar10"), truth, lee.strategy), truth);
  write_file_atomic((folder.path / "t.json").string(), to_json(trace).dump());
  const ValidationFit fit = fit_validation(grid, {{&held, (folder.path / "t.json").string()}}, [] { return make_analytic_engine(); });
  REQUIRE(fit.groups.size() == 1);
  CHECK(fit.groups[0].skipped == "0 measured run(s) observed for 1 free parameter(s)");
  CHECK(fit.held_out == 0);
}

TEST_CASE("validation fit: a recalibration belongs to its group's calibration, each run predicted on its own file", "[validation]") {
  CHECK(group_calibration("/w/calibration/vgg_1Gbps_p2-recalibrated-3.json") == "/w/calibration/vgg_1Gbps_p2.json");
  CHECK(group_calibration("/w/calibration/vgg_1Gbps_p2.json") == "/w/calibration/vgg_1Gbps_p2.json");
  CHECK(group_calibration("/w/x-recalibrated-.json") == "/w/x-recalibrated-.json");
  CHECK(group_calibration("/w/x-recalibrated-2b.json") == "/w/x-recalibrated-2b.json");
  CHECK(recalibrated_platform_file("/w/calibration/vgg_1Gbps_p2.json", 3) ==
        "/w/calibration/vgg_1Gbps_p2-recalibrated-3.json");

  Folder folder;
  const ValidationGrid grid = parse_validation_grid(grid_json(), "grid.json");
  // The machine computed 20 % slower for the lee runs, and their group was recalibrated: the
  // recalibration has the slower peak (80 instead of 100 GFLOP/s), both have the wrong slowdown.
  nlohmann::json slow_truth = nlohmann::json::parse(kTruth);
  slow_truth["nodes"]["peak"] = "80Gf";
  const Platform fast = parse_platform(nlohmann::json::parse(kTruth), "truth.json");
  const Platform slow = parse_platform(slow_truth, "slow.json");
  nlohmann::json calibrated = nlohmann::json::parse(kTruth), recalibrated = slow_truth;
  calibrated["comm_compute_slowdown"] = 0.2;
  recalibrated["comm_compute_slowdown"] = 0.2;
  const std::string calibrated_file = (folder.path / "calibrated.json").string();
  const std::string recalibrated_file = (folder.path / "calibrated-recalibrated-1.json").string();
  write_file_atomic(calibrated_file, calibrated.dump());
  write_file_atomic(recalibrated_file, recalibrated.dump());

  Measured measured(grid, folder.path, [&](const ValidationConfig& config) {
    const bool lee = config.strategy.name == "lee";
    return std::make_pair(lee ? &slow : &fast, lee ? recalibrated_file : calibrated_file);
  });
  const std::vector<ValidationFitInput> inputs = measured.inputs();

  const ValidationFit fit = fit_validation(grid, inputs, [] { return make_analytic_engine(); });
  REQUIRE(fit.groups.size() == 1);  // the recalibration joins its group
  const ValidationFitGroup& g = fit.groups[0];
  CHECK(g.platform == calibrated_file);
  CHECK(g.platforms == 2);
  CHECK(g.skipped.empty());
  REQUIRE(g.fitted.size() == 1);
  CHECK(g.fitted[0] == Approx(0.5).epsilon(1e-4));
  // Held out on their own (slower) platform with the fitted slowdown: their own times. On the
  // group's first platform they would be about 20 % fast in compute.
  REQUIRE(g.after_percent.size() == 2);
  for (double after : g.after_percent) CHECK(std::abs(after) < 1e-3);
  for (double before : g.before_percent) CHECK(before < -0.1);
  CHECK(to_json(fit).at("groups").at(0).at("platforms") == 2);
}
