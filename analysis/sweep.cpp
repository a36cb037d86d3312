#include "analysis/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <exception>
#include <mutex>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "model/error.hpp"
#include "model/limits.hpp"
#include "model/output_files.hpp"
#include "model/strategies/registry.hpp"
#include "model/units.hpp"

namespace cnnpar {

namespace {

int parse_count(std::string_view text, const std::string& whole, const std::string& origin,
                const std::string& option) {
  int value = 0;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw InputError(origin, option, whole, "expected node counts like \"1-128\" (doubling), \"1-128:1\" (every count) or \"1,2,4,8\"");
  if (value < 1 || value > limits::kMaxRanks)
    throw InputError(origin, option, whole, fmt::format("node counts must be in [1, {}]", limits::kMaxRanks));
  return value;
}

}  // namespace

std::vector<int> parse_node_list(const std::string& text, const std::string& origin, const std::string& option) {
  std::vector<int> nodes;
  std::string_view rest = text;
  if (rest.empty()) throw InputError(origin, option, text, "expected node counts like \"1-128\" (doubling), \"1-128:1\" (every count) or \"1,2,4,8\"");
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    const std::size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      nodes.push_back(parse_count(item, text, origin, option));
    } else {
      // "A-B" doubles from A (scaling studies); "A-B:S" steps by S.
      const std::size_t colon = item.find(':', dash);
      const int first = parse_count(item.substr(0, dash), text, origin, option);
      const int last = parse_count(item.substr(dash + 1, colon == std::string_view::npos ? std::string_view::npos : colon - dash - 1),
                                   text, origin, option);
      if (last < first) throw InputError(origin, option, text, "a range must go upwards (\"1-128\")");
      if (last - first > 1000000) throw InputError(origin, option, text, "range too large");
      if (colon == std::string_view::npos) {
        for (long p = first; p <= last; p *= 2) nodes.push_back(int(p));
      } else {
        const int step = parse_count(item.substr(colon + 1), text, origin, option);
        for (long p = first; p <= last; p += step) nodes.push_back(int(p));
      }
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

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

std::vector<SweepRow> predict_sweep(const Network& network, const Platform& platform, const StrategyOptions& base,
                                    const std::vector<int>& nodes, const EngineFactory& make_engine,
                                    const SweepOptions& options) {
  std::vector<int> counts = nodes;
  const bool has_one = std::find(counts.begin(), counts.end(), 1) != counts.end();
  if (!has_one) counts.insert(counts.begin(), 1);  // speedup baseline
  std::vector<TraceMetrics> metrics(counts.size());
  std::atomic<int> done{0};
  std::mutex progress_mutex;
  const int total = int(counts.size());

  // Errors are kept per node count and the first in list order is rethrown, so the message
  // does not depend on thread timing.
  std::vector<std::exception_ptr> errors(counts.size());
  auto run_one = [&](Engine& engine, std::size_t i) {
    try {
      StrategyOptions strategy = counts[i] == 1 ? single_rank_baseline(base) : base;
      strategy.ranks = counts[i];
      const Schedule schedule = build_schedule(network, platform, strategy);
      const Trace trace = engine.run(schedule, platform);
      metrics[i] = compute_metrics(trace, MetricsDetail{false, false});
      if (options.on_trace) options.on_trace(counts[i], trace);
    } catch (...) {
      errors[i] = std::current_exception();
    }
    const int finished = ++done;
    if (options.progress) {
      std::lock_guard lock(progress_mutex);
      options.progress(finished, total);
    }
  };

  if (options.parallel && counts.size() > 1) {
    // Largest P first: those dominate the time.
    tbb::parallel_for(tbb::blocked_range<std::size_t>(0, counts.size(), 1), [&](const tbb::blocked_range<std::size_t>& range) {
      const std::unique_ptr<Engine> engine = make_engine();
      for (std::size_t k = range.begin(); k != range.end(); ++k) run_one(*engine, counts.size() - 1 - k);
    });
  } else {
    const std::unique_ptr<Engine> engine = make_engine();
    for (std::size_t i = 0; i < counts.size(); ++i) run_one(*engine, i);
  }

  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  const double iteration_1_s = metrics.front().iteration_s;  // counts[0] == 1
  if (!has_one) {
    counts.erase(counts.begin());
    metrics.erase(metrics.begin());
  }
  return sweep_rows(counts, metrics, iteration_1_s);
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
  for (const StrategySpec& spec : strategy_registry()) {
    if (spec.name != config.strategy) continue;
    for (const OptionSpec& option : spec.options) {
      const auto value = strategy_options.find(option.key);
      if (value == strategy_options.end() || (value->is_string() && value->get<std::string>().empty())) continue;
      config.options += fmt::format("{}{}={}", config.options.empty() ? "" : " ", option.key,
                                    value->is_string() ? value->get<std::string>() : value->dump());
    }
  }
  if (const auto columns = strategy_options.find("columns"); columns != strategy_options.end() && columns->is_string())
    config.options += fmt::format("{}columns={}", config.options.empty() ? "" : " ", columns->get<std::string>());
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
  return fmt::format("{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.6g},{},{}\n", config_csv_fields(c),
                     r.nodes, r.iteration_s, r.compute_s, r.comm_s, r.exposed_comm_s, r.overlap_ratio_percent,
                     with_speedup ? fmt::format("{:.6g}", r.speedup) : "",
                     with_speedup ? fmt::format("{:.6g}", r.efficiency) : "");
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
