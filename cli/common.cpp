#include "cli/common.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "cli/flags.hpp"
#include "model/error.hpp"
#include "model/json_node.hpp"
#include "model/scenarios.hpp"
#include "model/units.hpp"

namespace cnnpar::cli {

void add_scenario_options(CLI::App& sub, ScenarioOptions& o) {
  flags::network(sub, o.network);
  flags::platform(sub, o.platform);
  o.strategy.add(sub, kDefaultStrategy);
  flags::batch(sub, o.batch);
  flags::iterations(sub, o.iterations);
  flags::warmup(sub, o.warmup);
  flags::uneven_batch(sub, o.uneven_batch);
}

LoadedScenario load_scenario_options(const ScenarioOptions& o) {
  LoadedScenario s;
  s.network = load_network(o.network);
  s.platform = load_platform(o.platform);
  s.strategy.name = o.strategy.strategy();
  s.strategy.global_batch = o.batch;
  s.strategy.iterations = o.iterations;
  s.strategy.warmup_iterations = o.warmup;
  s.strategy.uneven_batch = o.uneven_batch;
  s.strategy.recompute_columns = o.strategy.recompute_columns();
  s.strategy.origin = "command line";
  s.strategy.values = o.strategy.values();
  return s;
}

void check_simgrid_settings(const std::string& engine, const std::string& network_model, const std::string& platform_xml) {
  if (network_model != "CM02" && network_model != "LV08")
    throw InputError("command line", "--network-model", network_model, "expected CM02 or LV08");
  if (engine != "simgrid") {
    if (network_model != "CM02")
      throw InputError("command line", "--network-model", network_model, "only the SimGrid engine has one (add --engine simgrid)");
    if (!platform_xml.empty())
      throw InputError("command line", "--platform-xml", platform_xml, "only the SimGrid engine reads one (add --engine simgrid)");
  }
  std::error_code ec;
  if (!platform_xml.empty() && !std::filesystem::is_regular_file(platform_xml, ec))
    throw InputError("command line", "--platform-xml", platform_xml, "no such file");
}

std::string platform_label(const Platform& platform, const std::string& platform_xml) {
  if (platform_xml.empty()) return platform.name;
  return std::filesystem::path(platform_xml).filename().string() + " (nodes of " + platform.name + ")";
}

Progress::Progress(std::string label, bool forced, bool quiet)
    : label_(std::move(label)),
      enabled_(!quiet && (forced || isatty(STDERR_FILENO) == 1)),
      terminal_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { finish(); }

void Progress::update(int done, int total) {
  if (!enabled_) return;
  active_ = terminal_;
  std::fprintf(stderr, terminal_ ? "\r%s: %d/%d" : "%s: %d/%d\n", label_.c_str(), done, total);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!active_) return;
  active_ = false;
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

std::unique_ptr<Network> trace_network(const Trace& trace) {
  for (const char* key : {"network_argument", "network"}) {
    const auto found = trace.metadata.is_object() ? trace.metadata.find(key) : trace.metadata.end();
    if (!trace.metadata.is_object() || found == trace.metadata.end() || !found->is_string()) continue;
    try {
      return std::make_unique<Network>(load_network(found->get<std::string>()));
    } catch (const InputError&) {
    }
  }
  return nullptr;
}

}  // namespace cnnpar::cli
