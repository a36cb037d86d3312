// `cnnpar compare PREDICTED.json MEASURED.json`: metrics side by side and the ops that
// deviate most.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "analysis/compare.hpp"
#include "analysis/components.hpp"
#include "analysis/layer_breakdown.hpp"
#include "analysis/metrics.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "experiments/sweep.hpp"
#include "model/trace.hpp"

namespace cnnpar::cli {

namespace {

struct CompareOptions {
  std::string predicted, measured;
  std::string json_out, csv_out;
  int top = 10;
  bool quiet = false;
  bool allow_other_strategy = false;
  bool per_layer = false;
  std::string layers_csv;
};

int run_compare(const CompareOptions& o) {
  check_output_path(o.json_out, "--json");
  check_output_path(o.csv_out, "--csv");
  check_output_path(o.layers_csv, "--layers-csv");
  const Trace predicted = trace_from_json(read_json_file(o.predicted), o.predicted);
  const Trace measured = trace_from_json(read_json_file(o.measured), o.measured);
  check_comparable(predicted, measured, o.predicted, o.measured, o.allow_other_strategy);
  if (o.top < 0) throw InputError("command line", "--top", std::to_string(o.top), "must not be negative");
  const CompareReport report = compare_traces(predicted, measured, o.top);
  // Per layer: both traces ran the same network (check_comparable), which weighs the buckets.
  std::vector<LayerPhaseBreakdown> predicted_layers, measured_layers;
  if (o.per_layer || !o.layers_csv.empty()) {
    const std::unique_ptr<Network> network = trace_network(measured);
    predicted_layers = layer_breakdown(predicted, compute_metrics(predicted), network.get());
    measured_layers = layer_breakdown(measured, compute_metrics(measured), network.get());
  }
  const std::vector<LayerPair> layer_pairs = pair_layers(predicted_layers, measured_layers);
  // veeriah and conv_split: their papers' component split, side by side (nothing otherwise).
  const std::optional<nlohmann::json> predicted_components = trace_components(predicted);
  const std::optional<nlohmann::json> measured_components = trace_components(measured);
  const bool with_components = predicted_components || measured_components;
  const nlohmann::json none = nlohmann::json::object();
  OutputTransaction outputs;
  if (!o.json_out.empty()) {
    nlohmann::json document = to_json(report);
    if (o.per_layer) document["layers"] = to_json(layer_pairs);
    if (with_components)
      document["components"] = {{"predicted", predicted_components.value_or(none)},
                                {"measured", measured_components.value_or(none)}};
    outputs.file(o.json_out, document.dump(2) + "\n");
  }
  if (!o.csv_out.empty()) outputs.file(o.csv_out, compare_csv(predicted, measured));
  if (!o.layers_csv.empty())
    outputs.file(o.layers_csv, std::string(kLayerCsvHeader) + "\n" +
                                   layer_csv_lines(config_columns(predicted), int(predicted.ranks.size()), predicted_layers) +
                                   layer_csv_lines(config_columns(measured), int(measured.ranks.size()), measured_layers));
  outputs.commit();
  if (!o.quiet && o.json_out != "-" && o.csv_out != "-" && o.layers_csv != "-") {
    std::fputs(format_compare_table(report).c_str(), stdout);
    if (with_components)
      fmt::print("\ncomponents (median over measured iterations):\n{}",
                 format_components_comparison(predicted_components.value_or(none), measured_components.value_or(none)));
    if (o.per_layer)
      fmt::print("\nper layer, per iteration (max over ranks):\n{}", format_layer_comparison(layer_pairs));
  }
  for (const std::string& warning : measurement_warnings(&predicted, measured))
    fmt::print(stderr, "cnnpar compare: warning: {}\n", warning);
  return 0;
}

}  // namespace

Runner add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* sub = app.add_subcommand("compare", "compare two traces (e.g. a prediction and a measurement)");
  sub->add_option("PREDICTED", o->predicted, "predicted Trace JSON")->required();
  sub->add_option("MEASURED", o->measured, "measured Trace JSON")->required();
  flags::json_out(*sub, o->json_out, "the comparison (metrics, largest op deviations)");
  flags::csv_out(*sub, o->csv_out, "the predicted and the measured row (predict --csv's columns)");
  sub->add_option("--top", o->top, "ops with the largest deviation to list")->capture_default_str();
  flags::per_layer(*sub, o->per_layer);
  flags::layers_csv(*sub, o->layers_csv);
  flags::quiet(*sub, o->quiet);
  sub->add_flag("--allow-other-strategy", o->allow_other_strategy,
                "compare traces of different strategies or strategy options (network, batch and ranks must match)");
  return [o] { return run_compare(*o); };
}

}  // namespace cnnpar::cli
