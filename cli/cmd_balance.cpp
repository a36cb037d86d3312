// `cnnpar balance`: Intel's balance equations — the note's three systems, and every conv/fc
// layer of a chosen network on a chosen platform.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "model/balance.hpp"
#include "model/error.hpp"
#include "model/limits.hpp"
#include "model/scenarios.hpp"

namespace cnnpar::cli {

namespace {

struct BalanceOptions {
  std::string network = kDefaultNetwork;
  std::string platform = kDefaultPlatform;
  std::int64_t batch = 256;
  int nodes = 8;
  std::string json_out;
  bool quiet = false;
};

struct NoteSystem {
  const char* name;
  double peak_flops;
  double bandwidth_Bps;
};
// The three systems of the Intel note (seed 003).
constexpr NoteSystem kNoteSystems[] = {
    {"Xeon + FDR InfiniBand", 2700e9, 7e9},
    {"Xeon + 10Gb Ethernet", 2700e9, 1.2e9},
    {"Xeon Phi + OmniPath", 6000e9, 12.5e9},
};
struct NoteLayer {
  const char* name;
  double out_w, out_h;
};
constexpr NoteLayer kNoteLayers[] = {{"C1 (55x55)", 55, 55}, {"C5 (12x12)", 12, 12}, {"F1 (1x1)", 1, 1}};

int run_balance(const BalanceOptions& o) {
  check_output_path(o.json_out, "--json");
  if (o.batch < 1 || o.batch > limits::kMaxBatch)
    throw InputError("command line", "--batch", std::to_string(o.batch), fmt::format("must be in [1, {}]", limits::kMaxBatch));
  if (o.nodes < 1 || o.nodes > limits::kMaxRanks)
    throw InputError("command line", "--nodes", std::to_string(o.nodes), fmt::format("must be in [1, {}]", limits::kMaxRanks));
  // The balance equations take MB_node = MB / nodes images per node (Intel note, Eq. 2).
  if (o.batch % o.nodes != 0)
    throw InputError("command line", "--batch", fmt::format("{} over {} nodes", o.batch, o.nodes),
                     "the batch must be divisible by the number of nodes (whole images per node)");
  const Network network = load_network(o.network);
  const Platform platform = load_platform(o.platform);
  const std::vector<LayerBalance> layers = network_balance(network, platform, o.batch, o.nodes);

  nlohmann::json systems = nlohmann::json::array();
  std::string text = "Minimum data points per node (Intel note, Figure 1):\n";
  text += fmt::format("{:<14}", "layer");
  for (const NoteSystem& s : kNoteSystems) text += fmt::format(" {:>24}", s.name);
  text += "\n";
  for (const NoteLayer& l : kNoteLayers) {
    text += fmt::format("{:<14}", l.name);
    for (const NoteSystem& s : kNoteSystems)
      text += fmt::format(" {:>24}", min_data_points_per_node(system_ratio(s.peak_flops, s.bandwidth_Bps), l.out_w, l.out_h));
    text += "\n";
  }
  for (const NoteSystem& s : kNoteSystems) {
    nlohmann::json per_layer = nlohmann::json::object();
    const double ratio = system_ratio(s.peak_flops, s.bandwidth_Bps);
    for (const NoteLayer& l : kNoteLayers) per_layer[l.name] = min_data_points_per_node(ratio, l.out_w, l.out_h);
    systems.push_back({{"name", s.name}, {"peak_flops", s.peak_flops}, {"bandwidth_Bps", s.bandwidth_Bps},
                       {"system_ratio", ratio}, {"min_data_points", per_layer}});
  }
  text += fmt::format("system ratios (FLOP/byte): {:.1f}, {:.1f}, {:.1f}\n\n",
                      system_ratio(kNoteSystems[0].peak_flops, kNoteSystems[0].bandwidth_Bps),
                      system_ratio(kNoteSystems[1].peak_flops, kNoteSystems[1].bandwidth_Bps),
                      system_ratio(kNoteSystems[2].peak_flops, kNoteSystems[2].bandwidth_Bps));

  const double sys = layers.empty() ? 0.0 : layers.front().system_ratio;
  text += fmt::format("{} on {}: batch {}, {} nodes (MB_node {:g}), system ratio {:.1f} FLOP/byte\n", network.name,
                      platform.name, o.batch, o.nodes, double(o.batch) / o.nodes, sys);
  text += fmt::format("{:<10} {:>6} {:>14} {:>14} {:>10} {:>8} {:>12} {:>10} {:>8}\n", "layer", "kind", "ratio(ovl)",
                      "ratio(no ovl)", "min MB", "DP ok", "MP nodes <", "MP max", "prefer");
  nlohmann::json per_layer = nlohmann::json::array();
  for (const LayerBalance& b : layers) {
    text += fmt::format("{:<10} {:>6} {:>14.1f} {:>14.1f} {:>10} {:>8} {:>12.2f} {:>10} {:>8}\n", b.name,
                        to_string(b.kind), b.data_ratio_overlap, b.data_ratio_no_overlap, b.min_data_points,
                        b.data_parallel_scales ? "yes" : "no", b.model_parallel_limit, b.max_model_nodes,
                        b.prefer_model ? "model" : "data");
    per_layer.push_back(to_json(b));
  }
  if (!o.json_out.empty()) {
    const nlohmann::json document = {{"note_systems", systems},
                                     {"network", network.name},
                                     {"platform", platform.name},
                                     {"batch", o.batch},
                                     {"nodes", o.nodes},
                                     {"layers", per_layer}};
    write_file_atomic(o.json_out, document.dump(2) + "\n");
  }
  if (!o.quiet) std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace

Runner add_balance_command(CLI::App& app) {
  auto o = std::make_shared<BalanceOptions>();
  CLI::App* sub = app.add_subcommand("balance", "Intel balance equations: compute/communication ratios per layer");
  sub->add_option("--network", o->network, "network name or JSON path")->capture_default_str();
  sub->add_option("--platform", o->platform, "platform name or JSON path")->capture_default_str();
  sub->add_option("--batch", o->batch, "global mini-batch MB")->capture_default_str();
  sub->add_option("--nodes", o->nodes, "node count (MB_node = batch / nodes)")->capture_default_str();
  sub->add_option("--json", o->json_out, "write the tables as JSON here");
  sub->add_flag("--quiet,-q", o->quiet, "print nothing on success");
  return [o] { return run_balance(*o); };
}

}  // namespace cnnpar::cli
