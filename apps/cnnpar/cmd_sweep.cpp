// `cnnpar sweep` (experiments/grid_sweep.hpp): its flags, Ctrl-C, the outputs and the table.
#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"
#include "engines/registry.hpp"
#include "experiments/grid_sweep.hpp"

namespace cnnpar::cli {

namespace {

struct SweepCliOptions {
  ScenarioOptions scenario;
  /** A sweep file (docs/formats.md; flags given as well win), or with --merge the shards. */
  std::vector<std::string> files;
  std::string shard;               ///< I/N
  std::string merge_out;           ///< --merge OUT.csv
  std::vector<std::string> axes;
  std::string nodes = kDefaultNodes;
  std::string engine = "analytic";
  std::string network_model = "CM02";
  std::string platform_xml;
  std::optional<int> ring_messages;  ///< engine simgrid; none = its default
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

/** `--merge OUT SHARD...`: the shards' CSVs into the unsharded sweep's CSV. */
int merge_shards(const SweepCliOptions& o) {
  for (const char* flag : {"--shard", "--csv", "--json", "--axis", "--nodes", "--engine"})
    if (o.command->count(flag) > 0)
      throw InputError("command line", flag, o.command->get_option(flag)->as<std::string>(),
                       "--merge takes only the shards' CSVs; the sweep's settings are in them");
  if (!is_stream_output(o.merge_out)) check_output_path(o.merge_out, "--merge");
  for (const std::string& shard : o.files)
    if (shard == o.merge_out) throw InputError("command line", "--merge", shard, "the merged CSV would replace a shard");
  const std::string merged = merge_sweep_shards(o.files);
  OutputTransaction outputs;
  outputs.file(o.merge_out, merged);
  outputs.commit();
  if (!o.quiet && !is_stream_output(o.merge_out))
    fmt::print(stderr, "cnnpar sweep: merged {} shards, {} rows, into {}\n", o.files.size(),
               std::count(merged.begin(), merged.end(), '\n') - 1, o.merge_out);
  return 0;
}

int run_sweep(SweepCliOptions o) {
  if (!o.merge_out.empty()) return merge_shards(o);
  if (o.files.size() > 1)
    throw InputError("command line", "FILE", o.files[1], "one sweep file at most (several files are for --merge)");
  const std::string file = o.files.empty() ? "" : o.files.front();
  std::optional<ShardSpec> shard;
  if (!o.shard.empty()) {
    shard = parse_shard(o.shard, "command line", "--shard");
    if (o.csv_out.empty() || is_stream_output(o.csv_out))
      throw InputError("command line", "--shard", o.shard, "a shard writes its rows to a file: give --csv FILE");
  }
  check_output_path(o.json_out, "--json");
  if (!o.csv_out.empty() && o.csv_out != "-") {
    std::error_code error;
    if (std::filesystem::is_directory(o.csv_out, error))
      throw InputError("command line", "--csv", o.csv_out, "is a folder; give a file");
    if (!std::filesystem::exists(o.csv_out, error)) check_output_path(o.csv_out, "--csv");
  }
  GridSweepSettings settings{.network = o.scenario.network,
                             .platform = o.scenario.platform,
                             .strategy = o.scenario.strategy.strategy(),
                             .recompute_columns = o.scenario.strategy.recompute_columns(),
                             .conv = o.scenario.strategy.conv(),
                             .batch = o.scenario.batch,
                             .iterations = o.scenario.iterations,
                             .warmup = o.scenario.warmup,
                             .uneven_batch = o.scenario.uneven_batch,
                             .sets = o.scenario.sets,
                             .axes = o.axes,
                             .nodes = o.nodes,
                             .engine = {.name = o.engine,
                                        .network_model = o.network_model,
                                        .platform_xml = o.platform_xml,
                                        .ring_messages = o.ring_messages},
                             .workers = o.jobs,
                             .csv_log = is_stream_output(o.csv_out) ? "" : o.csv_out,
                             .shard = shard};
  if (!file.empty())
    apply_sweep_file(file, [&](const std::string& flag) { return o.command->count(flag) > 0; }, settings);
  o.scenario.strategy.set_strategy(settings.strategy);  // typed by the file's strategy when it names one
  settings.strategy_values = o.scenario.strategy.values();
  check_engine_settings(settings.engine);
  if (o.jobs < 0) throw InputError("command line", "--jobs", std::to_string(o.jobs), "must be >= 0 (0 = the cores)");

  Progress progress(settings.engine.name == "simgrid" ? "sweeping (SimGrid)" : "sweeping", o.progress, o.quiet);
  StopSignals stop_signals;
  const GridSweepResult result = run_grid_sweep(
      settings, {.progress = [&](int done, int total) { progress.update(done, total); },
                 .stop = [] { return g_stop_signal.load() != 0; },
                 .note =
                     [&](const std::string& line) {
                       if (!o.quiet) fmt::print(stderr, "cnnpar sweep: {}\n", line);
                     }});
  progress.finish();
  if (const int signal = g_stop_signal.load(); signal != 0) {
    if (!o.quiet)
      fmt::print(stderr, "cnnpar sweep: stopped by signal {} with {} of {} rows done; run it again to finish\n", signal,
                 result.resumed + result.computed, result.rows);
    throw InterruptedError(signal);
  }
  const std::vector<std::string>& lines = result.lines;
  const std::vector<SweepAxis>& axes = result.axes;
  std::string csv = result.header + "\n";
  for (const std::string& line : lines) csv += line;
  OutputTransaction outputs;
  if (!o.json_out.empty()) outputs.file(o.json_out, grid_sweep_json(settings, result).dump(2) + "\n");
  if (!o.csv_out.empty()) outputs.file(o.csv_out, csv);  // a log file is rewritten whole, in sweep order
  if (shard)  // the mark of a finished shard, which --merge requires
    outputs.file(shard_manifest_path(o.csv_out),
                 shard_manifest(*shard, result.fingerprint, result.sweep_rows, result.rows).dump(2) + "\n");
  outputs.commit();
  if (!o.quiet && o.csv_out.empty() && o.json_out != "-") {
    // A table: the axes, nodes and the headline metrics.
    std::string head;
    for (const SweepAxis& axis : axes) head += fmt::format("{:>18} ", axis.name);
    fmt::print("{}{:>6} {:>12} {:>12} {:>7} {:>8}\n", head, "nodes", "iteration s", "exposed s", "R %", "speedup");
    const std::vector<std::size_t> column = axis_value_columns(axes);
    const std::size_t next_axis_column = 6 + sweep_grid_axis_columns(axes);
    std::vector<std::string> fields;
    for (const std::string& line : lines) {
      split_csv_line(line.substr(0, line.size() - 1), fields);
      std::string row;
      for (std::size_t a = 0; a < axes.size(); ++a)
        row += fmt::format("{:>18} ", fields[column[a]].empty() ? "-" : fields[column[a]]);
      const std::size_t m = next_axis_column;  // nodes, iteration_s, compute_s, comm_s, exposed_comm_s, R, speedup, eff
      fmt::print("{}{:>6} {:>12.6f} {:>12.6f} {:>7.1f} {:>8.2f}\n", row, fields[m], std::stod(fields[m + 1]),
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
  sub->add_option("FILE", o->files,
                  "a sweep file (axes, sets and the scenario; flags given as well win); with --merge, the shards' CSVs");
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
  add_ring_messages_option(*sub, o->ring_messages);
  flags::csv_out(*sub, o->csv_out, "a row per configuration (appended as each finishes; a rerun computes only the missing)");
  flags::json_out(*sub, o->json_out, "the rows and the sweep's settings, when it completes");
  sub->add_option("--jobs,-j", o->jobs, "configurations at once (threads for analytic, forked children for SimGrid; 0 = the cores)")
      ->capture_default_str();
  sub->add_option("--shard", o->shard,
                  "compute only shard I of N (0-based; row t of the sweep is in shard t mod N) into --csv, with a "
                  "manifest CSV.shard.json once done; e.g. --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT")
      ->type_name("I/N");
  sub->add_option("--merge", o->merge_out,
                  "merge the CSVs of every shard of one sweep (given as FILE...) into OUT, the CSV the unsharded "
                  "sweep writes")
      ->type_name("OUT");
  flags::quiet(*sub, o->quiet);
  flags::progress(*sub, o->progress);
  o->command = sub;
  return [o] { return run_sweep(*o); };
}

}  // namespace cnnpar::cli
