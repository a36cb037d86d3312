#include "cli/common.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "model/error.hpp"
#include "model/json_node.hpp"
#include "model/scenarios.hpp"
#include "model/units.hpp"

namespace cnnpar::cli {

void add_scenario_options(CLI::App& sub, ScenarioOptions& o) {
  sub.add_option("--network", o.network, "network name (scenarios/networks) or JSON path")->capture_default_str();
  sub.add_option("--platform", o.platform, "platform name (scenarios/platforms) or JSON path")->capture_default_str();
  o.strategy.add(sub, kDefaultStrategy);
  sub.add_option("--batch", o.batch, "global mini-batch N (images per iteration over all nodes)")->capture_default_str();
  sub.add_option("--iterations", o.iterations, "iterations, warm-up included")->capture_default_str();
  sub.add_option("--warmup", o.warmup, "leading iterations excluded from the metrics")->capture_default_str();
  sub.add_flag("--uneven-batch", o.uneven_batch,
               "allow a batch that the node count does not divide (ranks take ceil or floor of N/P images)");
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

}  // namespace cnnpar::cli
