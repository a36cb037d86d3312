#include "analysis/rows.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/output_files.hpp"
#include "base/units.hpp"
#include "workload/conv_paths.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

SweepRow make_sweep_row(int nodes, const TraceMetrics& metrics, double iteration_1_s) {
  SweepRow row;
  row.nodes = nodes;
  row.iteration_s = metrics.iteration_s;
  row.compute_s = metrics.compute_max_s;
  row.comm_s = metrics.comm_s;
  row.exposed_comm_s = metrics.exposed_comm_s;
  row.overlap_ratio_percent = metrics.overlap_ratio_percent;
  row.speedup = speedup(iteration_1_s, metrics.iteration_s);
  row.efficiency = efficiency(row.speedup, nodes);
  return row;
}

std::vector<SweepRow> sweep_rows(const std::vector<int>& nodes, const std::vector<TraceMetrics>& metrics,
                                 double iteration_1_s) {
  CNNPAR_ASSERT(nodes.size() == metrics.size(), "sweep_rows: one metrics per node count");
  std::vector<SweepRow> rows;
  rows.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) rows.push_back(make_sweep_row(nodes[i], metrics[i], iteration_1_s));
  return rows;
}

const char* const kRowCsvHeader =
    "network,platform,engine,strategy,options,batch,nodes,iteration_s,compute_s,comm_s,exposed_comm_s,"
    "overlap_ratio_percent,speedup,efficiency";

ConfigColumns config_columns(const nlohmann::json& strategy_options, const std::string& network,
                             const std::string& platform, const std::string& engine) {
  ConfigColumns config;
  config.network = network;
  config.platform = platform;
  config.engine = engine;
  if (!strategy_options.is_object()) return config;
  config.strategy = strategy_options.value("strategy", std::string());
  if (const auto batch = strategy_options.find("batch"); batch != strategy_options.end() && batch->is_number_integer())
    config.batch = batch->get<std::int64_t>();
  // The strategy's own options in its schema's order; a strategy unknown to this build (a
  // trace from another version) keeps no options rather than failing the CSV.
  std::vector<std::string> options;
  for (const StrategySpec& spec : strategy_registry()) {
    if (spec.name != config.strategy) continue;
    for (const OptionSpec& option : spec.options) {
      const auto value = strategy_options.find(option.key);
      if (value == strategy_options.end() || (value->is_string() && value->get<std::string>().empty())) continue;
      options.push_back(
          fmt::format("{}={}", option.key, value->is_string() ? value->get<std::string>() : value->dump()));
    }
  }
  if (const auto columns = strategy_options.find("columns"); columns != strategy_options.end() && columns->is_string())
    options.push_back("columns=" + columns->get<std::string>());
  // auto, the default, is left out like the other defaults: the row is the request, and auto
  // is whatever each point's platform prices faster (a trace's options say what it resolved to).
  if (const auto conv = strategy_options.find("conv");
      conv != strategy_options.end() && !conv->is_null() && *conv != kDefaultConvPaths.json()) {
    std::vector<std::string> layers;  // "direct" or the layers that ran direct
    if (conv->is_array())
      for (const nlohmann::json& layer : *conv) layers.push_back(layer.is_string() ? layer.get<std::string>() : layer.dump());
    else
      layers.push_back(conv->is_string() ? conv->get<std::string>() : conv->dump());
    options.push_back(fmt::format("conv={}", fmt::join(layers, ",")));
  }
  config.options = fmt::format("{}", fmt::join(options, " "));
  return config;
}

ConfigColumns config_columns(const Trace& trace) {
  const nlohmann::json& m = trace.metadata;
  const auto text = [&](const char* key) {
    const auto found = m.is_object() ? m.find(key) : m.end();
    return m.is_object() && found != m.end() && found->is_string() ? found->get<std::string>() : std::string();
  };
  nlohmann::json options = m.is_object() && m.contains("options") ? m.at("options") : nlohmann::json::object();
  if (options.is_object() && !options.contains("strategy")) options["strategy"] = text("strategy");
  ConfigColumns config = config_columns(options, text("network"), text("platform"), trace.engine);
  if (config.batch == 0 && m.is_object() && m.contains("global_batch") && m.at("global_batch").is_number_integer())
    config.batch = m.at("global_batch").get<std::int64_t>();
  return config;
}


std::string config_csv_fields(const ConfigColumns& c) {
  return fmt::format("{},{},{},{},{},{}", csv_field(c.network), csv_field(c.platform), csv_field(c.engine),
                     csv_field(c.strategy), csv_field(c.options), c.batch);
}

std::string row_csv_line(const ConfigColumns& c, const SweepRow& r, bool with_speedup) {
  return config_csv_fields(c) + row_csv_tail(r, with_speedup);
}

std::string row_csv_tail(const SweepRow& r, bool with_speedup) {
  if (!with_speedup)
    return fmt::format(",{},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g},,\n", r.nodes, r.iteration_s, r.compute_s, r.comm_s,
                       r.exposed_comm_s, r.overlap_ratio_percent);
  return fmt::format(",{},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g},{:.6g},{:.6g}\n", r.nodes, r.iteration_s, r.compute_s,
                     r.comm_s, r.exposed_comm_s, r.overlap_ratio_percent, r.speedup, r.efficiency);
}

std::string sweep_csv(const ConfigColumns& config, const std::vector<SweepRow>& rows) {
  std::string out = std::string(kRowCsvHeader) + "\n";
  for (const SweepRow& r : rows) out += row_csv_line(config, r);
  return out;
}

nlohmann::json sweep_json(const std::vector<SweepRow>& rows, const nlohmann::json& metadata) {
  nlohmann::json list = nlohmann::json::array();
  for (const SweepRow& r : rows)
    list.push_back({{"nodes", r.nodes},
                    {"iteration_s", r.iteration_s},
                    {"compute_s", r.compute_s},
                    {"comm_s", r.comm_s},
                    {"exposed_comm_s", r.exposed_comm_s},
                    {"overlap_ratio_percent", r.overlap_ratio_percent},
                    {"speedup", r.speedup},
                    {"efficiency", r.efficiency}});
  return {{"metadata", metadata}, {"rows", std::move(list)}};
}

std::string format_sweep_table(const std::vector<SweepRow>& rows) {
  // One unit per column, chosen by the column's largest value.
  const auto unit_of = [&](double SweepRow::*field) {
    double largest = 0;
    for (const SweepRow& r : rows) largest = std::max(largest, std::fabs(r.*field));
    return time_unit_for(largest);
  };
  const TimeUnit iteration = unit_of(&SweepRow::iteration_s), compute = unit_of(&SweepRow::compute_s),
                 comm = unit_of(&SweepRow::comm_s), exposed = unit_of(&SweepRow::exposed_comm_s);
  const auto head = [](const char* name, const TimeUnit& unit) { return fmt::format("{} {}", name, unit.name); };
  std::string out = fmt::format("{:>6} {:>12} {:>12} {:>12} {:>12} {:>7} {:>8} {:>6}\n", "nodes",
                                head("iteration", iteration), head("compute", compute), head("comm", comm),
                                head("exposed", exposed), "R %", "speedup", "eff");
  for (const SweepRow& r : rows)
    out += fmt::format("{:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f} {:>7.1f} {:>8.2f} {:>6.2f}\n", r.nodes,
                       r.iteration_s * iteration.per_second, r.compute_s * compute.per_second,
                       r.comm_s * comm.per_second, r.exposed_comm_s * exposed.per_second, r.overlap_ratio_percent,
                       r.speedup, r.efficiency);
  return out;
}

}  // namespace cnnpar
