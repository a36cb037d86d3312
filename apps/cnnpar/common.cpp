#include "apps/cnnpar/common.hpp"

#include "analysis/components.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/units.hpp"
#include "engines/registry.hpp"
#include "model/scenarios.hpp"

namespace cnnpar::cli {

CLI::Option* add_ring_messages_option(CLI::App& sub, std::optional<int>& count) {
  return sub.add_option("--ring-messages", count,
                        fmt::format("engine simgrid: the most messages a rank sends per ring collective, each carrying "
                                    "consecutive steps (docs/design.md bounds the error); 0 = one per step (default {})",
                                    default_ring_messages()));
}

void add_scenario_options(CLI::App& sub, ScenarioOptions& o) {
  flags::network(sub, o.network);
  flags::platform(sub, o.platform);
  o.strategy.add(sub, kPredictedDefaultStrategy);
  flags::batch(sub, o.batch);
  flags::iterations(sub, o.iterations);
  flags::warmup(sub, o.warmup);
  flags::uneven_batch(sub, o.uneven_batch);
  flags::set_values(sub, o.sets);
}

LoadedScenario load_scenario_options(const ScenarioOptions& o) {
  LoadedScenario s;
  s.network = load_network(o.network);
  for (const std::string& text : o.sets) s.sets.push_back(parse_override(text, "command line", "--set"));
  ScenarioDocument platform = load_scenario("platforms", o.platform);
  s.platform = platform_with_overrides(platform.json, platform.origin, s.sets, "command line", "--set");
  s.platform_document = std::move(platform.json);
  s.platform_file = std::move(platform.origin);
  s.strategy.name = o.strategy.strategy();
  s.strategy.global_batch = o.batch;
  s.strategy.iterations = o.iterations;
  s.strategy.warmup_iterations = o.warmup;
  s.strategy.uneven_batch = o.uneven_batch;
  s.strategy.recompute_columns = o.strategy.recompute_columns();
  s.strategy.conv = o.strategy.conv();
  s.strategy.origin = "command line";
  s.strategy.values = o.strategy.values();
  apply_strategy_overrides(s.strategy, s.sets, "command line", "--set");
  return s;
}

Progress::Progress(std::string label, bool forced, bool quiet)
    : label_(std::move(label)),
      enabled_(!quiet && (forced || isatty(STDERR_FILENO) == 1)),
      terminal_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { finish(); }

void Progress::update(int done, int total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed_s = std::chrono::duration<double>(now - started_).count();
  const double since_shown_s = std::chrono::duration<double>(now - shown_).count();
  // At most 10 redraws a second on a terminal, one line a second in a log; always the last.
  if (done < total && shown_once_ && since_shown_s < (terminal_ ? 0.1 : 1.0)) return;
  shown_ = now;
  shown_once_ = true;
  active_ = terminal_;
  std::string rate;
  if (done > 0 && done < total && elapsed_s > 0.5)  // the ETA assumes the rest runs at the mean rate so far
    rate = fmt::format(", {:.1f}/s, ETA {}", done / elapsed_s, format_remaining(elapsed_s * (total - done) / done));
  else if (done == total && elapsed_s > 0.5)
    rate = fmt::format(", {}", format_seconds(elapsed_s));
  // A terminal redraws one line in place; a log gets a line per update.
  fmt::print(stderr, "{}{}: {}/{}{}{}", terminal_ ? "\r" : "", label_, done, total, rate, terminal_ ? "\033[K" : "\n");
  std::fflush(stderr);
}

void Progress::finish() {
  if (!active_) return;
  active_ = false;
  fmt::print(stderr, "\n");
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

int trace_element_bytes(const Trace& trace) {
  for (const char* key : {"platform_argument", "platform"}) {
    const auto found = trace.metadata.is_object() ? trace.metadata.find(key) : trace.metadata.end();
    if (!trace.metadata.is_object() || found == trace.metadata.end() || !found->is_string()) continue;
    try {
      return load_platform(found->get<std::string>()).network.element_bytes;
    } catch (const InputError&) {
    }
  }
  return NetworkSpec{}.element_bytes;
}

std::optional<nlohmann::json> trace_components(const Trace& trace) {
  const std::unique_ptr<Network> network = trace_network(trace);
  return components_json(trace, network.get(), trace_element_bytes(trace));
}

}  // namespace cnnpar::cli
