#pragma once
// Helpers shared by the cnnpar sub-commands (wiring only: no model logic here).
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "apps/common/strategy_flags.hpp"
#include "base/output_files.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/trace.hpp"
#include "workload/overrides.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::cli {

/** The embedded default scenario (README's first command): VGG-A on Cori Haswell, lee with
 *  k 9, f 2, batch 256, on 1, 2, 4, ..., 128 nodes (Lee et al. Fig. 6). */
inline constexpr const char* kDefaultNetwork = "vgg-a";
inline constexpr const char* kDefaultPlatform = "cori-haswell";
inline constexpr const char* kDefaultNodes = "1-128";

/** Options that pick one workload: network, platform, strategy and its parameters. */
struct ScenarioOptions {
  std::string network = kDefaultNetwork;
  std::string platform = kDefaultPlatform;
  StrategyFlags strategy;  ///< --strategy and the registered strategies' option flags
  std::int64_t batch = 256;
  int iterations = 3;
  int warmup = 1;
  bool uneven_batch = false;  ///< allow N % P != 0 (ranks take ⌈N/P⌉ or ⌊N/P⌋ images)
  std::vector<std::string> sets;  ///< --set PATH=VALUE (workload/overrides.hpp)
};

void add_scenario_options(CLI::App& sub, ScenarioOptions& options);

/** --ring-messages N (engine simgrid; EngineSettings::ring_messages). */
CLI::Option* add_ring_messages_option(CLI::App& sub, std::optional<int>& count);

struct LoadedScenario {
  Network network;
  Platform platform;           ///< with the --set overrides applied
  StrategyOptions strategy;    ///< ranks still to be set
  std::vector<Override> sets;  ///< the --set overrides (metadata "set")
  nlohmann::json platform_document;  ///< the platform JSON before overrides (sweeps apply more)
  std::string platform_file;         ///< where it came from
};

/** Loads network and platform (names or paths) and converts the strategy options.
 *  @throws InputError naming the file (or "command line"), the path and the value. */
LoadedScenario load_scenario_options(const ScenarioOptions& options);

/** A small progress line on stderr ("label: done/total, rate/s, ETA"), shown only when stderr
 *  is a terminal or `forced`, and never when `quiet`; redrawn at most 10 times a second on a
 *  terminal, written at most once a second to a log. */
class Progress {
 public:
  Progress(std::string label, bool forced, bool quiet);
  ~Progress();
  void update(int done, int total);
  void finish();

 private:
  std::string label_;
  bool enabled_ = false;
  bool terminal_ = false;  ///< redraw one line with '\r'; else one line per update
  bool active_ = false;
  bool shown_once_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point shown_ = started_;
};

/** The network a trace ran, for naming layers and weighing buckets: its metadata's argument
 *  (a name or a file) or name. Null when neither loads here (a file from another machine). */
std::unique_ptr<Network> trace_network(const Trace& trace);
/** The element size (network.element_bytes) of the platform a trace names, loaded as
 *  trace_network loads its network; 4 (the default) when it does not load. */
int trace_element_bytes(const Trace& trace);
/** The trace's per-component metrics (analysis/components.hpp) with the network and element
 *  size it names; nothing for other strategies. */
std::optional<nlohmann::json> trace_components(const Trace& trace);

}  // namespace cnnpar::cli
