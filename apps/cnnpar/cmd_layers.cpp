// `cnnpar layers`: a network's layers (what each reads, its output shape, parameters and forward
// multiply-accumulates per image) and their totals.
#include <cstdio>
#include <memory>
#include <string>

#include "analysis/network_table.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/output_files.hpp"
#include "model/scenarios.hpp"

namespace cnnpar::cli {

namespace {

struct LayersOptions {
  std::string network = kDefaultNetwork;
  std::string json_out, csv_out;
  bool quiet = false;
};

int run_layers(const LayersOptions& o) {
  check_output_path(o.json_out, "--json");
  check_output_path(o.csv_out, "--csv");
  const NetworkTable table = network_table(load_network(o.network));
  OutputTransaction outputs;
  if (!o.json_out.empty()) outputs.file(o.json_out, to_json(table).dump(2) + "\n");
  if (!o.csv_out.empty()) outputs.file(o.csv_out, network_table_csv(table));
  outputs.commit();
  if (!o.quiet && o.json_out != "-" && o.csv_out != "-") std::fputs(network_table_text(table).c_str(), stdout);
  return 0;
}

}  // namespace

Runner add_layers_command(CLI::App& app) {
  auto o = std::make_shared<LayersOptions>();
  CLI::App* sub = app.add_subcommand(
      "layers", "a network's layers: what each reads, its output shape, parameters and forward multiply-accumulates");
  flags::network(*sub, o->network);
  flags::json_out(*sub, o->json_out, "the layers and the totals");
  flags::csv_out(*sub, o->csv_out, "one row per layer");
  flags::quiet(*sub, o->quiet);
  return [o] { return run_layers(*o); };
}

}  // namespace cnnpar::cli
