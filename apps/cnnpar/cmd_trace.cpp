// `cnnpar trace`: one configuration replayed by an engine; writes its Trace JSON and,
// optionally, a Chrome trace (chrome://tracing, Perfetto) and the per-layer breakdown.
// `--from TRACE` exports an existing trace (a measured one too) without replaying anything.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/chrome_trace.hpp"
#include "analysis/components.hpp"
#include "analysis/layer_breakdown.hpp"
#include "analysis/metrics.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "base/units.hpp"
#include "engines/registry.hpp"
#include "experiments/sweep.hpp"
#include "model/scenarios.hpp"
#include "model/trace.hpp"
#include "workload/registry.hpp"
#include "workload/run_spec.hpp"
#include "workload/strategy.hpp"
#include "workload/trace_configuration.hpp"

namespace cnnpar::cli {

namespace {

struct TraceOptions {
  ScenarioOptions scenario;
  std::string nodes = "8";
  std::string engine = "analytic";
  std::string network_model = "CM02";
  std::string platform_xml;
  std::optional<int> ring_messages;  ///< engine simgrid; none = its default
  std::string out = "trace.json";
  std::string chrome_out;
  std::string json_out;  ///< metrics and, for veeriah and conv_split, the component split
  std::string like;  ///< a trace whose configuration is replayed (flags given win)
  std::string from;  ///< a trace exported as it is (no replay)
  bool per_layer = false;
  std::string layers_csv;
  bool quiet = false;
  CLI::App* command = nullptr;  ///< to tell given flags from defaults
};

/** The configuration of the trace `path` (network, platform, strategy and its options, batch,
 *  nodes, iterations, warm-up, im2col columns, slowed-down ranks) for every flag not given on
 *  the command line. @throws InputError naming the file and the metadata path. */
void apply_like(const std::string& path, const CLI::App& command, ScenarioOptions& scenario, std::string& nodes,
                nlohmann::json& strategy_values, Slowdowns& slowdown) {
  const TraceConfiguration like = trace_configuration(trace_from_json(read_json_file(path), path), path);
  const auto given = [&](const char* flag) { return command.count(flag) > 0; };
  if (!given("--network") && !like.network.empty()) scenario.network = like.network;
  if (!given("--platform") && !like.platform.empty()) scenario.platform = like.platform;
  if (!given("--strategy") && !like.strategy.empty()) scenario.strategy.set_strategy(like.strategy);
  if (!given("--nodes")) nodes = std::to_string(like.ranks);
  if (!given("--warmup")) scenario.warmup = like.warmup_iterations;
  if (!given("--iterations") && like.iterations) scenario.iterations = *like.iterations;
  if (!given("--batch") && like.global_batch) scenario.batch = *like.global_batch;
  if (!scenario.strategy.columns_given()) scenario.strategy.set_recompute_columns(like.recompute_columns);
  if (!scenario.strategy.conv_given()) scenario.strategy.set_conv(like.conv);
  if (!given("--set")) scenario.sets.insert(scenario.sets.end(), like.sets.begin(), like.sets.end());
  slowdown = like.slowdown;
  const nlohmann::json values = like.strategy_values(strategy_spec(scenario.strategy.strategy(), path));
  for (const auto& [key, value] : values.items())
    if (!scenario.strategy.given(key)) strategy_values[key] = value;
}

/** Writes the outputs of one trace: the per-layer CSV, the Chrome trace and (when `out` is
 *  set) the trace itself, all or none. Returns the per-layer rows (empty unless asked for). */
std::vector<LayerPhaseBreakdown> write_trace_outputs(const TraceOptions& o, const Trace& trace, const TraceMetrics& m, const Network* network,
                         const std::string& out, int element_bytes) {
  const bool want_layers = o.per_layer || !o.layers_csv.empty();
  const std::vector<LayerPhaseBreakdown> layers =
      want_layers ? layer_breakdown(trace, m, network) : std::vector<LayerPhaseBreakdown>{};
  OutputTransaction outputs;
  if (!out.empty()) outputs.file(out, to_json(trace).dump() + "\n");
  if (!o.chrome_out.empty()) outputs.file(o.chrome_out, to_chrome_trace(trace).dump() + "\n");
  if (!o.json_out.empty()) {
    nlohmann::json document = {{"metrics", to_json(m)}};
    if (auto components = components_json(trace, network, element_bytes)) document["components"] = *components;
    outputs.file(o.json_out, document.dump(2) + "\n");
  }
  if (!o.layers_csv.empty())
    outputs.file(o.layers_csv, std::string(kLayerCsvHeader) + "\n" + layer_csv_lines(config_columns(trace), m.ranks, layers));
  outputs.commit();
  return layers;
}

void print_layer_table(const TraceOptions& o, const std::vector<LayerPhaseBreakdown>& layers, const std::string& out) {
  if (o.per_layer && !o.quiet && out != "-" && o.chrome_out != "-" && o.layers_csv != "-")
    fmt::print("per layer, per iteration (max over ranks):\n{}", format_layer_table(layers));
}

/** --from: the flags that describe a replay mean nothing for a trace read from a file. */
int export_trace(const TraceOptions& o) {
  for (const CLI::Option* option : o.command->get_options()) {
    const std::string name = option->get_name();
    if (option->count() == 0 || name == "--from" || name == "--chrome" || name == "--out" || name == "--json" || name == "--per-layer" ||
        name == "--layers-csv" || name == "--quiet" || name == "--help")
      continue;
    throw InputError("command line", name, option->as<std::string>(),
                     "--from exports a trace as it is; it replays nothing, so drop " + name);
  }
  const Trace trace = trace_from_json(read_json_file(o.from), o.from);
  const TraceMetrics m = compute_metrics(trace);
  const std::unique_ptr<Network> network = trace_network(trace);
  // --out is written only when given: the trace is already on disk.
  const bool out_given = o.command->get_option("--out")->count() > 0;
  const std::string out = out_given ? o.out : std::string();
  const std::vector<LayerPhaseBreakdown> layers = write_trace_outputs(o, trace, m, network.get(), out, trace_element_bytes(trace));
  if (!o.quiet && o.chrome_out != "-" && o.layers_csv != "-" && o.json_out != "-" && !(out_given && o.out == "-"))
    fmt::print("{} ({}, {} ranks): iteration {}, R {:.1f}%{}{}\n", o.from, trace.engine, m.ranks,
               format_seconds(m.iteration_s), m.overlap_ratio_percent, o.chrome_out.empty() ? "" : ", chrome trace: ",
               o.chrome_out);
  print_layer_table(o, layers, out);
  return 0;
}

int run_trace(const TraceOptions& o) {
  check_output_path(o.out, "--out");
  check_output_path(o.chrome_out, "--chrome");
  check_output_path(o.json_out, "--json");
  check_output_path(o.layers_csv, "--layers-csv");
  if (!o.from.empty()) return export_trace(o);
  const EngineSettings engine{.name = o.engine,
                              .network_model = o.network_model,
                              .platform_xml = o.platform_xml,
                              .ring_messages = o.ring_messages};
  check_engine_settings(engine);
  ScenarioOptions scenario = o.scenario;
  std::string node_text = o.nodes;
  nlohmann::json like_values = nlohmann::json::object();
  Slowdowns slowdown;
  if (!o.like.empty()) apply_like(o.like, *o.command, scenario, node_text, like_values, slowdown);
  const int nodes = flags::parse_one_node_count(node_text);
  LoadedScenario s = load_scenario_options(scenario);
  // A measured run with slowed-down ranks is replayed with those nodes slower alike.
  for (const auto& [rank, factor] : slowdown)
    if (rank < s.platform.nodes.count) s.platform.slow_down(rank, factor);
  s.strategy.values.update(like_values);
  s.strategy.ranks = nodes;
  const Schedule schedule = build_schedule(s.network, s.platform, s.strategy);
  Trace trace = replay_once(schedule, s.platform, engine);
  trace.metadata["network_argument"] = scenario.network;
  trace.metadata["platform_argument"] = scenario.platform;
  if (!s.sets.empty()) trace.metadata["set"] = to_json(s.sets);
  const TraceMetrics m = compute_metrics(trace);
  const std::vector<LayerPhaseBreakdown> layers = write_trace_outputs(o, trace, m, &s.network, o.out, s.platform.network.element_bytes);
  if (!o.quiet && o.out != "-" && o.chrome_out != "-" && o.layers_csv != "-" && o.json_out != "-")  // not into JSON on standard output
    fmt::print("{} on {}, {}, {} nodes ({}): iteration {}, compute {}, comm {}, exposed {}, R {:.1f}%\ntrace: {}{}{}\n",
               s.network.name, platform_label(s.platform, o.platform_xml), s.strategy.name, nodes, trace.engine,
               format_seconds(m.iteration_s), format_seconds(m.compute_max_s), format_seconds(m.comm_s),
               format_seconds(m.exposed_comm_s), m.overlap_ratio_percent, o.out, o.chrome_out.empty() ? "" : ", chrome trace: ",
               o.chrome_out);
  print_layer_table(o, layers, o.out);
  return 0;
}

}  // namespace

Runner add_trace_command(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  CLI::App* sub = app.add_subcommand("trace", "replay one configuration and write its Trace (and a Chrome trace)");
  add_scenario_options(*sub, o->scenario);
  flags::nodes(*sub, o->nodes);
  flags::engine(*sub, o->engine);
  flags::network_model(*sub, o->network_model);
  flags::platform_xml(*sub, o->platform_xml);
  add_ring_messages_option(*sub, o->ring_messages);
  sub->add_option("--out,-o", o->out, "write the Trace JSON here (- = standard output)")->capture_default_str();
  sub->add_option("--chrome", o->chrome_out, "also write a Chrome trace-event JSON here");
  flags::json_out(*sub, o->json_out, "the metrics and, for veeriah and conv_split, the per-component split");
  sub->add_option("--like", o->like,
                  "replay the configuration of this Trace JSON (e.g. one measured by cnnpar-run): its network, "
                  "platform, strategy and options, batch, nodes, iterations, warm-up and im2col columns; flags given "
                  "as well win");
  sub->add_option("--from", o->from,
                  "export this Trace JSON (a prediction or a measurement by cnnpar-run) with --chrome, --per-layer "
                  "or --layers-csv instead of replaying a configuration");
  flags::per_layer(*sub, o->per_layer);
  flags::layers_csv(*sub, o->layers_csv);
  o->command = sub;
  flags::quiet(*sub, o->quiet);
  return [o] { return run_trace(*o); };
}

}  // namespace cnnpar::cli
