// The training run: the back-end stack, the interpreter over the iterations, the loss and
// weights reduction, the trace gathered and written by rank 0, weights and checkpoints.
#include "apps/cnnpar-run/training.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analysis/compare.hpp"
#include "analysis/metrics.hpp"
#include "base/hash.hpp"
#include "apps/cnnpar-run/backends.hpp"
#include "apps/cnnpar-run/failure.hpp"
#include "apps/cnnpar-run/setup.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"
#include "model/trace.hpp"
#include "real/checkpoint.hpp"
#include "real/clock_sync.hpp"
#include "real/cpu_info.hpp"
#include "real/kernels.hpp"
#include "real/mpi_wrap.hpp"
#include "system/op_time.hpp"

namespace cnnpar::executor {

namespace {

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string version(text, std::size_t(length));
  return version.substr(0, version.find('\n'));
}

/** The whole model on every rank (all ranks must call it): a model-parallel rank holds only
 *  its rows, so the ranks' owned parts are summed (adding zeros rounds nothing). */
RuntimeState assembled_state(const Runtime& runtime, double timeout_s) {
  if (!runtime.model_parallel()) return runtime.state();
  RuntimeState state = runtime.owned_state();
  const auto sum_over_ranks = [timeout_s](std::vector<float>& owned) {
    if (owned.empty()) return;  // the same on every rank
    std::vector<float> sum(owned.size());
    mpi::allreduce(owned.data(), sum.data(), int(sum.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, timeout_s,
                   "model assembly");
    owned.swap(sum);
  };
  sum_over_ranks(state.weights);
  sum_over_ranks(state.momentum);
  sum_over_ranks(state.batchnorm_statistics);
  return state;
}

/** Largest resident set of this process so far (bytes). */
double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

}  // namespace

int run_training(const Options& o, int rank, int size) {
  std::optional<Setup> setup;
  std::exception_ptr error;
  try {
    configure_compute(o);
    setup.emplace();
    prepare(*setup, o, rank, size);
  } catch (const SetUpFailedElsewhere& agreed) {
    return agreed.status;
  } catch (...) {
    error = std::current_exception();
  }
  if (const int status = agree_on_failure(error, rank, size, o.timeout_s); status != 0) return status;
  Setup& s = *setup;

  const Communicators comms(s.schedule, rank);
  SyncedClock clock;
  clock.synchronise(MPI_COMM_WORLD, 8, o.timeout_s);

  // Checkpoints: the whole model after global iteration m, by rank 0, when m is a multiple of
  // --checkpoint-every (every rank takes part in assembling a model-parallel model).
  const std::string checkpoint_path = o.checkpoint.empty() ? "" : checkpoint_file(o);
  if (rank == 0 && !o.checkpoint.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.checkpoint, ec);  // checked writable in prepare()
  }
  const auto write_checkpoint_now = [&](const RuntimeState& state) {
    if (rank == 0) write_checkpoint(checkpoint_path, s.network, s.checkpoint_run, state);
  };
  std::function<void(int)> between_iterations;
  if (s.runtime && o.checkpoint_every > 0)
    between_iterations = [&](int iteration) {
      const std::int64_t global = s.runtime->iteration() + iteration;  // iterations completed
      if (global % o.checkpoint_every != 0) return;
      RuntimeState state = assembled_state(*s.runtime, o.timeout_s);
      state.iteration = global;
      write_checkpoint_now(state);
    };

  SleepBackend sleeper(s.platform, rank, s.interpreter.poll_interval_s > 0 ? s.interpreter.poll_interval_s : 1e-3,
                       iteration_overhead_s(s.platform, s.schedule, rank));
  std::optional<RealBackend> real;
  ComputeBackend* backend = &sleeper;
  if (s.runtime) {
    real.emplace(*s.runtime, *s.dataset, s.network, s.schedule.iterations, between_iterations);
    backend = &*real;
  }
  std::optional<SlowedBackend> slowed;
  if (const auto found = o.slowdown.find(rank); found != o.slowdown.end()) {
    slowed.emplace(*backend, found->second, s.interpreter.poll_interval_s > 0 ? s.interpreter.poll_interval_s : 1e-3);
    backend = &*slowed;
  }
  std::optional<ExitingBackend> exiting;
  if (rank == o.debug_exit_rank) {
    std::size_t computes = 0;
    for (const Op& op : s.schedule.programs[std::size_t(rank)].ops) computes += op.kind == OpKind::compute;
    exiting.emplace(*backend, int(computes / 2) + 1);
    backend = &*exiting;
  }

  std::optional<ProgressBackend> progress;
  if (rank == 0 && !o.quiet && (o.progress || ::isatty(STDERR_FILENO) == 1)) {
    progress.emplace(*backend, s.schedule.iterations, s.schedule.warmup_iterations);
    backend = &*progress;
  }
  // The load when the run starts: a busy machine makes every measured time suspect.
  std::array<double, 3> load_average{};
  const bool has_load = ::getloadavg(load_average.data(), 3) == 3;

  set_freed_memory(freed_memory_once_set_up(size));
  Interpreter interpreter(s.schedule, rank, *backend, comms, clock, s.interpreter);
  const double wall_start_s = MPI_Wtime();
  RankTrace mine = interpreter.run();
  const double wall_s = MPI_Wtime() - wall_start_s;

  // Per-iteration global loss: sum of the ranks' loss sums over N (every rank's images once).
  std::vector<double> loss_sums(std::size_t(s.schedule.iterations), 0.0), correct = loss_sums;
  std::vector<double> global_loss(loss_sums.size(), 0.0), global_accuracy(loss_sums.size(), 0.0);
  if (real) {
    loss_sums = real->loss_sums();
    correct = real->correct();
  }
  mpi::allreduce(loss_sums.data(), global_loss.data(), int(loss_sums.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                 o.timeout_s, "loss reduction");
  mpi::allreduce(correct.data(), global_accuracy.data(), int(correct.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                 o.timeout_s, "accuracy reduction");
  // Under a parameter server the workers' rounds cover other images than N: the mean is over
  // the images the round's forwards saw.
  std::vector<double> loss_images(loss_sums.size(), double(s.schedule.global_batch));
  if (!s.schedule.serves.empty()) {
    std::vector<double> own = real ? real->loss_images() : std::vector<double>(loss_sums.size(), 0.0);
    mpi::allreduce(own.data(), loss_images.data(), int(own.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, o.timeout_s,
                   "loss reduction");
  }
  for (std::size_t i = 0; i < global_loss.size(); ++i) {
    global_loss[i] = loss_images[i] > 0 ? global_loss[i] / loss_images[i] : 0.0;
    global_accuracy[i] = loss_images[i] > 0 ? global_accuracy[i] / loss_images[i] : 0.0;
  }

  // Weights must agree bitwise across ranks (every rank applies the same update).
  std::string weights_hash = "none";
  std::vector<float> weights;
  RuntimeState final_state;
  if (s.runtime) {
    final_state = assembled_state(*s.runtime, o.timeout_s);
    weights = final_state.weights;
    weights_hash = fmt::format("{:016x}", fnv1a64(weights.data(), weights.size() * sizeof(float)));
  }

  Trace own;
  own.engine = "real";
  own.ranks.push_back(std::move(mine));
  const nlohmann::json clock_json = {{"offset_s", clock.offset_s()}, {"round_trip_s", clock.best_round_trip_s()}};
  const std::string payload = nlohmann::json{{"trace", to_json(own)}, {"weights", weights_hash}, {"clock", clock_json},
                                             {"host", host_name()}, {"peak_rss_bytes", peak_rss_bytes()}}
                                  .dump();
  const std::vector<std::string> gathered = mpi::gather_strings(payload, 0, MPI_COMM_WORLD, o.timeout_s, "trace gather");

  if (rank == 0) {
    Trace trace = make_empty_trace(s.schedule, "real");
    nlohmann::json offsets = nlohmann::json::array(), hosts = nlohmann::json::array();
    nlohmann::json peak_rss = nlohmann::json::array();
    double largest_rss_bytes = 0;
    bool identical = true;
    std::string first_hash;
    for (int r = 0; r < size; ++r) {
      const nlohmann::json part = nlohmann::json::parse(gathered[std::size_t(r)]);
      Trace single = trace_from_json(part.at("trace"), fmt::format("<rank {} trace>", r));
      CNNPAR_ASSERT(single.ranks.size() == 1, "a rank sent more than one rank trace");
      trace.ranks[std::size_t(r)] = std::move(single.ranks[0]);
      trace.ranks[std::size_t(r)].rank = r;
      offsets.push_back(part.at("clock"));
      hosts.push_back(part.at("host"));
      peak_rss.push_back(part.at("peak_rss_bytes"));
      largest_rss_bytes = std::max(largest_rss_bytes, part.at("peak_rss_bytes").get<double>());
      if (r == 0) first_hash = part.at("weights").get<std::string>();
      identical = identical && part.at("weights").get<std::string>() == first_hash;
    }
    nlohmann::json& m = trace.metadata;
    if (!m.is_object()) m = nlohmann::json::object();
    m["engine"] = "real";
    m["strategy"] = s.schedule.strategy;
    m["options"] = s.schedule.options;
    m["network"] = s.network.name;
    m["platform"] = s.platform.name;
    // As given (a zoo name or a path), so `cnnpar trace --like` can load them again.
    m["network_argument"] = o.network;
    m["platform_argument"] = o.platform;
    m["ranks"] = size;
    m["batch"] = s.schedule.global_batch;
    m["iterations"] = s.schedule.iterations;
    m["warmup_iterations"] = s.schedule.warmup_iterations;
    m["comm_progress"] = to_string(s.progress);
    m["compute"] = backend->mode();
    if (!o.slowdown.empty()) m["slowdown"] = slowdowns_to_json(o.slowdown);
    if (!s.probe_s.empty()) m["probe_s"] = s.probe_s;
    m["poll_interval_us"] = o.poll_interval_us;
    m["gemm_tile_columns"] = s.tile_columns;
    m["collective_concurrency"] = s.interpreter.collective_concurrency;
    m["collectives"] = to_string(s.interpreter.collectives);
    m["collective_algorithm"] = s.interpreter.collectives == CollectiveMode::mpi
                                    ? "MPI library default"
                                    : "the engines' (system/collective.hpp steps, resolve_algorithm on the platform)";
    const char* blas_threads = std::getenv("OPENBLAS_NUM_THREADS");
    m["threads"] = {{"compute", compute_threads()},
                    {"openblas_num_threads", blas_threads ? blas_threads : "default"},
                    {"communication_thread", s.progress == ProgressMode::thread}};
    m["inner"] = o.inner;  // conv forward and weight gradient: gemm, or BPT-CNN's task DAG
    m["gemm_backend"] = to_string(gemm_backend());
    m["cpu"] = real::kernel_machine();
    m["im2col_columns"] = !s.runtime                 ? "none (sleep compute)"
                          : s.runtime->keep_columns() ? "kept"
                                                      : "shared, recomputed for each conv weight gradient";
    if (s.runtime) m["error_buffers_bytes"] = 4 * s.runtime->error_floats();
    m["peak_rss_bytes"] = peak_rss;
    m["mpi"] = mpi_library_version();
    m["hosts"] = hosts;
    m["clock"] = offsets;
    m["dataset"] = s.runtime ? o.dataset : "none";
    m["seed"] = o.seed;
    m["sgd"] = {{"lr", o.lr}, {"momentum", o.momentum}, {"weight_decay", o.weight_decay}};
    m["wall_s"] = wall_s;
    if (has_load) m["load_average"] = load_average;
    m["cores"] = ::sysconf(_SC_NPROCESSORS_ONLN);
    if (s.runtime) {
      m["loss"] = global_loss;
      m["accuracy"] = global_accuracy;
      m["weights_fnv1a64"] = first_hash;
      m["weights_identical_across_ranks"] = identical;
      m["start_iteration"] = s.runtime->iteration() - s.schedule.iterations;
    }
    trace.warmup_iterations = s.schedule.warmup_iterations;

    if (!o.trace.empty()) write_file_atomic(o.trace, to_json(trace).dump(1) + "\n");
    if (!o.weights_out.empty() && s.runtime)
      write_file_atomic(o.weights_out, weights.data(), weights.size() * sizeof(float));
    if (!o.checkpoint.empty() && s.runtime) write_checkpoint_now(final_state);

    if (!o.quiet) {
      fmt::print("cnnpar-run: {} on {}, {} ranks, batch {}, {} iterations ({} warm-up), {} compute, {} comm progress\n",
                 s.schedule.strategy, s.network.name, size, s.schedule.global_batch, s.schedule.iterations,
                 s.schedule.warmup_iterations, backend->mode(), to_string(s.progress));
      fmt::print("cnnpar-run: {} compute threads per rank, GEMMs on {}, im2col columns {}, conv inner mode {}\n",
                 compute_threads(), to_string(gemm_backend()),
                 s.runtime ? (s.runtime->keep_columns() ? "kept" : "shared") : "none", o.inner);
      fmt::print("cnnpar-run: peak resident memory {:.1f} MB (largest rank){}\n", largest_rss_bytes / 1e6,
                 s.runtime ? fmt::format(", errors {:.1f} MB on rank 0 (shared by lifetime)",
                                         4.0 * double(s.runtime->error_floats()) / 1e6)
                           : "");
      const TraceMetrics metrics = compute_metrics(trace);
      if (!metrics.iteration_times_s.empty()) {
        const auto [least, most] = std::minmax_element(metrics.iteration_times_s.begin(), metrics.iteration_times_s.end());
        fmt::print("cnnpar-run: iteration median {:.4f} s over {} measured iterations (min {:.4f} s, max {:.4f} s, spread "
                   "{:.1f} %), wall {:.3f} s in all{}{}\n",
                   metrics.iteration_s, metrics.iteration_times_s.size(), *least, *most,
                   iteration_spread_percent(metrics), wall_s, o.trace.empty() ? "" : ", trace ", o.trace);
      }
      if (s.runtime && o.resume)
        fmt::print("cnnpar-run: resumed from {} at iteration {}, ran to iteration {}\n", checkpoint_path,
                   s.runtime->iteration() - s.schedule.iterations, s.runtime->iteration());
      if (s.runtime && !global_loss.empty())
        fmt::print("cnnpar-run: loss {:.4f} -> {:.4f}, weights {} across ranks\n", global_loss.front(), global_loss.back(),
                   identical ? "identical" : "DIFFERENT");
      std::fflush(stdout);
      // Started by `cnnpar run` (--spec), which warns with the prediction at hand.
      if (o.spec.empty())
        for (const std::string& warning : measurement_warnings(nullptr, trace))
          fmt::print(stderr, "cnnpar-run: warning: {}\n", warning);
    }
  }
  mpi::barrier(MPI_COMM_WORLD, o.timeout_s, "final barrier");
  return 0;
}

}  // namespace cnnpar::executor
