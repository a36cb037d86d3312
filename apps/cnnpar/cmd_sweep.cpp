// `cnnpar sweep`: the cross product of axes (platform paths, strategy options, strategy,
// network, platform, batch) × node counts on one engine, one CSV row per configuration.
// The CSV is also the sweep's log: each finished row is appended at once, so an interrupted
// sweep loses no finished row and a rerun computes only the missing ones.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include "analysis/metrics.hpp"
#include "experiments/sweep.hpp"
#include "experiments/sweep_grid.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "workload/overrides.hpp"
#include "model/scenarios.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"
#include "sim/analytic/analytic_engine.hpp"
#ifdef CNNPAR_HAVE_SIMGRID
#include "sim/simgrid/simgrid_engine.hpp"
#endif

namespace cnnpar::cli {

namespace {

struct SweepCliOptions {
  ScenarioOptions scenario;
  std::string file;  ///< a sweep file (docs/formats.md); flags given as well win
  std::vector<std::string> axes;
  std::string nodes = kDefaultNodes;
  std::string engine = "analytic";
  std::string network_model = "CM02";
  std::string platform_xml;
  std::string csv_out, json_out;
  int jobs = 0;  ///< 0 = the machine's cores
  bool quiet = false;
  bool progress = false;
  CLI::App* command = nullptr;
};

// SIGINT/SIGTERM while the sweep runs: finish the configurations in hand, then stop.
std::atomic<int> g_stop_signal{0};
extern "C" void record_stop_signal(int signal) { g_stop_signal.store(signal); }

class StopSignals {
 public:
  StopSignals() {
    g_stop_signal.store(0);
    struct sigaction action {};
    action.sa_handler = record_stop_signal;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, &old_int_);
    ::sigaction(SIGTERM, &action, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

/** The sweep file's settings for every flag not given (a sweep file is a command line kept). */
void apply_sweep_file(SweepCliOptions& o) {
  const std::string& path = o.file;
  const nlohmann::json document = read_json_file(path);
  const JsonNode root(document, path);
  root.check_keys({"format", "network", "platform", "strategy", "batch", "iterations", "warmup", "uneven_batch", "nodes",
                   "engine", "set", "axes"});
  if (root.string_or("format", "cnnpar-sweep") != "cnnpar-sweep") root.at("format").fail("expected \"cnnpar-sweep\"");
  const auto given = [&](const char* flag) { return o.command->count(flag) > 0; };
  ScenarioOptions& s = o.scenario;
  if (!given("--network") && root.has("network")) s.network = root.at("network").as_string();
  if (!given("--platform") && root.has("platform")) s.platform = root.at("platform").as_string();
  if (!given("--strategy") && root.has("strategy")) s.strategy.set_strategy(root.at("strategy").as_string());
  if (!given("--batch") && root.has("batch")) s.batch = root.at("batch").as_positive_int();
  if (!given("--iterations") && root.has("iterations")) s.iterations = int(root.at("iterations").as_int_in(1, 1000));
  if (!given("--warmup") && root.has("warmup")) s.warmup = int(root.at("warmup").as_int_in(0, 999));
  if (!given("--uneven-batch") && root.has("uneven_batch")) s.uneven_batch = root.at("uneven_batch").as_bool();
  if (!given("--nodes") && root.has("nodes")) o.nodes = root.at("nodes").as_string();
  if (!given("--engine") && root.has("engine")) o.engine = root.at("engine").as_string();
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
      std::string text = name + "=";
      const std::vector<JsonNode> items = list.items();
      if (items.empty()) list.fail("an axis needs at least one value");
      for (std::size_t i = 0; i < items.size(); ++i) {
        const nlohmann::json& raw = items[i].raw();
        const std::string value = raw.is_string() ? raw.get<std::string>() : raw.dump();
        if (value.empty() || value.find(',') != std::string::npos) items[i].fail("an axis value is a non-empty text without ','");
        text += (i ? "," : "") + value;
      }
      parse_axis(text, path, list.path());
      // An axis given on the command line replaces the file's axis of that name.
      const bool overridden = std::any_of(o.axes.begin(), o.axes.end(),
                                          [&](const std::string& a) { return a.rfind(name + "=", 0) == 0; });
      if (!overridden) axes.push_back(text);
    }
    o.axes.insert(o.axes.begin(), axes.begin(), axes.end());
  }
}

/** One point of the grid, ready to run. */
struct PreparedPoint {
  SweepPoint point;
  const Network* network = nullptr;
  Platform platform;
  StrategyOptions strategy;  ///< ranks set per task
  ConfigColumns config;
};

std::vector<PreparedPoint> prepare_points(const SweepCliOptions& o, const std::vector<SweepAxis>& axes,
                                          const std::vector<SweepPoint>& points, const std::vector<int>& nodes,
                                          std::map<std::string, Network>& networks,
                                          const std::string& platform_shown) {
  const std::string origin = "command line";
  std::vector<Override> base_sets;
  for (const std::string& text : o.scenario.sets) base_sets.push_back(parse_override(text, origin, "--set"));
  const bool strategy_axis = std::any_of(axes.begin(), axes.end(), [](const SweepAxis& a) { return a.name == "strategy"; });
  // The strategy flags (--k 9) are typed by --strategy; with a strategy axis use --set k=9.
  const nlohmann::json flag_values = strategy_axis ? nlohmann::json::object() : o.scenario.strategy.values();
  // A strategy option set for the whole sweep must mean something to one of its strategies.
  const auto strategy_axis_it = std::find_if(axes.begin(), axes.end(), [](const SweepAxis& a) { return a.name == "strategy"; });
  const std::vector<std::string> strategies = strategy_axis_it == axes.end()
                                                  ? std::vector<std::string>{o.scenario.strategy.strategy()}
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
    const ScenarioDocument base_platform = load_scenario("platforms", o.scenario.platform);
    platform_with_overrides(base_platform.json, base_platform.origin, base_sets, origin, "--set");
  }
  std::vector<PreparedPoint> prepared;
  for (const SweepPoint& point : points) {
    std::string network_name = o.scenario.network, platform_name = o.scenario.platform;
    std::int64_t batch = o.scenario.batch;
    StrategyOptions strategy;
    strategy.name = o.scenario.strategy.strategy();
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
    strategy.iterations = o.scenario.iterations;
    strategy.warmup_iterations = o.scenario.warmup;
    strategy.uneven_batch = o.scenario.uneven_batch;
    strategy.recompute_columns = o.scenario.strategy.recompute_columns();
    strategy.origin = origin;
    if (!strategy_axis) strategy.values = flag_values;
    apply_strategy_overrides(strategy, point_sets, origin, "--set");
    for (int p_nodes : nodes) {
      if (p_nodes > p.platform.nodes.count)
        throw InputError(origin, "--nodes", o.nodes,
                         fmt::format("{} nodes asked for, but platform {} has {}", p_nodes, p.platform.name,
                                     p.platform.nodes.count));
      StrategyOptions at_p = strategy;
      at_p.ranks = p_nodes;
      validate_strategy_options(*p.network, at_p);
    }
    p.strategy = strategy;
    p.config = config_columns(to_json(strategy), p.network->name,
                              platform_name == o.scenario.platform ? platform_shown : p.platform.name, o.engine);
    prepared.push_back(std::move(p));
  }
  return prepared;
}

/** Appends whole lines to the CSV with one write(2) each on an O_APPEND descriptor. */
class RowLog {
 public:
  explicit RowLog(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot append to " + path + ": " + std::strerror(errno));
  }
  ~RowLog() {
    if (fd_ >= 0) ::close(fd_);
  }
  RowLog(const RowLog&) = delete;
  RowLog& operator=(const RowLog&) = delete;
  void append(const std::string& line) {
    std::lock_guard lock(mutex_);
    if (::write(fd_, line.data(), line.size()) != ssize_t(line.size()))
      throw std::runtime_error("cannot append to " + path_ + ": " + std::strerror(errno));
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::mutex mutex_;
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

int run_sweep(SweepCliOptions o) {
  check_output_path(o.json_out, "--json");
  if (!o.csv_out.empty() && o.csv_out != "-") {
    std::error_code error;
    if (std::filesystem::is_directory(o.csv_out, error))
      throw InputError("command line", "--csv", o.csv_out, "is a folder; give a file");
    if (!std::filesystem::exists(o.csv_out, error)) check_output_path(o.csv_out, "--csv");
  }
  if (!o.file.empty()) apply_sweep_file(o);
  if (o.engine != "analytic" && o.engine != "simgrid")
    throw InputError("command line", "--engine", o.engine, "expected analytic or simgrid");
#ifndef CNNPAR_HAVE_SIMGRID
  if (o.engine == "simgrid")
    throw InputError("command line", "--engine", o.engine,
                     "this cnnpar was built without SimGrid (configure with CNNPAR_WITH_SIMGRID=ON)");
#endif
  check_simgrid_settings(o.engine, o.network_model, o.platform_xml);
  if (o.jobs < 0) throw InputError("command line", "--jobs", std::to_string(o.jobs), "must be >= 0 (0 = the cores)");
  std::vector<SweepAxis> axes;
  for (const std::string& text : o.axes) {
    axes.push_back(parse_axis(text, "command line", "--axis"));
    const std::string& name = axes.back().name;
    if (name == "nodes") throw InputError("command line", "--axis", text, "node counts are --nodes");
  }
  const std::vector<int> nodes = parse_node_list(o.nodes, "command line", "--nodes");
  const std::vector<SweepPoint> points = sweep_points(axes, o.scenario.strategy.strategy(), "command line", "--axis");
  std::map<std::string, Network> networks;
  const std::string platform_shown = platform_label(load_platform(o.scenario.platform), o.platform_xml);
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
    for (int p : nodes) tasks.push_back({i, p, sweep_grid_row_key(prepared[i].config, axes, prepared[i].point, p)});

  // Resume: the rows an earlier run finished stay; a torn last line is cut.
  const bool resumable = !o.csv_out.empty() && !is_stream_output(o.csv_out);
  std::map<std::string, std::string> done_lines;
  std::error_code error;
  if (resumable && std::filesystem::exists(o.csv_out, error) && std::filesystem::file_size(o.csv_out, error) > 0) {
    ExistingSweepRows existing = read_sweep_csv(o.csv_out, header, sweep_grid_axis_columns(axes));
    std::set<std::string> keys;
    for (const Task& task : tasks) keys.insert(task.key);
    for (const auto& [key, line] : existing.lines_by_key)
      if (keys.count(key) == 0)
        throw InputError(o.csv_out, "--csv", line.substr(0, line.size() - 1),
                         "this row is not a configuration of this sweep (other fixed flags or --set?); give another --csv");
    if (existing.torn_bytes > 0) std::filesystem::resize_file(o.csv_out, existing.whole_bytes);
    if (existing.whole_bytes == 0) std::filesystem::resize_file(o.csv_out, 0);
    done_lines = std::move(existing.lines_by_key);
  }
  std::vector<std::size_t> todo;
  for (std::size_t t = 0; t < tasks.size(); ++t)
    if (done_lines.count(tasks[t].key) == 0) todo.push_back(t);
  if (!o.quiet && !done_lines.empty())
    std::fprintf(stderr, "cnnpar sweep: %zu of %zu rows already done, computing %zu\n", done_lines.size(), tasks.size(),
                 todo.size());

  std::unique_ptr<RowLog> log;
  if (resumable) {
    const bool fresh = !std::filesystem::exists(o.csv_out, error) || std::filesystem::file_size(o.csv_out, error) == 0;
    log = std::make_unique<RowLog>(o.csv_out);
    if (fresh) log->append(header + "\n");
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
  Progress progress(o.engine == "simgrid" ? "sweeping (SimGrid)" : "sweeping", o.progress, o.quiet);
  std::atomic<int> finished{0};
  std::mutex progress_mutex, rows_mutex;
  std::map<std::string, std::string> new_lines;
  const auto record = [&](const Job& job, const TraceMetrics& metrics) {
    if (job.nodes == 1) iteration_1_s[job.point] = metrics.iteration_s;
    if (job.task >= 0) {
      const PreparedPoint& p = prepared[job.point];
      const std::string line =
          sweep_grid_csv_line(p.config, axes, p.point, make_sweep_row(job.nodes, metrics, iteration_1_s[job.point]));
      if (log) log->append(line);
      std::lock_guard lock(rows_mutex);
      new_lines[tasks[std::size_t(job.task)].key] = line;
    }
    const int count = ++finished;
    std::lock_guard lock(progress_mutex);
    progress.update(count, total);
  };
  const auto schedule_of = [&](const Job& job) {
    StrategyOptions strategy =
        job.nodes == 1 ? single_rank_baseline(prepared[job.point].strategy) : prepared[job.point].strategy;
    strategy.ranks = job.nodes;
    return build_schedule(*prepared[job.point].network, prepared[job.point].platform, strategy);
  };

  StopSignals stop_signals;
  const int jobs = o.jobs > 0 ? o.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
  for (const std::vector<Job>* phase : {&baseline_jobs, &row_jobs}) {
    if (g_stop_signal.load() != 0) break;
    if (o.engine == "analytic") {
      tbb::global_control threads(tbb::global_control::max_allowed_parallelism, std::size_t(jobs));
      tbb::enumerable_thread_specific<std::unique_ptr<Engine>> engines([] { return make_analytic_engine(); });
      std::vector<std::exception_ptr> errors(phase->size());
      tbb::parallel_for(std::size_t(0), phase->size(), [&](std::size_t j) {
        if (g_stop_signal.load() != 0) return;
        try {
          const Job& job = (*phase)[j];
          const Trace trace = engines.local()->run(schedule_of(job), prepared[job.point].platform);
          record(job, compute_metrics(trace, MetricsDetail{false, false}));
        } catch (...) {
          errors[j] = std::current_exception();
        }
      });
      for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    } else {
#ifdef CNNPAR_HAVE_SIMGRID
      SimgridOptions sg;
      sg.network_model = o.network_model;
      sg.platform_xml = o.platform_xml;
      // Batches of forked simulations: rows are appended after each, so an interruption
      // loses at most the batch in flight.
      const std::size_t batch = std::size_t(2 * jobs);
      for (std::size_t begin = 0; begin < phase->size() && g_stop_signal.load() == 0; begin += batch) {
        const std::size_t end = std::min(phase->size(), begin + batch);
        std::vector<Schedule> schedules;
        for (std::size_t j = begin; j < end; ++j) schedules.push_back(schedule_of((*phase)[j]));
        std::vector<std::pair<const Schedule*, const Platform*>> pairs;
        for (std::size_t j = begin; j < end; ++j) pairs.emplace_back(&schedules[j - begin], &prepared[(*phase)[j].point].platform);
        const std::vector<Trace> traces = simulate_many(pairs, sg);
        for (std::size_t j = begin; j < end; ++j)
          record((*phase)[j], compute_metrics(traces[j - begin], MetricsDetail{false, false}));
      }
#endif
    }
  }
  progress.finish();
  if (const int signal = g_stop_signal.load(); signal != 0) {
    if (!o.quiet)
      std::fprintf(stderr, "cnnpar sweep: stopped by signal %d with %zu of %zu rows done; run it again to finish\n", signal,
                   done_lines.size() + new_lines.size(), tasks.size());
    throw InterruptedError(signal);
  }

  // Complete: the rows in sweep order (points, then node counts).
  std::vector<std::string> lines;
  for (const Task& task : tasks) {
    const auto found = new_lines.find(task.key);
    lines.push_back(found != new_lines.end() ? found->second : done_lines.at(task.key));
  }
  std::string csv = header + "\n";
  for (const std::string& line : lines) csv += line;
  nlohmann::json metadata = {{"engine", o.engine},
                             {"nodes", o.nodes},
                             {"network", o.scenario.network},
                             {"platform", o.scenario.platform},
                             {"strategy", o.scenario.strategy.strategy()},
                             {"batch", o.scenario.batch},
                             {"set", o.scenario.sets},
                             {"axes", o.axes},
                             {"rows", tasks.size()},
                             {"rows_computed", new_lines.size()},
                             {"rows_resumed", done_lines.size()},
                             {"cnnpar_version", CNNPAR_VERSION}};
  if (o.engine == "simgrid") metadata["network_model"] = o.network_model;
  OutputTransaction outputs;
  if (!o.json_out.empty())
    outputs.file(o.json_out, nlohmann::json{{"metadata", metadata}, {"rows", rows_json(header, lines, 6 + sweep_grid_axis_columns(axes))}}.dump(2) + "\n");
  if (!o.csv_out.empty()) outputs.file(o.csv_out, csv);  // a log file is rewritten whole, in sweep order
  outputs.commit();
  if (!o.quiet && o.csv_out.empty() && o.json_out != "-") {
    // A table: the axes, nodes and the headline metrics.
    std::string head;
    for (const SweepAxis& axis : axes) head += fmt::format("{:>18} ", axis.name);
    std::printf("%s%6s %12s %12s %7s %8s\n", head.c_str(), "nodes", "iteration s", "exposed s", "R %", "speedup");
    // Where each axis's value is in a row: its configuration column, or its own column.
    std::vector<std::size_t> column;
    std::size_t next_axis_column = 6;
    for (const SweepAxis& axis : axes)
      column.push_back(axis.name == "network" ? 0 : axis.name == "platform" ? 1 : axis.name == "strategy" ? 3
                       : axis.name == "batch"  ? 5 : next_axis_column++);
    std::vector<std::string> fields;
    for (const std::string& line : lines) {
      split_csv_line(line.substr(0, line.size() - 1), fields);
      std::string row;
      for (std::size_t a = 0; a < axes.size(); ++a)
        row += fmt::format("{:>18} ", fields[column[a]].empty() ? "-" : fields[column[a]]);
      const std::size_t m = next_axis_column;  // nodes, iteration_s, compute_s, comm_s, exposed_comm_s, R, speedup, eff
      std::printf("%s%6s %12.6f %12.6f %7.1f %8.2f\n", row.c_str(), fields[m].c_str(), std::stod(fields[m + 1]),
                  std::stod(fields[m + 4]), std::stod(fields[m + 5]), std::stod(fields[m + 6]));
    }
  }
  return 0;
}

}  // namespace

Runner add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepCliOptions>();
  CLI::App* sub = app.add_subcommand("sweep", "predict the cross product of axes (platform values, strategy options, "
                                              "strategies, networks, batches) over node counts: one CSV row each");
  sub->add_option("FILE", o->file, "a sweep file (axes, sets and the scenario; flags given as well win)");
  add_scenario_options(*sub, o->scenario);
  sub->add_option("--axis", o->axes,
                  "an axis NAME=V1,V2,...: a platform path (network.bandwidth=1Gbps,10Gbps), a strategy option "
                  "(k=3,9), strategy, network, platform or batch; repeatable")
      ->type_name("NAME=VALUES")
      ->allow_extra_args(false);
  flags::nodes(*sub, o->nodes)->default_str(kDefaultNodes);
  flags::engine(*sub, o->engine);
  flags::network_model(*sub, o->network_model);
  flags::platform_xml(*sub, o->platform_xml);
  flags::csv_out(*sub, o->csv_out, "a row per configuration (appended as each finishes; a rerun computes only the missing)");
  flags::json_out(*sub, o->json_out, "the rows and the sweep's settings, when it completes");
  sub->add_option("--jobs,-j", o->jobs, "configurations at once (threads for analytic, forked children for SimGrid; 0 = the cores)")
      ->capture_default_str();
  flags::quiet(*sub, o->quiet);
  flags::progress(*sub, o->progress);
  o->command = sub;
  return [o] { return run_sweep(*o); };
}

}  // namespace cnnpar::cli
