// `cnnpar balance`: Intel's balance equations for every conv/fc layer of a chosen network on a
// chosen platform, at one node count; plus the note's Figure 1 when the platform is one of the
// note's three systems (elsewhere the per-layer "DP min img/node" column is the same quantity
// for the network's own layers).
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/limits.hpp"
#include "model/balance.hpp"
#include "model/scenarios.hpp"

namespace cnnpar::cli {

namespace {

struct BalanceOptions {
  std::string network = kDefaultNetwork;
  std::string platform = kDefaultPlatform;
  std::int64_t batch = 256;
  std::string nodes = "8";  ///< one node count (flags::parse_one_node_count)
  std::string json_out, csv_out;
  bool quiet = false;
};

// "data, compute bound" / "model, comm bound": the note's choice and whether it keeps
// computation above communication at this node count.
std::string verdict(const LayerBalance& b) {
  return fmt::format("{}, {}", b.prefer_model ? "model" : "data", b.choice_compute_bound() ? "compute bound" : "comm bound");
}

std::string layer_table(const std::vector<LayerBalance>& layers, std::int64_t batch, int nodes) {
  const std::string nodes_text = fmt::format("{} node{}", nodes, nodes == 1 ? "" : "s");
  const std::string at_nodes = "at " + nodes_text;
  std::string text = fmt::format("{:<10} {:<4} {:>9} {:>12} {:>15} {:>12} {:>12} {:>12}  {:<6}  {}\n", "layer", "kind",
                                 "out (px)", "DP FLOP/byte", "DP min img/node", "DP max nodes", "MP FLOP/byte",
                                 "MP max nodes", "choice", at_nodes);
  for (const LayerBalance& b : layers)
    text += fmt::format("{:<10} {:<4} {:>9} {:>12.1f} {:>15} {:>12} {:>12.1f} {:>12}  {:<6}  {}\n", b.name,
                        to_string(b.kind), fmt::format("{:g}x{:g}", b.out_w_px, b.out_h_px), b.dp_ratio,
                        b.dp_min_images_per_node, b.dp_max_nodes, b.mp_ratio, b.mp_max_nodes,
                        b.prefer_model ? "model" : "data", verdict(b));
  const double sys = layers.empty() ? 0.0 : layers.front().system_ratio;
  const std::int64_t per_node = batch / nodes;
  // The legend names the numbers of this run, so each column can be checked by hand.
  text += "\n";
  text += fmt::format("  DP FLOP/byte     data parallel FLOPs per byte communicated at {} images/node: 1.5*out_w*out_h*{}\n",
                      per_node, per_node);
  text += fmt::format("  DP min img/node  fewest images per node keeping DP FLOP/byte >= {:.1f}: ceil({:.1f} / "
                      "(1.5*out_w*out_h));\n                   the Intel note's Figure 1 quantity\n",
                      sys, sys);
  text += fmt::format("  DP max nodes     most nodes that each still get DP min of the {} images: floor({} / DP min)\n",
                      batch, batch);
  text += fmt::format("  MP FLOP/byte     model parallel FLOPs per byte communicated at {}: "
                      "0.75*ofm*kw*kh*(out area/in area)/{}\n",
                      nodes_text, nodes);
  text += fmt::format("  MP max nodes     most nodes keeping MP FLOP/byte > {:.1f}\n", sys);
  text += "                   (max nodes 1: comm bound from 2 nodes on; one node never communicates)\n";
  text += fmt::format("  choice           the note's rule, model iff 3*in_w*in_h*{} < ofm*kw*kh: the scheme that moves\n"
                      "                   fewer bytes; independent of the node count, so the choice may be comm bound\n",
                      batch);
  text += fmt::format("  {:<16} the choice; compute bound iff {} <= its max nodes\n", at_nodes, nodes);
  return text;
}

// The note's Figure 1, with this platform's column marked. Only for the note's own systems.
std::string figure_1_table(int this_system) {
  std::string text = "Intel note, Figure 1: fewest images per node for compute-bound data parallelism\n";
  text += fmt::format("(* = this platform: the note's \"{}\")\n", kIntelNoteSystems[this_system].name);
  text += fmt::format("{:<24}", "layer");
  for (std::size_t s = 0; s < std::size(kIntelNoteSystems); ++s)
    text += fmt::format(" {:>24}", fmt::format("{}{}", int(s) == this_system ? "* " : "", kIntelNoteSystems[s].name));
  text += "\n";
  for (const IntelNoteLayer& l : kIntelNoteLayers) {
    text += fmt::format("{:<24}", l.name);
    for (const IntelNoteSystem& s : kIntelNoteSystems)
      text += fmt::format(" {:>24}", min_data_points_per_node(system_ratio(s.peak_flops, s.bandwidth_Bps), l.out_w_px,
                                                              l.out_h_px));
    text += "\n";
  }
  text += fmt::format("{:<24}", "system ratio (FLOP/byte)");
  for (const IntelNoteSystem& s : kIntelNoteSystems)
    text += fmt::format(" {:>24.1f}", system_ratio(s.peak_flops, s.bandwidth_Bps));
  return text + "\n";
}

nlohmann::json figure_1_json(int this_system) {
  nlohmann::json systems = nlohmann::json::array();
  for (const IntelNoteSystem& s : kIntelNoteSystems) {
    const double ratio = system_ratio(s.peak_flops, s.bandwidth_Bps);
    nlohmann::json per_layer = nlohmann::json::object();
    for (const IntelNoteLayer& l : kIntelNoteLayers) per_layer[l.name] = min_data_points_per_node(ratio, l.out_w_px, l.out_h_px);
    systems.push_back({{"name", s.name},
                       {"peak_flops", s.peak_flops},
                       {"bandwidth_Bps", s.bandwidth_Bps},
                       {"system_ratio_flop_per_byte", ratio},
                       {"min_images_per_node", per_layer}});
  }
  return {{"this_platform", kIntelNoteSystems[this_system].name}, {"systems", systems}};
}

int run_balance(const BalanceOptions& o) {
  // Validate every input before any work or output.
  check_output_path(o.json_out, "--json");
  check_output_path(o.csv_out, "--csv");
  if (o.batch < 1 || o.batch > limits::kMaxBatch)
    throw InputError("command line", "--batch", std::to_string(o.batch), fmt::format("must be in [1, {}]", limits::kMaxBatch));
  const int nodes = flags::parse_one_node_count(o.nodes);
  // The balance equations take MB_node = MB / nodes images per node (Intel note, Eq. 2).
  if (o.batch % nodes != 0)
    throw InputError("command line", "--batch", fmt::format("{} over {} nodes", o.batch, nodes),
                     "the batch must be divisible by the number of nodes (whole images per node)");
  const Network network = load_network(o.network);
  const Platform platform = load_platform(o.platform);
  const std::vector<LayerBalance> layers = network_balance(network, platform, o.batch, nodes);
  const int note_system = intel_note_system_index(platform);
  const double sys = system_ratio(platform.nodes.peak_flops, platform.network.bandwidth_Bps);

  OutputTransaction outputs;
  if (!o.json_out.empty()) {
    nlohmann::json per_layer = nlohmann::json::array();
    for (const LayerBalance& b : layers) per_layer.push_back(to_json(b));
    const nlohmann::json document = {{"network", network.name},
                                     {"platform", platform.name},
                                     {"batch", o.batch},
                                     {"nodes", nodes},
                                     {"images_per_node", o.batch / nodes},
                                     {"peak_flops", platform.nodes.peak_flops},
                                     {"bandwidth_Bps", platform.network.bandwidth_Bps},
                                     {"system_ratio_flop_per_byte", sys},
                                     {"layers", per_layer},
                                     {"intel_figure_1", note_system < 0 ? nlohmann::json() : figure_1_json(note_system)}};
    outputs.file(o.json_out, document.dump(2) + "\n");
  }
  if (!o.csv_out.empty()) outputs.file(o.csv_out, balance_csv(network.name, platform.name, o.batch, nodes, layers));
  outputs.commit();

  if (!o.quiet && o.json_out != "-" && o.csv_out != "-") {  // not into JSON or CSV on standard output
    std::string text = fmt::format("{} on {}: batch {} images over {} node{} = {} images per node\n", network.name,
                                   platform.name, o.batch, nodes, nodes == 1 ? "" : "s", o.batch / nodes);
    text += fmt::format("system ratio {:.1f} FLOP/byte = peak {:g} GFLOP/s / link {:g} GB/s per node; a scheme is\n"
                        "compute bound (scales) while its FLOP/byte is above it, comm bound below\n\n", sys,
                        platform.nodes.peak_flops / 1e9, platform.network.bandwidth_Bps / 1e9);
    text += layer_table(layers, o.batch, nodes);
    if (note_system >= 0) text += "\n" + figure_1_table(note_system);
    std::fputs(text.c_str(), stdout);
  }
  return 0;
}

}  // namespace

Runner add_balance_command(CLI::App& app) {
  auto o = std::make_shared<BalanceOptions>();
  CLI::App* sub = app.add_subcommand(
      "balance",
      "Intel balance equations: per conv/fc layer, whether data or model parallelism stays compute bound at a node "
      "count, and which one the Intel note chooses");
  flags::network(*sub, o->network);
  flags::platform(*sub, o->platform);
  flags::batch(*sub, o->batch);
  flags::nodes(*sub, o->nodes);
  flags::json_out(*sub, o->json_out, "the per-layer table (and the note's Figure 1 on its systems)");
  flags::csv_out(*sub, o->csv_out, "one row per layer");
  flags::quiet(*sub, o->quiet);
  return [o] { return run_balance(*o); };
}

}  // namespace cnnpar::cli
