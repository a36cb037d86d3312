#include "experiments/grid_sweep.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/output_files.hpp"
#include "experiments/shared_schedules.hpp"
#include "experiments/sweep.hpp"
#include "model/scenarios.hpp"
#include "workload/node_list.hpp"
#include "workload/overrides.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

namespace {

/** One point of the grid, ready to run. */
struct PreparedPoint {
  SweepPoint point;
  const Network* network = nullptr;
  Platform platform;
  StrategyOptions strategy;  ///< ranks set per task
  ConfigColumns config;
  std::string row_prefix;  ///< sweep_grid_row_prefix
  /** Points with equal groups have equal schedules at every node count: the same network,
   *  strategy options and schedule_platform_key (they differ in link rates at most). */
  std::size_t schedule_group = 0;
};

std::vector<PreparedPoint> prepare_points(const GridSweepSettings& o, const std::vector<SweepAxis>& axes,
                                          const std::vector<SweepPoint>& points, const std::vector<int>& nodes,
                                          std::map<std::string, Network>& networks,
                                          const std::string& platform_shown) {
  const std::string origin = "command line";
  std::vector<Override> base_sets;
  for (const std::string& text : o.sets) base_sets.push_back(parse_override(text, origin, "--set"));
  const bool strategy_axis = std::any_of(axes.begin(), axes.end(), [](const SweepAxis& a) { return a.name == "strategy"; });
  // The strategy flags (--k 9) are typed by --strategy; with a strategy axis use --set k=9.
  const nlohmann::json flag_values = strategy_axis ? nlohmann::json::object() : o.strategy_values;
  // A strategy option set for the whole sweep must mean something to one of its strategies.
  const auto strategy_axis_it = std::find_if(axes.begin(), axes.end(), [](const SweepAxis& a) { return a.name == "strategy"; });
  const std::vector<std::string> strategies = strategy_axis_it == axes.end()
                                                  ? std::vector<std::string>{o.strategy}
                                                  : strategy_axis_it->values;
  for (const Override& set : base_sets)
    if (is_strategy_option(set.path) &&
        std::none_of(strategies.begin(), strategies.end(),
                     [&](const std::string& name) { return strategy_spec(name, origin).option(set.path) != nullptr; }))
      throw InputError(origin, "--set", set.text(),
                       fmt::format("no strategy of the sweep ({}) has the option {}", fmt::join(strategies, ", "), set.path));
  std::map<std::string, ScenarioDocument> platform_documents;
  // The --set values alone first, so that a later error can only be an axis value's.
  {
    const ScenarioDocument base_platform = load_scenario("platforms", o.platform);
    platform_with_overrides(base_platform.json, base_platform.origin, base_sets, origin, "--set");
  }
  std::vector<PreparedPoint> prepared;
  std::map<std::string, std::size_t> schedule_groups;
  for (const SweepPoint& point : points) {
    std::string network_name = o.network, platform_name = o.platform;
    std::int64_t batch = o.batch;
    StrategyOptions strategy;
    strategy.name = o.strategy;
    std::vector<Override> sets;
    for (const Override& set : base_sets) sets.push_back(set);
    for (std::size_t a = 0; a < axes.size(); ++a) {
      const std::string& name = axes[a].name;
      const std::string& value = point.values[a];
      if (value.empty()) continue;  // an option this point's strategy does not take
      if (name == "strategy") strategy.name = value;
      else if (name == "network") network_name = value;
      else if (name == "platform") platform_name = value;
      else if (name == "batch") {
        const std::int64_t parsed = std::atoll(value.c_str());
        if (value.find_first_not_of("0123456789") != std::string::npos || parsed < 1)
          throw InputError(origin, "--axis", "batch=" + value, "a batch is a whole number of images >= 1");
        batch = parsed;
      } else {
        sets.push_back({name, value});
      }
    }
    strategy_spec(strategy.name, origin);
    // Strategy options of the base that this point's strategy does not take stay out of it.
    std::vector<Override> point_sets;
    for (const Override& set : sets)
      if (!is_strategy_option(set.path) || strategy_spec(strategy.name).option(set.path) != nullptr) point_sets.push_back(set);
    auto network = networks.find(network_name);
    if (network == networks.end()) network = networks.emplace(network_name, load_network(network_name)).first;
    auto document = platform_documents.find(platform_name);
    if (document == platform_documents.end())
      document = platform_documents.emplace(platform_name, load_scenario("platforms", platform_name)).first;
    PreparedPoint p;
    p.point = point;
    p.network = &network->second;
    p.platform = platform_with_overrides(document->second.json, document->second.origin, point_sets, origin, "--axis");
    strategy.global_batch = batch;
    strategy.iterations = o.iterations;
    strategy.warmup_iterations = o.warmup;
    strategy.uneven_batch = o.uneven_batch;
    strategy.recompute_columns = o.recompute_columns;
    strategy.conv = o.conv;
    strategy.origin = origin;
    if (!strategy_axis) strategy.values = flag_values;
    apply_strategy_overrides(strategy, point_sets, origin, "--set");
    const std::string schedule_inputs =
        fmt::format("{}\n{}\n{}", p.network->name, to_json(strategy).dump(), schedule_platform_key(p.platform));
    const auto [group, new_group] = schedule_groups.emplace(schedule_inputs, schedule_groups.size());
    p.schedule_group = group->second;
    // The options at every node count, checked once per group (its points differ in link rates).
    for (int p_nodes : nodes) {
      if (p_nodes > p.platform.nodes.count)
        throw InputError(origin, "--nodes", o.nodes,
                         fmt::format("{} nodes asked for, but platform {} has {}", p_nodes, p.platform.name,
                                     p.platform.nodes.count));
      if (!new_group) continue;
      StrategyOptions at_p = strategy;
      at_p.ranks = p_nodes;
      validate_strategy_options(*p.network, at_p);
    }
    p.strategy = strategy;
    p.config = config_columns(to_json(strategy), p.network->name,
                              platform_name == o.platform ? platform_shown : p.platform.name, o.engine.name);
    p.row_prefix = sweep_grid_row_prefix(p.config, axes, point);
    prepared.push_back(std::move(p));
  }
  return prepared;
}

/** Appends whole lines to the CSV on an O_APPEND descriptor, gathered into one write(2) per
 *  64 KiB or per kFlushAfter, whichever comes first (a write per row cost about 1 ms of the
 *  45 of a 1,000-row analytic sweep): a sweep killed outright (SIGKILL) loses at most that
 *  last moment's rows, which a rerun computes again; SIGINT and SIGTERM stop it cleanly. */
class RowLog {
 public:
  static constexpr auto kFlushAfter = std::chrono::milliseconds(500);
  static constexpr std::size_t kFlushBytes = 64 * 1024;

  explicit RowLog(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot append to " + path + ": " + std::strerror(errno));
  }
  ~RowLog() {
    if (fd_ < 0) return;
    if (!pending_.empty()) (void)!::write(fd_, pending_.data(), pending_.size());  // best effort while unwinding
    ::close(fd_);
  }
  RowLog(const RowLog&) = delete;
  RowLog& operator=(const RowLog&) = delete;
  void append(const std::string& line) {
    std::lock_guard lock(mutex_);
    pending_ += line;
    if (pending_.size() >= kFlushBytes || std::chrono::steady_clock::now() - last_flush_ >= kFlushAfter) flush_locked();
  }
  void flush() {
    std::lock_guard lock(mutex_);
    flush_locked();
  }

 private:
  void flush_locked() {
    last_flush_ = std::chrono::steady_clock::now();
    if (pending_.empty()) return;
    if (::write(fd_, pending_.data(), pending_.size()) != ssize_t(pending_.size()))
      throw std::runtime_error("cannot append to " + path_ + ": " + std::strerror(errno));
    pending_.clear();
  }

  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;
  std::string pending_;  // whole lines
  std::chrono::steady_clock::time_point last_flush_ = std::chrono::steady_clock::now();
};

nlohmann::json rows_json(const std::string& header, const std::vector<std::string>& lines, std::size_t text_fields) {
  std::vector<std::string> names, fields;
  split_csv_line(header, names);
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& line : lines) {
    split_csv_line(line.substr(0, line.size() - 1), fields);
    nlohmann::json row = nlohmann::json::object();
    for (std::size_t f = 0; f < names.size() && f < fields.size(); ++f) {
      // Configuration and axis columns stay text ("10Gbps"); nodes and metrics are numbers.
      if (names[f] == "batch" || names[f] == "nodes") row[names[f]] = std::stoll(fields[f]);
      else if (f < text_fields || fields[f].empty()) row[names[f]] = fields[f];
      else row[names[f]] = std::stod(fields[f]);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

void apply_sweep_file(const std::string& path, const std::function<bool(const std::string& flag)>& given,
                      GridSweepSettings& s) {
  const nlohmann::json document = read_json_file(path);
  const JsonNode root(document, path);
  root.check_keys({"format", "network", "platform", "strategy", "batch", "iterations", "warmup", "uneven_batch", "nodes",
                   "engine", "set", "axes"});
  if (root.string_or("format", "cnnpar-sweep") != "cnnpar-sweep") root.at("format").fail("expected \"cnnpar-sweep\"");
  if (!given("--network") && root.has("network")) s.network = root.at("network").as_string();
  if (!given("--platform") && root.has("platform")) s.platform = root.at("platform").as_string();
  if (!given("--strategy") && root.has("strategy")) s.strategy = root.at("strategy").as_string();
  if (!given("--batch") && root.has("batch")) s.batch = root.at("batch").as_positive_int();
  if (!given("--iterations") && root.has("iterations")) s.iterations = int(root.at("iterations").as_int_in(1, 1000));
  if (!given("--warmup") && root.has("warmup")) s.warmup = int(root.at("warmup").as_int_in(0, 999));
  if (!given("--uneven-batch") && root.has("uneven_batch")) s.uneven_batch = root.at("uneven_batch").as_bool();
  if (!given("--nodes") && root.has("nodes")) s.nodes = root.at("nodes").as_string();
  if (!given("--engine") && root.has("engine")) s.engine.name = root.at("engine").as_string();
  if (root.has("set")) {
    std::vector<std::string> sets;
    for (const JsonNode& item : root.at("set").items()) {
      parse_override(item.as_string(), path, item.path());  // the syntax, named in the file
      sets.push_back(item.as_string());
    }
    s.sets.insert(s.sets.begin(), sets.begin(), sets.end());  // the command line's come later and win
  }
  if (root.has("axes")) {
    std::vector<std::string> axes;
    for (const std::string& name : root.at("axes").keys()) {
      const JsonNode list = root.at("axes").at(name);
      const std::vector<JsonNode> items = list.items();
      if (items.empty()) list.fail("an axis needs at least one value");
      std::vector<std::string> values;
      for (const JsonNode& item : items) {
        const nlohmann::json& raw = item.raw();
        const std::string value = raw.is_string() ? raw.get<std::string>() : raw.dump();
        if (value.empty() || value.find(',') != std::string::npos) item.fail("an axis value is a non-empty text without ','");
        values.push_back(value);
      }
      const std::string text = fmt::format("{}={}", name, fmt::join(values, ","));
      parse_axis(text, path, list.path());
      // An axis given on the command line replaces the file's axis of that name.
      const bool overridden = std::any_of(s.axes.begin(), s.axes.end(),
                                          [&](const std::string& a) { return a.rfind(name + "=", 0) == 0; });
      if (!overridden) axes.push_back(text);
    }
    s.axes.insert(s.axes.begin(), axes.begin(), axes.end());
  }
}

GridSweepResult run_grid_sweep(const GridSweepSettings& o, const GridSweepCallbacks& callbacks) {
  std::vector<SweepAxis> axes;
  for (const std::string& text : o.axes) {
    axes.push_back(parse_axis(text, "command line", "--axis"));
    const std::string& name = axes.back().name;
    if (name == "nodes") throw InputError("command line", "--axis", text, "node counts are --nodes");
  }
  const std::vector<int> nodes = parse_node_list(o.nodes, "command line", "--nodes");
  const std::vector<SweepPoint> points = sweep_points(axes, o.strategy, "command line", "--axis");
  std::map<std::string, Network> networks;
  const std::string platform_shown = platform_label(load_platform(o.platform), o.engine.platform_xml);
  std::vector<PreparedPoint> prepared =
      prepare_points(o, axes, points, nodes, networks, platform_shown);

  // The rows: every (point, P); P = 1 of every point is computed too, as the speedup baseline.
  const std::string header = sweep_grid_csv_header(axes);
  struct Task {
    std::size_t point;
    int nodes;
    std::string key;
  };
  std::vector<Task> tasks;
  for (std::size_t i = 0; i < prepared.size(); ++i)
    for (int p : nodes) tasks.push_back({i, p, sweep_grid_row_key(prepared[i].row_prefix, p)});
  std::vector<std::string> all_keys;
  for (const Task& task : tasks) all_keys.push_back(task.key);
  const std::string fingerprint = sweep_fingerprint(header, all_keys);
  const std::size_t sweep_rows = tasks.size();
  if (o.shard) {
    std::vector<Task> owned;
    for (std::size_t t = 0; t < tasks.size(); ++t)
      if (o.shard->owns(t)) owned.push_back(std::move(tasks[t]));
    tasks = std::move(owned);
  }

  // Resume: the rows an earlier run finished stay; a torn last line is cut.
  const bool resumable = !o.csv_log.empty();
  std::map<std::string, std::string> done_lines;
  std::error_code error;
  if (resumable && std::filesystem::exists(o.csv_log, error) && std::filesystem::file_size(o.csv_log, error) > 0) {
    ExistingSweepRows existing = read_sweep_csv(o.csv_log, header, sweep_grid_axis_columns(axes));
    std::set<std::string> keys;
    for (const Task& task : tasks) keys.insert(task.key);
    for (const auto& [key, line] : existing.lines_by_key)
      if (keys.count(key) == 0)
        throw InputError(o.csv_log, "--csv", line.substr(0, line.size() - 1),
                         "this row is not a configuration of this sweep (other fixed flags, --set or --shard?); give another --csv");
    if (existing.torn_bytes > 0) std::filesystem::resize_file(o.csv_log, existing.whole_bytes);
    if (existing.whole_bytes == 0) std::filesystem::resize_file(o.csv_log, 0);
    done_lines = std::move(existing.lines_by_key);
  }
  std::vector<std::size_t> todo;
  for (std::size_t t = 0; t < tasks.size(); ++t)
    if (done_lines.count(tasks[t].key) == 0) todo.push_back(t);
  if (callbacks.note && !done_lines.empty())
    callbacks.note(fmt::format("{} of {} rows already done, computing {}", done_lines.size(), tasks.size(), todo.size()));

  std::unique_ptr<RowLog> log;
  if (resumable) {
    const bool fresh = !std::filesystem::exists(o.csv_log, error) || std::filesystem::file_size(o.csv_log, error) == 0;
    log = std::make_unique<RowLog>(o.csv_log);
    if (fresh) {
      log->append(header + "\n");
      log->flush();
    }
  }

  // Baselines (P = 1 of every point that still has rows to compute), then the rows.
  std::vector<double> iteration_1_s(prepared.size(), 0);
  std::vector<char> needs_baseline(prepared.size(), 0);
  for (std::size_t t : todo) needs_baseline[tasks[t].point] = 1;
  struct Job {
    std::size_t point;
    int nodes;
    std::ptrdiff_t task;  ///< -1: a baseline only
  };
  std::vector<Job> baseline_jobs, row_jobs;
  for (std::size_t i = 0; i < prepared.size(); ++i)
    if (needs_baseline[i]) {
      const auto task = std::find_if(todo.begin(), todo.end(), [&](std::size_t t) { return tasks[t].point == i && tasks[t].nodes == 1; });
      baseline_jobs.push_back({i, 1, task == todo.end() ? -1 : std::ptrdiff_t(*task)});
    }
  for (std::size_t t : todo)
    if (tasks[t].nodes != 1) row_jobs.push_back({tasks[t].point, tasks[t].nodes, std::ptrdiff_t(t)});

  const int total = int(baseline_jobs.size() + row_jobs.size());
  int finished = 0;
  std::vector<std::string> new_lines(tasks.size());  // per task: its computed line, or empty
  std::size_t computed = 0;
  const auto record = [&](const Job& job, const TraceMetrics& metrics) {
    if (job.nodes == 1) iteration_1_s[job.point] = metrics.iteration_s;
    if (job.task < 0) return;
    const PreparedPoint& p = prepared[job.point];
    const std::string line =
        sweep_grid_csv_line(p.row_prefix, make_sweep_row(job.nodes, metrics, iteration_1_s[job.point]));
    if (log) log->append(line);
    new_lines[std::size_t(job.task)] = line;
    ++computed;
  };
  const std::unique_ptr<Engine> engine = make_engine(o.engine);
  bool stopped = false;
  // The baselines first: a row's speedup divides by its point's.
  for (std::vector<Job>* phase : {&baseline_jobs, &row_jobs}) {
    // Jobs that share a schedule side by side (by node count, then group), so that each is
    // built once and let go of soon.
    const auto schedule_of = [&](const Job& job) { return std::make_pair(job.nodes, prepared[job.point].schedule_group); };
    std::stable_sort(phase->begin(), phase->end(), [&](const Job& a, const Job& b) { return schedule_of(a) < schedule_of(b); });
    SharedSchedules schedules;
    std::vector<std::size_t> slot_of(phase->size());
    for (std::size_t first = 0; first < phase->size();) {
      std::size_t end = first + 1;
      while (end < phase->size() && schedule_of((*phase)[end]) == schedule_of((*phase)[first])) ++end;
      const PreparedPoint& p = prepared[(*phase)[first].point];
      const std::size_t slot = schedules.add(
          [&p, nodes = (*phase)[first].nodes] {
            StrategyOptions strategy = nodes == 1 ? single_rank_baseline(p.strategy) : p.strategy;
            strategy.ranks = nodes;
            return build_schedule(*p.network, p.platform, strategy);
          },
          int(end - first));
      for (std::size_t j = first; j < end; ++j) slot_of[j] = slot;
      first = end;
    }
    std::vector<EngineJob> jobs;
    for (std::size_t j = 0; j < phase->size(); ++j) {
      const PreparedPoint& p = prepared[(*phase)[j].point];
      jobs.push_back({.schedule = [&schedules, slot = slot_of[j]] { return schedules.take(slot); },
                      .platform = &p.platform,
                      .summarize = row_metrics_summary,
                      .summarize_classed = row_metrics_summary_classed,
                      .memo = schedules.memo(slot_of[j])});
    }
    const BatchOptions batch{
        .workers = o.workers,
        .finished = [&](std::size_t j, nlohmann::json& summary) { record((*phase)[j], row_metrics_from_summary(summary)); },
        .progress =
            [&](int, int) {
              if (callbacks.progress) callbacks.progress(++finished, total);
            },
        .stop = [&] { return stopped = stopped || (callbacks.stop && callbacks.stop()); }};
    engine->run_all(jobs, batch);
    if (stopped) break;
  }
  if (log) log->flush();

  GridSweepResult result;
  result.axes = axes;
  result.header = header;
  result.rows = tasks.size();
  result.sweep_rows = sweep_rows;
  result.fingerprint = fingerprint;
  result.computed = computed;
  result.resumed = done_lines.size();
  result.stopped = stopped;
  // The rows in sweep order (points, then node counts); a stopped sweep has only some.
  for (std::size_t t = 0; t < tasks.size(); ++t) {
    if (!new_lines[t].empty()) result.lines.push_back(std::move(new_lines[t]));
    else if (const auto done = done_lines.find(tasks[t].key); done != done_lines.end()) result.lines.push_back(done->second);
  }
  return result;
}

nlohmann::json grid_sweep_json(const GridSweepSettings& o, const GridSweepResult& result) {
  nlohmann::json metadata = {{"engine", o.engine.name},
                             {"nodes", o.nodes},
                             {"network", o.network},
                             {"platform", o.platform},
                             {"strategy", o.strategy},
                             {"batch", o.batch},
                             {"set", o.sets},
                             {"axes", o.axes},
                             {"rows", result.rows},
                             {"rows_computed", result.computed},
                             {"rows_resumed", result.resumed},
                             {"cnnpar_version", CNNPAR_VERSION}};
  if (o.engine.name == "simgrid") metadata["network_model"] = o.engine.network_model;
  if (o.shard)
    metadata["shard"] = shard_manifest(*o.shard, result.fingerprint, result.sweep_rows, result.rows);
  return {{"metadata", metadata},
          {"rows", rows_json(result.header, result.lines, 6 + sweep_grid_axis_columns(result.axes))}};
}

std::vector<std::size_t> axis_value_columns(const std::vector<SweepAxis>& axes) {
  std::vector<std::size_t> column;
  std::size_t next_axis_column = 6;
  for (const SweepAxis& axis : axes)
    column.push_back(axis.name == "network" ? 0 : axis.name == "platform" ? 1 : axis.name == "strategy" ? 3
                     : axis.name == "batch"  ? 5 : next_axis_column++);
  return column;
}

}  // namespace cnnpar
