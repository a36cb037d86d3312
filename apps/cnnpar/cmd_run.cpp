// `cnnpar run`: measures a configuration with the MPI executor (mpiexec -n P cnnpar-run),
// predicts the same Schedule with the analytic engine, and prints both side by side.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"
#include "analysis/loss_curve.hpp"
#include "analysis/metrics.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "engines/registry.hpp"
#include "launch/launcher.hpp"
#include "model/scenarios.hpp"
#include "model/trace.hpp"
#include "workload/executor_network.hpp"
#include "workload/registry.hpp"
#include "workload/run_spec.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::cli {

namespace {

struct RunOptions {
  std::string network;
  std::string platform = "local";
  StrategyFlags strategy;
  std::string nodes = launch::default_rank_count();  // the allocation's nodes inside Slurm
  std::int64_t batch = 64;
  int iterations = kDefaultMeasuredRunIterations;
  int warmup = 1;
  std::string seed = "1";  // parse_seed: CLI11 would wrap "-1"
  double lr = kDefaultLearningRate, momentum = kDefaultMomentum, weight_decay = kDefaultWeightDecay;
  std::string dataset = "synthetic";
  std::string compute = "real";
  std::string comm_progress = "poll";
  bool progress = false;  // per-iteration lines even when stderr is not a terminal
  bool quiet = false;
  std::string collectives = "mpi";
  double poll_interval_us = kDefaultPollIntervalUs;
  double timeout_s = 60;
  int concurrency = 0;  // 0 = the platform's
  std::string trace_out;
  std::string weights_out;
  std::string checkpoint;
  int checkpoint_every = 0;
  bool resume = false;
  std::string compare_json, compare_csv;
  std::string mpiexec = "mpiexec";
  bool mpiexec_given = false;  // --mpiexec on the command line (refused with --testbed)
  std::string hostfile;
  std::string testbed;
  bool no_predict = false;
  int threads = 0;  // 0 = OPENBLAS_NUM_THREADS, else the cores per rank
  std::string inner = "gemm";
  std::string gemm = kDefaultGemmBackend;
  std::vector<std::string> slowdown;  // --slowdown RANK:FACTOR
  double target_loss = 0;             // 0: none
};

Trace read_trace(const std::string& path) {
  // Not bad input: cnnpar-run succeeded without its output (status 1).
  if (!std::filesystem::exists(path)) throw std::runtime_error("cnnpar-run exited 0 but wrote no trace " + path);
  return trace_from_json(read_json_file(path), path);
}

void print_metrics(const char* title, const TraceMetrics& m) {
  fmt::print("{:<10} iteration {:.4f} s  compute(max) {:.4f} s  comm {:.4f} s  exposed {:.4f} s  overlap {:.1f} %\n", title,
             m.iteration_s, m.compute_max_s, m.comm_s, m.exposed_comm_s, m.overlap_ratio_percent);
}

void print_spread(const TraceMetrics& m) {
  if (m.iteration_times_s.size() < 2) return;
  const auto [least, most] = std::minmax_element(m.iteration_times_s.begin(), m.iteration_times_s.end());
  fmt::print("measured   iteration median {:.4f} s over {} measured iterations, min {:.4f} s, max {:.4f} s, spread {:.1f} %\n",
             m.iteration_s, m.iteration_times_s.size(), *least, *most, iteration_spread_percent(m));
}

// The measured loss against the measured and the predicted time (the engines predict no loss:
// the predicted time of the iteration at which the run reached it). At most kRows rows, the
// last iteration always among them.
void print_loss_curve(const Trace& measured, const Trace* predicted, double target_loss) {
  constexpr std::size_t kRows = 10;
  const std::vector<LossPoint> curve = loss_curve(measured);
  if (curve.empty()) return;
  const auto predicted_s = [&](int iteration) {
    const std::optional<double> end_s = predicted ? iteration_end_s(*predicted, iteration) : std::nullopt;
    return end_s ? fmt::format("{:.4f}", *end_s) : std::string("-");
  };
  fmt::print("loss curve (iteration: loss, measured s, predicted s)\n");
  const std::size_t step = (curve.size() + kRows - 1) / kRows;
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (i % step != 0 && i + 1 != curve.size()) continue;
    const LossPoint& point = curve[i];
    fmt::print("  {:>5}: {:.4f}  {:.4f}  {}\n", point.iteration, point.loss, point.end_s, predicted_s(point.iteration));
  }
  if (target_loss <= 0) return;
  if (const std::optional<LossPoint> reached = first_reaching(curve, target_loss)) {
    fmt::print("time to loss {:.4g}: measured {:.4f} s, predicted {} s (iteration {})\n", target_loss, reached->end_s,
               predicted_s(reached->iteration), reached->iteration);
  } else {
    const auto lowest = std::min_element(curve.begin(), curve.end(),
                                         [](const LossPoint& a, const LossPoint& b) { return a.loss < b.loss; });
    fmt::print("time to loss {:.4g}: not reached (lowest {:.4f} at iteration {})\n", target_loss, lowest->loss,
               lowest->iteration);
  }
}

void print_warnings(const std::vector<std::string>& warnings) {
  std::fflush(stdout);  // after the tables they qualify
  for (const std::string& warning : warnings) fmt::print(stderr, "cnnpar run: warning: {}\n", warning);
}

int run(const RunOptions& o) {
  // Validate the configuration here first, so bad input is reported before mpiexec starts.
  const std::string file = "command line";
  const int nodes = flags::parse_one_node_count(o.nodes);
  check_run_numbers({o.lr, o.momentum, o.weight_decay, o.timeout_s, o.poll_interval_us, double(o.concurrency),
                     double(o.checkpoint_every), double(o.threads)},
                    file);
  check_gemm_backend_name(o.gemm, file, "/gemm");
  parse_inner_mode(o.inner, file, "/inner");
  if (!(o.target_loss >= 0) || !std::isfinite(o.target_loss))
    throw InputError(file, "/target-loss", fmt::format("{}", o.target_loss), "must be a finite loss in nats (0: none)");
  // Outputs are checked before mpiexec starts, not found unwritable after the run.
  check_output_path(o.trace_out, "--trace");
  check_output_path(o.weights_out, "--weights-out");
  check_output_path(o.compare_json, "--compare-json");
  check_output_path(o.compare_csv, "--compare-csv");
  const launch::ExecutorLaunch where{.ranks = nodes,
                                    .mpiexec = o.mpiexec,
                                    .mpiexec_given = o.mpiexec_given,
                                    .hostfile = o.hostfile,
                                    .testbed = o.testbed,
                                    .threads = o.threads};
  const std::vector<std::string> launcher = launch::launcher_words(where);
  RunSpec spec;
  for (const std::string& text : o.slowdown) add_slowdown(spec.slowdown, text, file, "/slowdown");
  check_slowdown_ranks(spec.slowdown, nodes, file, "/slowdown");
  const Network network = load_network(o.network);
  if (o.compute == "real") check_executor_network(network, load_scenario("networks", o.network).origin);
  Platform platform = load_platform(o.platform);
  platform.network.element_bytes = kExecutorElementBytes;  // the prediction of the executor's FP32 run
  // The prediction prices the conv layers as this run runs them, from nodes.inner's table.
  const InnerMode inner_mode = parse_inner_mode(o.inner, file, "/inner");
  if (InnerThreads& inner = platform.nodes.inner; inner.threads > 0) {
    const int threads = o.threads > 0 ? o.threads : inner.threads;
    const auto measured = inner.conv_efficiency.find(inner_mode);
    if (measured != inner.conv_efficiency.end() && int(measured->second.size()) >= threads) {
      inner.mode = inner_mode;
      inner.threads = threads;
    } else if (!o.quiet) {
      fmt::print(stderr, "cnnpar run: warning: {} has no nodes.inner efficiency of {} on {} threads; the prediction "
                 "prices {} on {}\n", o.platform, o.inner, threads, to_string(inner.mode), inner.threads);
    }
  } else if (inner_mode == InnerMode::dag && !o.quiet) {
    fmt::print(stderr, "cnnpar run: warning: {} has no nodes.inner (cnnpar calibrate --calibrate-parts inner); the "
               "prediction prices the conv layers as im2col + GEMM\n", o.platform);
  }
  // The prediction runs the slowed nodes slower alike (nodes the platform lacks fail below).
  for (const auto& [rank, factor] : spec.slowdown)
    if (rank < platform.nodes.count) platform.slow_down(rank, factor);
  spec.network = o.network;
  spec.platform = o.platform;
  StrategyOptions& strategy = spec.strategy;
  strategy.name = o.strategy.strategy();
  strategy.global_batch = o.batch;
  strategy.ranks = nodes;
  strategy.iterations = o.iterations;
  strategy.warmup_iterations = o.warmup;
  strategy.origin = file;
  strategy.values = o.strategy.values();
  strategy.recompute_columns = o.strategy.recompute_columns();
  strategy.conv = o.strategy.conv();
  // With `--conv auto` the run may time its own choice; the prediction takes what it chose.
  const Schedule schedule = build_schedule(network, platform, strategy);
  verify_or_throw(schedule, "<schedule " + strategy.name + ">", &network);

  launch::TemporaryPath temporary("cnnpar-run-trace");
  launch::TemporaryPath spec_file("cnnpar-run-spec");
  spec.seed = parse_seed(o.seed, file, "/seed");
  spec.learning_rate = o.lr;
  spec.momentum = o.momentum;
  spec.weight_decay = o.weight_decay;
  spec.dataset = o.dataset;
  spec.compute = o.compute;
  spec.comm_progress = o.comm_progress;
  spec.progress = !o.quiet && (o.progress || ::isatty(STDERR_FILENO) == 1);
  spec.collectives = o.collectives;
  spec.poll_interval_us = o.poll_interval_us;
  spec.timeout_s = o.timeout_s;
  spec.collective_concurrency = o.concurrency;
  spec.trace = o.trace_out.empty() ? temporary.path() : o.trace_out;
  spec.weights_out = o.weights_out;
  spec.checkpoint = o.checkpoint;
  spec.checkpoint_every = o.checkpoint_every;
  spec.resume = o.resume;
  spec.threads = o.threads;
  spec.gemm = o.gemm;
  spec.inner = o.inner;
  const std::string trace_path = spec.trace;
  write_file_atomic(spec_file.path(), to_json(spec).dump(2) + "\n");
  const int status =
      launch::run_executor(where, launcher,
                           o.quiet ? std::vector<std::string>{"--spec", spec_file.path(), "--quiet"}
                                   : std::vector<std::string>{"--spec", spec_file.path()},
                           "cnnpar run", o.quiet);
  if (status != 0) {
    fmt::print(stderr, "cnnpar run: cnnpar-run exited with status {}\n", status);
    return status == 2 ? 2 : 1;
  }

  const Trace measured = read_trace(trace_path);
  const TraceMetrics measured_metrics = compute_metrics(measured);
  // Iteration times do not compare a parameter server's update rules (their numerics differ).
  const bool shows_loss = o.target_loss > 0 || !server_ranks(measured).empty();
  const auto finish_measured_only = [&] {
    if (!o.quiet) {
      print_metrics("measured", measured_metrics);
      print_spread(measured_metrics);
      if (shows_loss) print_loss_curve(measured, nullptr, o.target_loss);
    }
    print_warnings(measurement_warnings(nullptr, measured));
    return 0;
  };
  if (o.no_predict || o.resume) {
    // A resumed run measures only the iterations after the checkpoint; the prediction is of the
    // whole run, so an op-by-op comparison would pair different iterations.
    if (o.resume && !o.no_predict && !o.quiet) fmt::print("cnnpar run: resumed run: measured only, no prediction\n");
    return finish_measured_only();
  }
  // Options the executor resolved on its own (conv_split's probed shares) are predicted as
  // measured: every option of the strategy's schema is taken from the trace where it differs.
  Schedule predicted_schedule = schedule;
  const nlohmann::json run_options = measured.metadata.value("options", nlohmann::json::object());
  bool resolved = false;
  for (const OptionSpec& option : strategy_spec(strategy.name, file).options) {
    if (!run_options.is_object() || !run_options.contains(option.key)) continue;
    const nlohmann::json value =
        option.parse_value(run_options.at(option.key), trace_path, "/metadata/options/" + option.key);
    if (value == strategy.value(option.key)) continue;
    strategy.values[option.key] = value;
    resolved = true;
  }
  if (strategy.conv.mode == ConvPaths::Mode::automatic) {
    const bool ran_direct = run_options.is_object() && run_options.contains("conv") && !run_options.at("conv").is_null();
    strategy.conv = ran_direct ? conv_paths_from_json(run_options.at("conv"), trace_path, "/metadata/options/conv") : ConvPaths{};
    resolved = true;  // the schedule above resolved auto from the platform, the run may have timed another
  }
  if (resolved) predicted_schedule = build_schedule(network, platform, strategy);
  Trace predicted;
  try {
    predicted = replay_once(predicted_schedule, platform, EngineSettings{});
  } catch (const InputError& e) {
    // e.g. more ranks than the platform has nodes: the measurement still stands.
    if (!o.quiet) fmt::print("cnnpar run: no analytic prediction: {}\n", e.what());
    return finish_measured_only();
  }
  const CompareReport report = compare_traces(predicted, measured);
  OutputTransaction outputs;
  if (!o.compare_json.empty()) outputs.file(o.compare_json, to_json(report).dump(2) + "\n");
  if (!o.compare_csv.empty()) outputs.file(o.compare_csv, compare_csv(predicted, measured));
  outputs.commit();
  if (!o.quiet) {
    print_metrics("predicted", compute_metrics(predicted));
    print_metrics("measured", measured_metrics);
    print_spread(measured_metrics);
    fmt::print("{}", format_compare_table(report));
    if (shows_loss) print_loss_curve(measured, &predicted, o.target_loss);
  }
  print_warnings(measurement_warnings(&predicted, measured));
  return 0;
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  RunOptions& o = *options;
  CLI::App* sub = app.add_subcommand("run", "measure a configuration with the MPI executor and compare with the analytic prediction");
  flags::network(*sub, o.network)->required();
  flags::platform(*sub, o.platform);
  o.strategy.add(*sub, kMeasuredDefaultStrategy, kExecutorRecomputesColumns);
  flags::nodes(*sub, o.nodes);
  flags::batch(*sub, o.batch);
  flags::iterations(*sub, o.iterations);
  flags::warmup(*sub, o.warmup);
  flags::seed(*sub, o.seed);
  flags::learning_rate(*sub, o.lr);
  flags::momentum(*sub, o.momentum);
  flags::weight_decay(*sub, o.weight_decay);
  flags::dataset(*sub, o.dataset);
  flags::compute(*sub, o.compute);
  flags::comm_progress(*sub, o.comm_progress);
  flags::collectives(*sub, o.collectives);
  flags::poll_interval_us(*sub, o.poll_interval_us);
  flags::timeout_s(*sub, o.timeout_s);
  flags::threads(*sub, o.threads);
  flags::inner(*sub, o.inner);
  flags::slowdown(*sub, o.slowdown);
  flags::gemm(*sub, o.gemm);
  flags::concurrency(*sub, o.concurrency);
  flags::trace_out(*sub, o.trace_out);
  flags::weights_out(*sub, o.weights_out);
  flags::checkpoint(*sub, o.checkpoint);
  flags::checkpoint_every(*sub, o.checkpoint_every);
  flags::resume(*sub, o.resume);
  sub->add_option("--compare-json", o.compare_json, "write the comparison as JSON here (- = standard output)");
  sub->add_option("--compare-csv", o.compare_csv,
                  "write the predicted and the measured configuration as CSV rows here (the columns of predict --csv)");
  CLI::Option* mpiexec = flags::mpiexec(*sub, o.mpiexec);
  flags::hostfile(*sub, o.hostfile);
  flags::testbed(*sub, o.testbed);
  flags::progress(*sub, o.progress);
  flags::quiet(*sub, o.quiet);
  sub->add_flag("--no-predict", o.no_predict, "only measure");
  sub->add_option("--target-loss", o.target_loss,
                  "print the measured and predicted time at which the loss first reaches this value (nats); the "
                  "loss curve is printed with it, and always under a parameter server");
  return [options, mpiexec] {
    options->mpiexec_given = mpiexec->count() > 0;
    return run(*options);
  };
}

}  // namespace cnnpar::cli
