// `cnnpar run`: measures a configuration with the MPI executor (mpiexec -n P cnnpar-run),
// predicts the same Schedule with the analytic engine, and prints both side by side.
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
#include "analysis/metrics.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/mpi_launch.hpp"
#include "model/child_process.hpp"
#include "model/error.hpp"
#include "model/json_node.hpp"
#include "model/run_spec.hpp"
#include "model/scenarios.hpp"
#include "model/strategies/strategy.hpp"
#include "model/trace.hpp"
#include "sim/analytic/analytic_engine.hpp"

namespace cnnpar::cli {

namespace {

struct RunOptions {
  std::string network;
  std::string platform = "local";
  StrategyFlags strategy;
  int ranks = 2;
  std::int64_t batch = 64;
  int iterations = 3;
  int warmup = 1;
  std::string seed = "1";  // parse_seed: CLI11 would wrap "-1"
  std::string lr, momentum, weight_decay;  // "" = cnnpar-run's defaults
  std::string dataset = "synthetic";
  std::string compute = "real";
  std::string progress = "poll";
  std::string collectives = "mpi";
  std::string poll_interval_us;
  double timeout_s = 60;
  int concurrency = 0;  // 0 = the platform's
  std::string trace_out;
  std::string weights_out;
  std::string checkpoint;
  int checkpoint_every = 0;
  bool resume = false;
  std::string compare_json;
  std::string mpiexec = "mpiexec";
  std::vector<std::string> mpiexec_args;
  bool no_predict = false;
  int threads = 0;  // 0 = OPENBLAS_NUM_THREADS, else the cores per rank
  std::string gemm = kDefaultGemmBackend;
};

Trace read_trace(const std::string& path) {
  // Not bad input: cnnpar-run succeeded without its output (status 1).
  if (!std::filesystem::exists(path)) throw std::runtime_error("cnnpar-run exited 0 but wrote no trace " + path);
  return trace_from_json(read_json_file(path), path);
}

// A number given on the command line, or nothing when the flag was not given; its range is
// checked as cnnpar-run and the run-spec check it (model/run_spec.hpp).
std::optional<double> optional_number(const std::string& text, const char* path, RunNumber which) {
  if (text.empty()) return std::nullopt;
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::out_of_range&) {
    throw InputError("command line", path, text, "out of the range of a double");
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size()) throw InputError("command line", path, text, "expected a number");
  check_run_number(which, value, "command line", path);
  return value;
}

void print_metrics(const char* title, const TraceMetrics& m) {
  std::printf("%-10s iteration %.4f s  compute(max) %.4f s  comm %.4f s  exposed %.4f s  overlap %.1f %%\n", title,
              m.iteration_s, m.compute_max_s, m.comm_s, m.exposed_comm_s, m.overlap_ratio_percent);
}

int run(const RunOptions& o) {
  // Validate the configuration here first, so bad input is reported before mpiexec starts.
  check_run_number(RunNumber::timeout_s, o.timeout_s, "command line", "/timeout-s");
  check_run_number(RunNumber::concurrency, o.concurrency, "command line", "/concurrency");
  check_run_number(RunNumber::checkpoint_every, o.checkpoint_every, "command line", "/checkpoint-every");
  // Outputs are checked before mpiexec starts, not found unwritable after the run.
  check_output_path(o.trace_out, "--trace");
  check_output_path(o.weights_out, "--weights-out");
  check_output_path(o.compare_json, "--compare-json");
  const Network network = load_network(o.network);
  const Platform platform = load_platform(o.platform);
  RunSpec spec;
  spec.network = o.network;
  spec.platform = o.platform;
  StrategyOptions& strategy = spec.strategy;
  strategy.name = o.strategy.strategy();
  strategy.global_batch = o.batch;
  strategy.ranks = o.ranks;
  strategy.iterations = o.iterations;
  strategy.warmup_iterations = o.warmup;
  strategy.origin = "command line";
  strategy.values = o.strategy.values();
  strategy.recompute_columns = o.strategy.recompute_columns();
  check_gemm_backend_name(o.gemm, "command line", "/gemm");
  check_run_number(RunNumber::threads, o.threads, "command line", "/threads");
  if (o.ranks < 1) throw InputError("command line", "/ranks", std::to_string(o.ranks), "must be >= 1");
  const Schedule schedule = build_schedule(network, platform, strategy);
  verify_or_throw(schedule, "<schedule " + strategy.name + ">", &network);

  mpi_launch::TemporaryPath temporary("cnnpar-run-trace");
  mpi_launch::TemporaryPath spec_file("cnnpar-run-spec");
  spec.seed = parse_seed(o.seed, "command line", "/seed");
  spec.learning_rate = optional_number(o.lr, "/lr", RunNumber::learning_rate);
  spec.momentum = optional_number(o.momentum, "/momentum", RunNumber::momentum);
  spec.weight_decay = optional_number(o.weight_decay, "/weight-decay", RunNumber::weight_decay);
  spec.dataset = o.dataset;
  spec.compute = o.compute;
  spec.progress = o.progress;
  spec.collectives = o.collectives;
  spec.poll_interval_us = optional_number(o.poll_interval_us, "/poll-interval-us", RunNumber::poll_interval_us);
  spec.timeout_s = o.timeout_s;
  spec.collective_concurrency = o.concurrency;
  spec.trace = o.trace_out.empty() ? temporary.path() : o.trace_out;
  spec.weights_out = o.weights_out;
  spec.checkpoint = o.checkpoint;
  spec.checkpoint_every = o.checkpoint_every;
  spec.resume = o.resume;
  spec.threads = o.threads;
  spec.gemm = o.gemm;
  const std::string trace_path = spec.trace;
  write_file_atomic(spec_file.path(), to_json(spec).dump(2) + "\n");
  const std::vector<std::string> args = {"--spec", spec_file.path()};

  const std::vector<std::string> command =
      mpi_launch::command(o.mpiexec, o.mpiexec_args, o.ranks, mpi_launch::find_executor(), args);
  if (o.threads > 0) ::setenv("OPENBLAS_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  const std::string blas_threads = mpi_launch::default_blas_threads(o.ranks);
  std::string shown = "OPENBLAS_NUM_THREADS=" + blas_threads;
  for (const auto& part : command) shown += (shown.empty() ? "" : " ") + part;
  std::printf("cnnpar run: %s\n", shown.c_str());
  const int status = run_child(command);
  if (status != 0) {
    std::fprintf(stderr, "cnnpar run: cnnpar-run exited with status %d\n", status);
    return status == 2 ? 2 : 1;
  }

  const Trace measured = read_trace(trace_path);
  const TraceMetrics measured_metrics = compute_metrics(measured);
  if (o.no_predict || o.resume) {
    // A resumed run measures only the iterations after the checkpoint; the prediction is of the
    // whole run, so an op-by-op comparison would pair different iterations.
    if (o.resume && !o.no_predict) std::printf("cnnpar run: resumed run: measured only, no prediction\n");
    print_metrics("measured", measured_metrics);
    return 0;
  }
  Trace predicted;
  try {
    predicted = make_analytic_engine()->run(schedule, platform);
  } catch (const InputError& e) {
    // e.g. more ranks than the platform has nodes: the measurement still stands.
    std::printf("cnnpar run: no analytic prediction: %s\n", e.what());
    print_metrics("measured", measured_metrics);
    return 0;
  }
  print_metrics("predicted", compute_metrics(predicted));
  print_metrics("measured", measured_metrics);
  const CompareReport report = compare_traces(predicted, measured);
  std::printf("%s", format_compare_table(report).c_str());
  if (!o.compare_json.empty()) {
    write_file_atomic(o.compare_json, to_json(report).dump(2) + "\n");
  }
  return 0;
}

}  // namespace

Runner add_run_command(CLI::App& app) {
  auto options = std::make_shared<RunOptions>();
  RunOptions& o = *options;
  CLI::App* sub = app.add_subcommand("run", "measure a configuration with the MPI executor and compare with the analytic prediction");
  sub->add_option("--network", o.network, "network name or JSON path")->required();
  sub->add_option("--platform", o.platform, "platform for the prediction (and sleep-mode times)")->capture_default_str();
  o.strategy.add(*sub, "dp", kExecutorRecomputesColumns);
  sub->add_option("--ranks,-n", o.ranks, "MPI ranks P")->capture_default_str();
  sub->add_option("--batch", o.batch, "global mini-batch N")->capture_default_str();
  sub->add_option("--iterations", o.iterations, "iterations, warm-up included")->capture_default_str();
  sub->add_option("--warmup", o.warmup, "warm-up iterations")->capture_default_str();
  sub->add_option("--seed", o.seed, "seed")->capture_default_str();
  sub->add_option("--lr", o.lr, "SGD learning rate");
  sub->add_option("--momentum", o.momentum, "SGD momentum");
  sub->add_option("--weight-decay", o.weight_decay, "SGD weight decay");
  sub->add_option("--dataset", o.dataset, "synthetic | cifar10:PATH | mnist:DIR")->capture_default_str();
  sub->add_option("--compute", o.compute, "real | sleep")->capture_default_str();
  sub->add_option("--progress", o.progress, "poll | thread")->capture_default_str();
  sub->add_option("--collectives", o.collectives,
                  "mpi (the MPI library's collectives) | p2p (the steps the engines price, as send/recv)")
      ->capture_default_str();
  sub->add_option("--poll-interval-us", o.poll_interval_us, "least time between polls inside an op (us)");
  sub->add_option("--timeout-s", o.timeout_s, "abort a stalled job after this many seconds")->capture_default_str();
  sub->add_option("--threads", o.threads,
                  "compute threads per rank: GEMMs, im2col/col2im, pooling, element-wise ops, SGD "
                  "(default: OPENBLAS_NUM_THREADS, else cores / ranks)");
  sub->add_option("--gemm", o.gemm, "GEMM back-end of cnnpar-run: openblas | onednn")->capture_default_str();
  sub->add_option("--concurrency", o.concurrency, "collectives run at once (0 = the platform's)")->capture_default_str();
  sub->add_option("--trace", o.trace_out, "keep the measured trace JSON here");
  sub->add_option("--weights-out", o.weights_out, "final weights (FP32) here");
  sub->add_option("--checkpoint", o.checkpoint, "directory for checkpoint.bin (written at the end)");
  sub->add_option("--checkpoint-every", o.checkpoint_every, "also checkpoint every N iterations (0 = only at the end)")
      ->capture_default_str();
  sub->add_flag("--resume", o.resume, "continue from <checkpoint>/checkpoint.bin up to --iterations in total");
  sub->add_option("--compare-json", o.compare_json, "write the comparison as JSON here");
  sub->add_option("--mpiexec", o.mpiexec, "MPI launcher")->capture_default_str();
  sub->add_option("--mpiexec-arg", o.mpiexec_args, "extra launcher argument (repeatable)");
  sub->add_flag("--no-predict", o.no_predict, "only measure");
  return [options] { return run(*options); };
}

}  // namespace cnnpar::cli
