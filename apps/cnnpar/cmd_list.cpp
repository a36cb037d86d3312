// `cnnpar list [networks|platforms|strategies|studies]`: what the embedded zoo and the
// strategy registry offer, one line each (or JSON with --json).
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/units.hpp"
#include "model/cost.hpp"
#include "model/scenarios.hpp"
#include "workload/registry.hpp"
#include "workload/study.hpp"

namespace cnnpar::cli {

namespace {

struct ListOptions {
  std::vector<std::string> what;
  std::string json_out;
};

nlohmann::json list_networks() {
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : scenario_names("networks")) {
    const Network network = load_network(name);
    rows.push_back({{"name", name},
                    {"layers", network.layers.size()},
                    {"counted_layers", network.counted_layers().size()},
                    {"parameters", total_parameters(network)},
                    {"input", fmt::format("{}x{}x{}", network.input.c, network.input.h, network.input.w)}});
  }
  return rows;
}

nlohmann::json list_platforms() {
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : scenario_names("platforms")) {
    const Platform platform = load_platform(name);
    nlohmann::json devices = nlohmann::json::array();
    for (const NodeKind& kind : platform.nodes.kinds) {
      if (!kind.device) continue;
      nlohmann::json device = {{"kind", kind.name},
                               {"count", kind.count},
                               {"peak_flops", kind.device->processor.peak_flops},
                               {"host_link_Bps", kind.device->host_link_Bps},
                               {"tensors", to_string(kind.device->tensors)}};
      if (kind.device->tensors == DeviceTensors::resident) device["messages"] = to_string(kind.device->messages);
      devices.push_back(device);
    }
    rows.push_back({{"name", name},
                    {"nodes", platform.nodes.count},
                    {"peak_flops", platform.nodes.peak_flops},
                    {"bandwidth_Bps", platform.network.bandwidth_Bps},
                    {"latency_s", platform.network.latency_s},
                    {"topology", to_string(platform.network.topology)},
                    {"devices", devices}});
  }
  return rows;
}

nlohmann::json list_strategies() {
  nlohmann::json rows = nlohmann::json::array();
  for (const StrategySpec& spec : strategy_registry()) {
    nlohmann::json options = nlohmann::json::object();
    for (const OptionSpec& o : spec.options) options[o.flag()] = o.default_text;
    rows.push_back({{"name", spec.name}, {"summary", spec.summary}, {"options", options}});
  }
  return rows;
}

nlohmann::json list_studies() {
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& name : scenario_names("studies")) {
    const Study study = load_study(name);
    rows.push_back({{"name", name}, {"title", study.title}, {"platform", study.platform}, {"series", study.series.size()}});
  }
  return rows;
}

void print(const std::string& what, const nlohmann::json& rows) {
  fmt::print("{}:\n", what);
  for (const nlohmann::json& row : rows) {
    if (what == "networks")
      fmt::print("  {:<18} {:>3} layers ({:>2} counted), {:>6.1f} M parameters, input {}\n",
                 row.at("name").get<std::string>(), row.at("layers").get<int>(), row.at("counted_layers").get<int>(),
                 row.at("parameters").get<double>() / 1e6, row.at("input").get<std::string>());
    else if (what == "platforms") {
      std::vector<std::string> devices;
      for (const nlohmann::json& device : row.at("devices")) {
        std::string where = device.at("tensors").get<std::string>();
        if (device.contains("messages")) where += ", messages " + device.at("messages").get<std::string>();
        devices.push_back(fmt::format("{} × {:.0f} GFLOP/s device (tensors {}, host link {:.3g} GB/s)",
                                      device.at("count").get<int>(), device.at("peak_flops").get<double>() / 1e9, where,
                                      device.at("host_link_Bps").get<double>() / 1e9));
      }
      fmt::print("  {:<19} {:>5} nodes, {:>8.1f} GFLOP/s peak, {:>8.3g} GB/s, {:>8.3g} us, {}{}\n",
                 row.at("name").get<std::string>(), row.at("nodes").get<int>(), row.at("peak_flops").get<double>() / 1e9,
                 row.at("bandwidth_Bps").get<double>() / 1e9, row.at("latency_s").get<double>() * 1e6,
                 row.at("topology").get<std::string>(), devices.empty() ? "" : "; " + fmt::format("{}", fmt::join(devices, "; ")));
    }
    else if (what == "strategies") {
      std::vector<std::string> options;
      for (const auto& [key, value] : row.at("options").items())
        options.push_back(fmt::format("{} {}", key, value.get<std::string>().empty() ? "\"\"" : value.get<std::string>()));
      fmt::print("  {:<13} {}{}\n", row.at("name").get<std::string>(), row.at("summary").get<std::string>(),
                 options.empty() ? "" : fmt::format(" [{}]", fmt::join(options, ", ")));
    } else
      fmt::print("  {:<26} {}\n", row.at("name").get<std::string>(), row.at("title").get<std::string>());
  }
}

int run_list(const ListOptions& o) {
  const std::vector<std::string> all = {"networks", "platforms", "strategies", "studies"};
  const std::vector<std::string> what = o.what.empty() ? all : o.what;
  for (const std::string& w : what)
    if (std::find(all.begin(), all.end(), w) == all.end())
      throw InputError("command line", "/what", w, "expected networks, platforms, strategies or studies");
  if (!o.json_out.empty()) check_output_path(o.json_out, "--json");
  nlohmann::json document = nlohmann::json::object();
  for (const std::string& w : what) {
    document[w] = w == "networks" ? list_networks() : w == "platforms" ? list_platforms()
                  : w == "strategies" ? list_strategies() : list_studies();
    if (o.json_out.empty()) print(w, document[w]);
  }
  if (!o.json_out.empty()) write_file_atomic(o.json_out, document.dump(2) + "\n");
  return 0;
}

}  // namespace

Runner add_list_command(CLI::App& app) {
  auto options = std::make_shared<ListOptions>();
  CLI::App* sub = app.add_subcommand("list", "list the networks, platforms, strategies and studies cnnpar knows");
  sub->add_option("what", options->what, "networks | platforms | strategies | studies (default: all)");
  flags::json_out(*sub, options->json_out, "the lists (instead of printing them)");
  return [options] { return run_list(*options); };
}

}  // namespace cnnpar::cli
