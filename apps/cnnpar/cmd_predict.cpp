// `cnnpar predict` (analytic or SimGrid engine over a list of node counts) and
// `cnnpar simulate` (= predict --engine simgrid, with SimGrid's own options).
#include <cstdio>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/components.hpp"
#include "analysis/layer_breakdown.hpp"
#include "analysis/metrics.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "engines/registry.hpp"
#include "experiments/sweep.hpp"
#include "system/op_time.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::cli {

namespace {

struct PredictOptions {
  ScenarioOptions scenario;
  std::string nodes = kDefaultNodes;
  std::string engine = "analytic";
  std::string json_out, csv_out;
  bool quiet = false;
  bool progress = false;
  bool serial = false;
  bool per_layer = false;
  std::string layers_csv;
  // simulate only
  std::string network_model = "CM02";
  std::string platform_xml;
  std::optional<int> ring_messages;  ///< engine simgrid; none = its default
};

int run_predict(const PredictOptions& o, bool simulate_command) {
  // Validate every input before any work or output.
  check_output_path(o.json_out, "--json");
  check_output_path(o.csv_out, "--csv");
  check_output_path(o.layers_csv, "--layers-csv");
  const std::string& node_text = o.nodes;
  const std::vector<int> nodes = parse_node_list(node_text, "command line", "--nodes");
  const EngineSettings engine{.name = o.engine,
                              .network_model = o.network_model,
                              .platform_xml = o.platform_xml,
                              .ring_messages = o.ring_messages};
  check_engine_settings(engine);
  LoadedScenario s = load_scenario_options(o.scenario);
  for (int p : nodes) {
    if (p > s.platform.nodes.count)
      throw InputError("command line", "--nodes", node_text,
                       fmt::format("{} nodes asked for, but platform {} has {}", p, s.platform.name,
                                   s.platform.nodes.count));
    StrategyOptions at_p = s.strategy;  // every node count is checked before the sweep starts
    at_p.ranks = p;
    validate_strategy_options(s.network, at_p);
  }

  // A calibrated GEMM grid used outside what it measured warns once; the per-rank batch (and
  // so every shape) is largest at the fewest nodes and smallest at the most.
  if (!s.platform.measured_gemm_flops.empty() && !o.quiet) {
    std::set<std::string> warned;
    for (int p : {nodes.front(), nodes.back()}) {
      StrategyOptions at_p = s.strategy;
      at_p.ranks = p;
      for (const std::string& warning : calibration_warnings(s.platform, build_schedule(s.network, s.platform, at_p)))
        if (warned.insert(warning).second) fmt::print(stderr, "cnnpar: warning: {}\n", warning);
    }
  }
  Progress progress(simulate_command || o.engine == "simgrid" ? "simulating" : "predicting", o.progress, o.quiet);
  const std::vector<SweepRow> rows =
      predict_sweep(s.network, s.platform, s.strategy, nodes, [&] { return make_engine(engine); },
                    {.workers = o.serial ? 1 : 0, .progress = [&](int done, int total) { progress.update(done, total); }});
  // The per-layer breakdown needs every record of one trace: the largest node count is replayed
  // once more with full detail.
  // So does the per-component split of the worker-group strategies (JSON only).
  std::vector<LayerPhaseBreakdown> layers;
  std::optional<nlohmann::json> components;
  const bool want_layers = o.per_layer || !o.layers_csv.empty();
  const bool want_components = !o.json_out.empty() && has_components(s.strategy.name);
  if (want_layers || want_components) {
    StrategyOptions at_largest = s.strategy;
    at_largest.ranks = nodes.back();
    const Trace trace = replay_once(build_schedule(s.network, s.platform, at_largest), s.platform, engine);
    if (want_layers) layers = layer_breakdown(trace, compute_metrics(trace), &s.network);
    if (want_components) {
      components = components_json(trace, &s.network, s.platform.network.element_bytes);
      if (components) (*components)["nodes"] = nodes.back();
    }
  }
  progress.finish();

  nlohmann::json metadata = to_json(s.strategy);
  metadata.erase("ranks");
  metadata["network"] = s.network.name;
  metadata["platform"] = s.platform.name;
  metadata["platform_parameters"] = to_json(s.platform);
  if (!s.sets.empty()) metadata["set"] = to_json(s.sets);
  metadata["cnnpar_version"] = CNNPAR_VERSION;
  metadata["engine"] = o.engine;
  if (o.engine == "simgrid") metadata["network_model"] = o.network_model;
  if (!o.platform_xml.empty()) metadata["platform_xml"] = o.platform_xml;
  const std::string platform_shown = platform_label(s.platform, o.platform_xml);
  const ConfigColumns config = config_columns(to_json(s.strategy), s.network.name, platform_shown, o.engine);
  OutputTransaction outputs;
  if (!o.json_out.empty()) {
    nlohmann::json document = sweep_json(rows, metadata);
    if (o.per_layer) document["layers"] = {{"nodes", nodes.back()}, {"rows", to_json(layers)}};
    if (components) document["components"] = *components;
    outputs.file(o.json_out, document.dump(2) + "\n");
  }
  if (!o.csv_out.empty()) outputs.file(o.csv_out, sweep_csv(config, rows));
  if (!o.layers_csv.empty())
    outputs.file(o.layers_csv, std::string(kLayerCsvHeader) + "\n" + layer_csv_lines(config, nodes.back(), layers));
  outputs.commit();
  // A table on standard output would mix with JSON or CSV written there.
  if (!o.quiet && o.json_out != "-" && o.csv_out != "-" && o.layers_csv != "-") {
    fmt::print("{} on {}, {}", s.network.name, platform_shown, s.strategy.name);
    const nlohmann::json options = to_json(s.strategy);
    for (const auto& [key, value] : options.items())
      if (strategy_spec(s.strategy.name).option(key) != nullptr && value != "")
        fmt::print(" {} {}", key, value.is_string() ? value.get<std::string>() : value.dump());
    fmt::print(", batch {}, engine {}\n{}", s.strategy.global_batch, o.engine, format_sweep_table(rows));
    if (o.per_layer)
      fmt::print("\nper layer at {} nodes, per iteration (max over ranks):\n{}", nodes.back(), format_layer_table(layers));
  }
  return 0;
}

void add_common(CLI::App* sub, PredictOptions& o) {
  add_scenario_options(*sub, o.scenario);
  flags::nodes(*sub, o.nodes)->default_str(kDefaultNodes);
  flags::json_out(*sub, o.json_out, "the rows and the configuration");
  flags::csv_out(*sub, o.csv_out, "the rows");
  flags::quiet(*sub, o.quiet);
  flags::progress(*sub, o.progress);
  flags::per_layer(*sub, o.per_layer);
  flags::layers_csv(*sub, o.layers_csv);
  flags::network_model(*sub, o.network_model);
  flags::platform_xml(*sub, o.platform_xml);
  add_ring_messages_option(*sub, o.ring_messages);
}

}  // namespace

Runner add_predict_command(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* sub = app.add_subcommand("predict", "predict iteration time, overlap and speedup over node counts");
  add_common(sub, *o);
  flags::engine(*sub, o->engine);
  sub->add_flag("--serial", o->serial, "one node count at a time (no threads)");
  return [o] { return run_predict(*o, false); };
}

Runner add_simulate_command(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* sub = app.add_subcommand("simulate", "predict with the SimGrid engine (links are shared, collectives are messages)");
  add_common(sub, *o);
  return [o] {
    o->engine = "simgrid";
    return run_predict(*o, true);
  };
}

}  // namespace cnnpar::cli
