#include "experiments/validation_run.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"
#include "analysis/metrics.hpp"
#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/output_files.hpp"
#include "base/text.hpp"
#include "base/units.hpp"
#include "engines/registry.hpp"
#include "experiments/validate_target.hpp"
#include "launch/launcher.hpp"
#include "model/scenarios.hpp"
#include "workload/conv_choice.hpp"
#include "workload/run_spec.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

namespace fs = std::filesystem;

namespace {

/** Seconds a run may wait on one collective: the executor's stall detection. A 100 Mbit/s link
 *  moves a VGG-sized allreduce in seconds, far below this. */
constexpr double kRunStallTimeout_s = 300;
/** Calibration sizes: at least 1 MiB (the bandwidth fit needs large messages), at most 256 MiB. */
constexpr double kLeastLargestMessage_bytes = 1024.0 * 1024;
constexpr double kMostLargestMessage_bytes = 256.0 * 1024 * 1024;

}  // namespace

std::vector<std::string> parse_validation_engines(const std::string& text) {
  std::vector<std::string> engines;
  for (const std::string& engine : split(text, ',')) {
    if (engine != "analytic" && engine != "simgrid")
      throw InputError("command line", "--engines", text, "engines are analytic and simgrid, comma-separated");
    if (std::find(engines.begin(), engines.end(), engine) == engines.end()) engines.push_back(engine);
  }
  return engines;
}

class ValidationRun::Impl {
 public:
  Impl(ValidationGrid grid, ValidationRunOptions o)
      : o_(std::move(o)), grid_(std::move(grid)), engines_(o_.engines),
        out_(o_.out.empty() ? "validation-" + grid_.name : o_.out), report_(o_.report.empty() ? out_ : o_.report) {}

  ValidationOutcome run() {
    const std::vector<ValidationConfig> configs = validation_configs(grid_);
    std::vector<std::optional<ConfigResult>> results(configs.size());
    fs::create_directories(out_);
    for (std::size_t i = 0; i < configs.size(); ++i) results[i] = finished_result(configs[i]);
    const auto finished = std::count_if(results.begin(), results.end(), [](const auto& r) { return r.has_value(); });
    say(fmt::format("cnnpar validate: grid {} ({}): {} configurations, {} finished, {} to run; work folder {}",
                    grid_.name, grid_.file, configs.size(), finished, configs.size() - std::size_t(finished), out_));
    ValidationOutcome outcome;
    if (o_.repredict) repredict(results);
    const bool runs = !o_.report_only && !o_.repredict;
    if (runs && std::size_t(finished) < configs.size()) outcome.failures = measure(configs, results);
    outcome.configurations = configs.size();
    outcome.report_folder = report_;
    outcome.report = write_report(results);
    return outcome;
  }

  /** Checks that need no run: the mode (testbed or cluster) against the grid, the outputs. */
  void check() {
    // The target first: without root the testbed is the one thing to say.
    if (!o_.report_only && !o_.repredict) {
      target_ = make_run_target(grid_, o_.mpiexec, o_.hostfile, o_.testbed, o_.keep_testbed);
      executor_ = launch::find_executor();
    }
    check_output_folder(report_, "--report");
    if (!o_.out.empty() || !fs::exists(out_)) check_output_folder(out_, "--out");
    check_fit();
  }

 private:
  void say(const std::string& line) const {
    if (o_.say) o_.say(line);
  }

  void check_fit() const {
    if (!grid_.fit.enabled()) return;
    if (!o_.fit.check)
      throw InputError(grid_.file, "/fit", "(a fit)", "this cnnpar was built without GSL (CNNPAR_WITH_GSL=ON): no fit");
    o_.fit.check(grid_);
  }

  /** The grid's fit on the finished runs, into the report. */
  void fit_into(ValidationReport& report) const {
    if (!grid_.fit.enabled() || report.results.empty() || !o_.fit.apply) return;
    o_.fit.apply(grid_, report, (fs::path(out_) / "runs").string());
  }

  std::string run_folder(const ValidationConfig& config) const { return (fs::path(out_) / "runs" / config_key(grid_, config)).string(); }

  std::optional<ConfigResult> finished_result(const ValidationConfig& config) const {
    const fs::path file = fs::path(run_folder(config)) / "result.json";
    if (!fs::exists(file)) return std::nullopt;
    try {
      ConfigResult result = config_result_from_json(read_json_file(file.string()), file.string());
      if (result.settings != config_settings(grid_, config) || result.label != config_label(grid_, config)) return std::nullopt;
      for (const std::string& engine : engines_)
        if (result.predicted.count(engine) == 0) return std::nullopt;
      return result;
    } catch (const InputError&) {
      return std::nullopt;  // a result of another version or a damaged one: run it again
    }
  }

  int measure(const std::vector<ValidationConfig>& configs, std::vector<std::optional<ConfigResult>>& results) {
    // OpenBLAS in every rank computes on one thread: the platform's node is one core here.
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    target_->start();
    base_platform_ = write_base_platform();
    int failures = 0, done = 0;
    const int total = int(std::count_if(results.begin(), results.end(), [](const auto& r) { return !r.has_value(); }));
    const auto started = std::chrono::steady_clock::now();
    // One link setting at a time (the testbed is reshaped between them), then rank counts,
    // networks and collectives modes: each (network, link, ranks, mode) is calibrated once before
    // its runs, and a configuration's two modes run close together in time.
    for (std::size_t link = 0; link < grid_.links.size(); ++link) {
      bool link_set = false;
      for (int ranks : grid_.ranks)
        for (const std::string& network : grid_.networks)
          for (const std::string& collectives : grid_.collectives) {
            std::vector<std::size_t> todo;
            for (std::size_t i = 0; i < configs.size(); ++i)
              if (!results[i] && configs[i].link == link && configs[i].strategy.ranks == ranks &&
                  configs[i].network == network && configs[i].collectives == collectives)
                todo.push_back(i);
            if (todo.empty()) continue;
            if (!link_set) {
              target_->set_link(grid_.links[link]);
              link_set = true;
            }
            std::string platform;
            try {
              platform = calibration(network, link, ranks, configs[todo.front()].compute, collectives);
            } catch (const InterruptedError&) {
              throw;  // Ctrl-C ends the validation (main: 128 + signal); what finished is kept
            } catch (const std::runtime_error& error) {
              say(fmt::format("cnnpar validate: {}", error.what()));
              failures += int(todo.size());
              done += int(todo.size());
              continue;
            }
            for (std::size_t i : todo) {
              ++done;
              try {
                results[i] = measure_one(configs[i], platform);  // may recalibrate: platform for the rest
                say(progress_line(done, total, started, *results[i]));
              } catch (const InterruptedError&) {
                throw;
              } catch (const std::runtime_error& error) {
                ++failures;
                say(fmt::format("[{}/{}] {}: not measured: {}", done, total, config_label(grid_, configs[i]), error.what()));
              }
            }
          }
    }
    target_->finish();
    return failures;
  }

  std::string progress_line(int done, int total, std::chrono::steady_clock::time_point started, const ConfigResult& r,
                            const std::string& what = "") const {
    std::string line = fmt::format("[{}/{}] {}{}: measured {:.2f} ms", done, total, what.empty() ? "" : what + " ", r.label,
                                   1e3 * r.measured.iteration_s);
    for (const auto& [engine, p] : r.predicted) {
      line += fmt::format(", {} {:.2f} ms ({:+.1f} %)", engine, 1e3 * p.iteration_s, r.error_percent(engine));
      const auto d = r.diagnosis.find(engine);
      if (d != r.diagnosis.end() && d->second.cause != MissCause::none) line += fmt::format(" [{}]", to_string(d->second.cause));
    }
    const double elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (done < total) line += fmt::format("; about {} left", format_remaining(elapsed_s / done * (total - done)));
    return line;
  }

  /** The grid's platform with as many nodes as the largest rank count: the base of every
   *  calibration, written once into the work folder. */
  std::string write_base_platform() {
    const fs::path file = fs::path(out_) / "calibration" / "base.json";
    fs::create_directories(file.parent_path());
    Platform base = load_platform(grid_.platform);
    base.nodes.count = std::max(base.nodes.count, grid_.testbed_nodes);
    base.nodes.speed_factors.clear();
    base.resolve_speed_factors();
    // Each calibration keeps it and measures how fast the bucket's burst passes.
    base.network.link_burst_bytes = target_->link_burst_bytes();
    write_file_atomic(file.string(), to_json(base).dump(2) + "\n");
    return file.string();
  }

  /** The largest message a calibration for `network` on `ranks` ranks needs: the largest
   *  collective of the grid's schedules (an allgather's gathered result), a power of two. */
  double largest_message_bytes(const std::string& network, int ranks) const {
    const Network net = load_network(network);
    Platform platform = load_platform(base_platform_);
    platform.network.element_bytes = kExecutorElementBytes;
    double largest = 0;
    for (const ValidationConfig& config : validation_configs(grid_)) {
      if (config.network != network || config.strategy.ranks != ranks) continue;
      const Schedule schedule = build_schedule(net, platform, config.strategy);
      for (const Collective& c : schedule.collectives)
        largest = std::max(largest, c.kind == CollectiveKind::allgather ? c.bytes * double(c.group.size()) : c.bytes);
    }
    double bytes = kLeastLargestMessage_bytes;
    while (bytes < largest && bytes < kMostLargestMessage_bytes) bytes *= 2;
    return bytes;
  }

  /** True for a calibration file that reads back as a platform (absent or damaged: measure it). */
  static bool usable_platform(const fs::path& file) {
    if (!fs::exists(file)) return false;
    try {
      (void)load_platform(file.string());
      return true;
    } catch (const InputError&) {
      return false;
    }
  }

  /** Runs `cnnpar-run --calibrate` on `ranks` ranks into `file`, its output into FILE.log, up
   *  to run_attempts times: Hydra may report status 1 for a multi-rank job that completed (a
   *  rank's PMI socket closing before its exit, apps/cnnpar-run/finalize.cpp). */
  void run_calibration(const fs::path& file, int ranks, const std::vector<std::string>& arguments, const std::string& what) {
    const std::string log = (fs::path(file).replace_extension(".log")).string();
    say(fmt::format("cnnpar validate: calibrating {}; log {}", what, log));
    std::vector<std::string> program = {executor_, "--calibrate", "--threads", "1", "--repeats",
                                        std::to_string(grid_.calibration_repeats), "--timeout-s",
                                        fmt::format("{:g}", kRunStallTimeout_s), "--out", file.string()};
    program.insert(program.end(), arguments.begin(), arguments.end());
    ChildOptions child;
    child.output_file = log;
    for (int attempt = 1;; ++attempt) {
      const int status = run_child(target_->command(ranks, program), child);
      if (status == 0 && fs::exists(file)) return;
      if (attempt >= grid_.run_attempts)
        throw std::runtime_error(fmt::format("calibration of {} failed (status {}); see {}", what, status, log));
      say(fmt::format("cnnpar validate: calibration of {} failed (status {}), attempt {} of {}; calibrating again", what,
                      status, attempt, grid_.run_attempts));
    }
  }

  /** Times `network`'s GEMM grid up to the largest batch into `file`, on the ranks that compute
   *  for real, all at once (so co-located ranks contend as in the runs); the rest of the
   *  platform is kept from `platform_file`. */
  void calibrate_compute(const fs::path& file, const std::string& network, const std::string& platform_file) {
    const int ranks = std::max(1, std::min(grid_.real_compute_max_ranks, grid_.testbed_nodes));
    const std::int64_t batch = *std::max_element(grid_.batches.begin(), grid_.batches.end());
    run_calibration(file, ranks,
                    {"--calibrate-parts", "compute", "--network", network, "--platform", platform_file, "--batch",
                     std::to_string(batch), "--compute", "real", "--conv", grid_.conv.text()},
                    fmt::format("the compute of {} on {} ranks", network, ranks));
  }

  /** Compute, once per network, on the base platform. */
  std::string compute_calibration(const std::string& network) {
    const fs::path file = fs::path(out_) / "calibration" / (fs::path(network).stem().string() + "_compute.json");
    if (!usable_platform(file)) calibrate_compute(file, network, base_platform_);
    return file.string();
  }

  /** Compute measured again over `platform_file` (its network and progress kept), into the next
   *  free STEM-recalibrated-N.json beside it: a run found the machine computing off the speed
   *  that file was calibrated at (a shared machine drifts over minutes to hours). */
  std::string recalibrated_compute(const std::string& network, const std::string& platform_file) {
    const std::string group = group_calibration(platform_file);  // numbered from the group's calibration
    std::string file;
    for (int n = 1; file.empty() || fs::exists(file); ++n) file = recalibrated_platform_file(group, n);
    calibrate_compute(file, network, platform_file);
    return file;
  }

  /** Network and progress, once per (network, link setting, rank count, collectives mode), from
   *  the network's compute calibration: collective curves in the runs' collective mode, and the
   *  progress mechanisms in their progress and compute modes. */
  std::string calibration(const std::string& network, std::size_t link, int ranks, const std::string& compute,
                          const std::string& collectives) {
    const std::string stem = fmt::format("{}_{}_p{}{}", fs::path(network).stem().string(), grid_.links[link].key(), ranks,
                                         collectives_key_suffix(collectives));
    const fs::path file = fs::path(out_) / "calibration" / (stem + ".json");
    if (usable_platform(file)) return file.string();
    const std::string compute_file = compute_calibration(network);
    const std::int64_t batch = *std::max_element(grid_.batches.begin(), grid_.batches.end());
    const double largest = largest_message_bytes(network, ranks);
    run_calibration(file, ranks,
                    {"--calibrate-parts", "network,progress", "--network", network, "--platform", compute_file,
                     "--batch", std::to_string(batch), "--max-message", fmt::format("{:.0f}", largest),
                     "--comm-progress", grid_.comm_progress, "--collectives", collectives, "--compute", compute},
                    fmt::format("{} on {}, {} ranks, {} collectives (messages up to {})", network,
                                grid_.links[link].label(), ranks, collectives, format_bytes(largest)));
    return file.string();
  }

  /** One run of `spec_file` on the target, its trace into `trace_file` (cnnpar-run's --trace
   *  overrides the spec's), retried once: a run on a shared machine can fail for reasons of the
   *  moment (a stall timeout, a launch that hangs until the run's time limit ends it). */
  void run_measured(const ValidationConfig& config, const std::string& spec_file, double predicted_run_s,
                    ChildOptions child, const std::string& trace_file) {
    child.time_limit_s = o_.run_allowance_s + kRunTimeFactor * predicted_run_s;
    std::string failure;
    for (int attempt = 1; attempt <= 2; ++attempt) {
      fs::remove(trace_file);
      try {
        const int status = run_child(target_->command(config.strategy.ranks,
                                                      {executor_, "--spec", spec_file, "--trace", trace_file, "--quiet"}),
                                     child);
        if (status == 0 && fs::exists(trace_file)) return;
        failure = fmt::format("status {}", status);
      } catch (const ChildTimeLimitError& e) {
        failure = fmt::format("ended: still running after {} ({:g} s + {:g} x its predicted {})",
                              format_seconds(e.limit_s()), o_.run_allowance_s, kRunTimeFactor,
                              format_seconds(predicted_run_s));
      }
      if (attempt == 1)
        say(fmt::format("{}: cnnpar-run failed ({}); running again", config_label(grid_, config), failure));
    }
    throw std::runtime_error(fmt::format("cnnpar-run failed twice ({}); see {}", failure, child.output_file));
  }

  /** One configuration's prediction from a calibrated platform, and the run spec measuring it. */
  struct Prediction {
    std::string platform_file;
    std::map<std::string, Trace> traces;  ///< by engine
    double run_s = 0;                     ///< the whole run (warm-up and measured iterations), predicted
    const Trace& reference() const { return traces.count("analytic") ? traces.at("analytic") : traces.begin()->second; }
  };

  /** Predicts `config` from `platform_file` with every engine and writes FOLDER/spec.json, the
   *  run that measures it on that platform. */
  Prediction predict(const ValidationConfig& config, const std::string& platform_file, const fs::path& folder) {
    // The same schedule on the calibrated platform, the executor's FP32 messages. Its iteration
    // time sets how many iterations the run needs (measure_seconds).
    const Network network = load_network(config.network);
    Platform platform = load_platform(platform_file);
    platform.network.element_bytes = kExecutorElementBytes;
    StrategyOptions strategy = config.strategy;
    if (strategy.conv.mode == ConvPaths::Mode::automatic)  // the run takes the layers the prediction prices
      strategy.conv = conv_paths_priced_faster(network, platform, strategy);
    if (grid_.measure_seconds > 0) {
      const Schedule first = build_schedule(network, platform, strategy);
      verify_or_throw(first, "<schedule " + strategy.name + ">", &network);
      const double predicted_s = compute_metrics(replay_once(first, platform, EngineSettings{})).iteration_s;
      strategy.iterations = run_iterations(grid_, predicted_s);
    }
    RunSpec spec;
    spec.network = config.network;
    spec.platform = platform_file;
    spec.strategy = strategy;
    spec.compute = config.compute;
    spec.comm_progress = grid_.comm_progress;
    spec.collectives = config.collectives;
    spec.threads = 1;
    spec.timeout_s = kRunStallTimeout_s;
    spec.trace = (folder / "measured.json").string();
    write_file_atomic((folder / "spec.json").string(), to_json(spec).dump(2) + "\n");
    return predict_run(network, platform_file, strategy);
  }

  /** Every engine's trace of the run of `strategy` (conv paths resolved, its iterations set) on
   *  the calibrated platform `platform_file`. */
  Prediction predict_run(const Network& network, const std::string& platform_file, const StrategyOptions& strategy) const {
    Platform platform = load_platform(platform_file);
    platform.network.element_bytes = kExecutorElementBytes;
    const Schedule schedule = build_schedule(network, platform, strategy);
    verify_or_throw(schedule, "<schedule " + strategy.name + ">", &network);
    Prediction prediction;
    prediction.platform_file = platform_file;
    for (const std::string& engine : engines_) prediction.traces[engine] = replay_once(schedule, platform, {.name = engine});
    const TraceMetrics metrics = compute_metrics(prediction.reference());
    prediction.run_s = metrics.iteration_s * double(metrics.warmup_iterations + int(metrics.measured_iterations.size()));
    return prediction;
  }

  /** Predicts every finished configuration again from its run folder's spec.json and its
   *  calibration, as measured (measured.json is kept): the runs re-priced after a change of
   *  the engines without running them again. */
  void repredict(std::vector<std::optional<ConfigResult>>& results) const {
    const int total = int(std::count_if(results.begin(), results.end(), [](const auto& r) { return r.has_value(); }));
    int done = 0;
    const auto started = std::chrono::steady_clock::now();
    for (std::optional<ConfigResult>& result : results) {
      if (!result) continue;
      *result = repredict_one(std::move(*result));
      say(progress_line(++done, total, started, *result, "predicted again for"));
    }
  }

  ConfigResult repredict_one(ConfigResult result) const {
    const fs::path folder = fs::path(out_) / "runs" / result.key;
    const std::string spec_file = (folder / "spec.json").string();
    const std::string measured_file = (folder / "measured.json").string();
    if (!fs::exists(spec_file))
      throw InputError(spec_file, "", "(missing)", "a finished run's spec is needed to predict it again");
    if (!fs::exists(measured_file))
      throw InputError(measured_file, "", "(missing)", "a finished run's measured trace is needed to predict it again");
    RunSpec spec = run_spec_from_json(read_json_file(spec_file), spec_file);
    spec.strategy.ranks = result.ranks;  // a run takes its rank count from its launch, not its spec
    // The calibration the run was predicted from, also after the work folder moved.
    std::string platform_file = spec.platform;
    if (!fs::exists(platform_file)) platform_file = (fs::path(out_) / "calibration" / fs::path(spec.platform).filename()).string();
    if (!fs::exists(platform_file))
      throw InputError(spec_file, "/platform", spec.platform, "no such calibration, nor one of its name in the work folder");
    const Trace measured = trace_from_json(read_json_file(measured_file), measured_file);
    const Prediction prediction = predict_run(load_network(spec.network), platform_file, spec.strategy);
    if (result.compute == "real")
      if (const std::optional<ComputeSpeedCheck> speed = compute_speed_check(prediction.reference(), measured))
        result.compute_speed_ratio = speed->ratio;
    result.platform = platform_file;
    OutputTransaction outputs;
    compare_into(result, prediction, measured, measured_file, folder, outputs);
    outputs.commit();
    return result;
  }

  /** Each engine's fidelity metrics and diagnosis against `measured` into `result`; the engines'
   *  traces and result.json into `outputs`. */
  void compare_into(ConfigResult& result, const Prediction& prediction, const Trace& measured,
                    const std::string& measured_file, const fs::path& folder, OutputTransaction& outputs) const {
    const TraceMetrics measured_metrics = compute_metrics(measured);
    result.measured = fidelity_metrics(measured_metrics);
    for (const std::string& engine : engines_) {
      const Trace& trace = prediction.traces.at(engine);
      check_comparable(trace, measured, engine, measured_file, false);
      const TraceMetrics predicted_metrics = compute_metrics(trace);
      result.predicted[engine] = fidelity_metrics(predicted_metrics);
      result.diagnosis[engine] =
          diagnose(trace, predicted_metrics, measured, measured_metrics, grid_.iteration_tolerance_percent);
      outputs.file((folder / (engine + ".json")).string(), to_json(trace).dump() + "\n");
    }
    outputs.file((folder / "result.json").string(), to_json(result).dump(2) + "\n");
  }

  /** Calibrated, predicted, run and compared. `platform_file` is the group's calibration; when
   *  this configuration calibrates compute again, it becomes the new file for the rest. */
  ConfigResult measure_one(const ValidationConfig& config, std::string& platform_file) {
    const fs::path folder = run_folder(config);
    fs::create_directories(folder);
    const std::string measured_file = (folder / "measured.json").string();
    const std::string spec_file = (folder / "spec.json").string();
    // The predictions first: the analytic one times the undisturbed ops of each run (compute speed check).
    Prediction prediction = predict(config, platform_file, folder);

    ChildOptions child;
    child.output_file = (folder / "run.log").string();
    // A real-compute run on a machine that computed off its calibrated speed (other load on a
    // shared machine) is measured again, at most grid.run_attempts runs; the run nearest the
    // calibration is kept as measured.json, every run's trace stays as run-N.json. When the
    // first run is off, the machine is likely to have drifted since calibration: compute is
    // calibrated again and predicted again before the runs that count (runs from the second).
    const bool real = config.compute == "real";
    const bool may_recalibrate = real && grid_.recalibrate_compute && grid_.run_attempts > 1;
    int attempts = real ? grid_.run_attempts : 1;
    std::vector<double> ratios;
    std::size_t kept = 0, first_counted = 0;
    nlohmann::json kept_document;
    Trace measured;
    for (int attempt = 1; attempt <= kMaxRunAttempts + 1; ++attempt)  // runs of an interrupted earlier call
      fs::remove(folder / fmt::format("run-{}.json", attempt));
    const auto distance = [](double ratio) { return ratio < 0 ? 0.0 : std::abs(ratio - 1); };  // nearest 1 is kept
    for (int attempt = 1; attempt <= attempts; ++attempt) {
      const std::string attempt_file = (folder / fmt::format("run-{}.json", attempt)).string();
      run_measured(config, spec_file, prediction.run_s, child, attempt_file);
      nlohmann::json document = read_json_file(attempt_file);
      Trace run = trace_from_json(document, attempt_file);
      const Trace& reference = prediction.reference();
      check_comparable(reference, run, reference.engine, attempt_file, false);
      // Sleep compute takes the calibrated times by construction: nothing to check.
      const std::optional<ComputeSpeedCheck> speed = real ? compute_speed_check(reference, run) : std::nullopt;
      ratios.push_back(speed ? speed->ratio : -1);
      if (ratios.size() - 1 == first_counted || distance(ratios.back()) < distance(ratios[kept])) {
        kept = ratios.size() - 1;
        kept_document = std::move(document);
        measured = std::move(run);
      }
      if (!compute_speed_off(ratios.back(), grid_.compute_speed_tolerance_percent)) break;
      if (attempt == 1 && may_recalibrate) {
        say(fmt::format("{}: run 1: its undisturbed GEMMs took {:.2f} times their calibrated time; calibrating compute "
                        "again",
                        config_label(grid_, config), ratios.back()));
        platform_file = recalibrated_compute(config.network, platform_file);
        prediction = predict(config, platform_file, folder);
        first_counted = 1;
        ++attempts;  // run 1 measured the old calibration: run_attempts runs against the new one
        continue;
      }
      say(fmt::format("{}: run {} of {}: its undisturbed GEMMs took {:.2f} times their calibrated time{}",
                      config_label(grid_, config), attempt, attempts, ratios.back(),
                      attempt < attempts ? "; measuring again" : ""));
    }
    ConfigResult result;
    result.key = config_key(grid_, config);
    result.label = config_label(grid_, config);
    result.network = config.network;
    result.strategy = strategy_label(config.strategy);
    result.link = grid_.links[config.link].label();
    result.batch = config.strategy.global_batch;
    result.ranks = config.strategy.ranks;
    result.compute = config.compute;
    result.collectives = config.collectives;
    result.settings = config_settings(grid_, config);
    result.platform = prediction.platform_file;
    result.compute_recalibrated = first_counted > 0;
    result.load_average = run_load_average(measured).value_or(-1);  // -1: not recorded
    result.compute_speed_ratio = ratios[kept];
    result.attempt_compute_speed_ratios = ratios;
    OutputTransaction outputs;
    outputs.file(measured_file, kept_document.dump() + "\n");
    compare_into(result, prediction, measured, measured_file, folder, outputs);
    outputs.commit();
    return result;
  }

  ValidationReport write_report(const std::vector<std::optional<ConfigResult>>& results) {
    std::vector<ConfigResult> finished;
    for (const auto& result : results)
      if (result) finished.push_back(*result);
    ValidationReport report = summarize_validation(grid_, finished);
    nlohmann::json environment = {{"written", utc_timestamp()}, {"work_folder", out_}, {"engines", engines_}};
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    environment["host"] = host;
    if (target_) environment["target"] = target_->describe();
    nlohmann::json calibrations = nlohmann::json::array();
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(fs::path(out_) / "calibration", ec))
      if (entry.path().extension() == ".json" && entry.path().filename() != "base.json")
        calibrations.push_back(entry.path().filename().string());
    std::sort(calibrations.begin(), calibrations.end());
    environment["calibrations"] = calibrations;
    report.environment = environment;
    fit_into(report);
    fs::create_directories(report_);
    OutputTransaction outputs;
    outputs.file((fs::path(report_) / "report.json").string(), to_json(report).dump(2) + "\n");
    outputs.file((fs::path(report_) / "report.md").string(), validation_markdown(report));
    outputs.file((fs::path(report_) / "report.csv").string(), validation_csv(report));
    outputs.commit();
    return report;
  }

  ValidationRunOptions o_;
  ValidationGrid grid_;
  std::vector<std::string> engines_;
  std::string out_, report_;
  std::unique_ptr<RunTarget> target_;
  std::string executor_;
  std::string base_platform_;
};

ValidationRun::ValidationRun(ValidationGrid grid, ValidationRunOptions options)
    : impl_(std::make_unique<Impl>(std::move(grid), std::move(options))) {}
ValidationRun::~ValidationRun() = default;
void ValidationRun::check() { impl_->check(); }
ValidationOutcome ValidationRun::run() { return impl_->run(); }

}  // namespace cnnpar
