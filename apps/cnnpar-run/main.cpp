// cnnpar-run: the MPI executor. Started by mpiexec/srun; every rank builds the same Schedule,
// verifies it, runs its program with real kernels (or calibrated sleeps) and real
// non-blocking collectives, and rank 0 writes the aligned Trace. With --calibrate it
// measures the machine instead and writes a platform JSON.
//
// Exit status: 0 ok, 1 failure (incl. a stalled or dead rank), 2 bad input. On SIGINT/SIGTERM a
// rank removes the temporary file of an output it is writing and dies of the signal (outputs
// are renamed into place, so none is ever half-written).
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/scenarios.hpp"
#include "model/schedule.hpp"
#include "workload/strategy.hpp"
#include "model/trace.hpp"
#include "base/output_files.hpp"
#include "system/op_time.hpp"
#include "real/calibrate.hpp"
#include "apps/common/strategy_flags.hpp"
#include "base/json_node.hpp"
#include "analysis/compare.hpp"
#include "analysis/metrics.hpp"
#include "apps/common/flags.hpp"
#include "workload/run_spec.hpp"
#include "real/checkpoint.hpp"
#include "real/clock_sync.hpp"
#include "real/dataset.hpp"
#include "real/interpreter.hpp"
#include "real/probe.hpp"
#include "workload/strategies/marques.hpp"
#include "real/kernels.hpp"
#include "real/mpi_wrap.hpp"
#include "real/runtime.hpp"

namespace {

using namespace cnnpar;
using namespace cnnpar::real;

struct Options {
  std::string spec;  // a run-spec JSON (from `cnnpar run`); flags given as well win
  std::string network;
  std::string platform = "local";
  cli::StrategyFlags strategy;
  nlohmann::json spec_strategy_values = nlohmann::json::object();  // the run-spec's strategy options
  std::int64_t batch = 64;
  int iterations = kDefaultMeasuredRunIterations;
  int warmup = 1;
  std::uint64_t seed = 1;
  std::string seed_text = "1";  // parsed by parse_seed (CLI11 would wrap "-1")
  double lr = kDefaultLearningRate;  // the update runs in FP32 (SgdSettings)
  double momentum = kDefaultMomentum;
  double weight_decay = kDefaultWeightDecay;
  std::string dataset = "synthetic";
  std::string compute = "real";
  std::string comm_progress = "poll";
  bool progress = false;  // per-iteration lines on stderr (rank 0); also when stderr is a terminal
  bool quiet = false;
  std::string collectives = "mpi";
  double poll_interval_us = kDefaultPollIntervalUs;
  std::int64_t gemm_tile_columns = -1;  // -1: 4096 when polling, else no split
  int threads = 0;                      // 0: OPENBLAS_NUM_THREADS, else 1
  std::string gemm = kDefaultGemmBackend;
  int collective_concurrency = 0;       // 0: the platform's value
  std::string trace;
  std::string weights_out;
  std::string checkpoint;
  int checkpoint_every = 0;  // iterations; 0 = only at the end
  bool resume = false;
  double timeout_s = 60;
  std::vector<std::string> slowdown_texts;  // --slowdown RANK:FACTOR
  Slowdowns slowdown;                       // parsed from them (or the run-spec)
  // calibration
  bool calibrate = false;
  std::string out;
  int repeats = 3;
  double max_message_bytes = 256.0 * 1024 * 1024;
  bool op_seconds = false;
  std::string calibrate_parts = kAllCalibrationParts;
  // test hooks (hidden)
  int debug_stall_rank = -1;
  int debug_exit_rank = -1;
};

void add_options(CLI::App& app, Options& o) {
  app.description("cnnpar-run: the MPI executor of cnnpar (start it with mpiexec -n P)");
  app.set_version_flag("--version", std::string("cnnpar-run ") + CNNPAR_VERSION);
  app.add_option("--spec", o.spec,
                 "run-spec JSON written by `cnnpar run` (flags given as well override it); without it, --network is "
                 "required");
  cli::flags::network(app, o.network);
  cli::flags::platform(app, o.platform);
  o.strategy.add(app, "dp", kExecutorRecomputesColumns);
  cli::flags::batch(app, o.batch);
  cli::flags::iterations(app, o.iterations);
  cli::flags::warmup(app, o.warmup);
  cli::flags::seed(app, o.seed_text);
  cli::flags::learning_rate(app, o.lr);
  cli::flags::momentum(app, o.momentum);
  cli::flags::weight_decay(app, o.weight_decay);
  cli::flags::dataset(app, o.dataset);
  cli::flags::compute(app, o.compute);
  cli::flags::comm_progress(app, o.comm_progress);
  cli::flags::collectives(app, o.collectives);
  cli::flags::poll_interval_us(app, o.poll_interval_us);
  app.add_option("--gemm-tile-columns", o.gemm_tile_columns,
                 "GEMM column tile between polls (0 = no split; default 4096 when polling)");
  cli::flags::threads(app, o.threads);
  cli::flags::gemm(app, o.gemm);
  cli::flags::concurrency(app, o.collective_concurrency);
  cli::flags::trace_out(app, o.trace);
  cli::flags::weights_out(app, o.weights_out);
  cli::flags::checkpoint(app, o.checkpoint);
  cli::flags::checkpoint_every(app, o.checkpoint_every);
  cli::flags::resume(app, o.resume);
  cli::flags::timeout_s(app, o.timeout_s);
  cli::flags::slowdown(app, o.slowdown_texts);
  cli::flags::progress(app, o.progress);
  cli::flags::quiet(app, o.quiet);
  app.add_flag("--calibrate", o.calibrate, "measure this machine and write a platform JSON (--out)");
  app.add_option("--out", o.out, "write the calibrated platform JSON here (with --calibrate)");
  cli::flags::repeats(app, o.repeats);
  cli::flags::max_message(app, o.max_message_bytes);
  cli::flags::op_seconds(app, o.op_seconds);
  cli::flags::calibrate_parts(app, o.calibrate_parts);
  app.add_option("--debug-stall-rank", o.debug_stall_rank)->group("");  // test hook: rank hangs mid-run
  app.add_option("--debug-exit-rank", o.debug_exit_rank)->group("");    // test hook: rank dies mid-run
}

/** Takes what the run-spec says for every option not given as a flag.
 *  @throws InputError naming the spec file, the JSON path and the value. */
void apply_run_spec(const CLI::App& app, Options& o) {
  if (o.spec.empty()) {
    if (o.network.empty()) throw InputError("command line", "/network", "", "give --network (or --spec FILE)");
    return;
  }
  const RunSpec spec = run_spec_from_json(read_json_file(o.spec), o.spec);
  const auto unset = [&](const char* flag) { return app.count(flag) == 0; };
  if (unset("--network")) o.network = spec.network;
  if (unset("--platform")) o.platform = spec.platform;
  if (unset("--strategy")) o.strategy.set_strategy(spec.strategy.name);
  o.spec_strategy_values = spec.strategy.values;
  if (unset("--batch")) o.batch = spec.strategy.global_batch;
  if (unset("--iterations")) o.iterations = spec.strategy.iterations;
  if (unset("--warmup")) o.warmup = spec.strategy.warmup_iterations;
  if (unset("--seed")) o.seed = spec.seed;
  if (unset("--lr") && spec.learning_rate) o.lr = *spec.learning_rate;
  if (unset("--momentum") && spec.momentum) o.momentum = *spec.momentum;
  if (unset("--weight-decay") && spec.weight_decay) o.weight_decay = *spec.weight_decay;
  if (unset("--dataset")) o.dataset = spec.dataset;
  if (unset("--compute")) o.compute = spec.compute;
  if (unset("--comm-progress")) o.comm_progress = spec.comm_progress;
  if (unset("--progress")) o.progress = spec.progress;
  if (unset("--collectives")) o.collectives = spec.collectives;
  if (unset("--poll-interval-us") && spec.poll_interval_us) o.poll_interval_us = *spec.poll_interval_us;
  if (unset("--timeout-s")) o.timeout_s = spec.timeout_s;
  if (unset("--concurrency")) o.collective_concurrency = int(spec.collective_concurrency);
  if (unset("--trace")) o.trace = spec.trace;
  if (unset("--weights-out")) o.weights_out = spec.weights_out;
  if (unset("--checkpoint")) o.checkpoint = spec.checkpoint;
  if (unset("--checkpoint-every")) o.checkpoint_every = int(spec.checkpoint_every);
  if (unset("--resume")) o.resume = spec.resume;
  if (unset("--threads")) o.threads = int(spec.threads);
  if (unset("--slowdown")) o.slowdown = spec.slowdown;
  if (unset("--gemm")) {
    o.gemm = spec.gemm;
    parse_gemm_backend(o.gemm, o.spec, "/gemm");  // a back-end this build lacks: name the spec
  }
  if (!o.strategy.columns_given()) o.strategy.set_recompute_columns(spec.strategy.recompute_columns);
}

/** The numbers with a range (workload/run_spec.hpp), checked before any MPI call uses them
 *  (a --timeout-s of 0 would otherwise end the first collective as a "stall").
 *  @throws InputError("command line", "/flag", value, reason). */
void check_numbers(const CLI::App& app, Options& o) {
  const std::string file = "command line";
  if (app.count("--seed") > 0) o.seed = parse_seed(o.seed_text, file, "/seed");
  check_run_numbers({o.lr, o.momentum, o.weight_decay, o.timeout_s, o.poll_interval_us,
                     double(o.collective_concurrency), double(o.checkpoint_every), double(o.threads)},
                    file);
  if (app.count("--gemm-tile-columns") > 0)
    check_run_number(RunNumber::gemm_tile_columns, double(o.gemm_tile_columns), file, "/gemm-tile-columns");
  check_run_number(RunNumber::repeats, o.repeats, file, "/repeats");
  if (app.count("--slowdown") > 0) {
    o.slowdown.clear();
    for (const std::string& text : o.slowdown_texts) add_slowdown(o.slowdown, text, file, "/slowdown");
  }
  if (o.batch < 1) throw InputError(file, "/batch", std::to_string(o.batch), "must be an integer >= 1");
}

/** Exit status of an exception: 2 for bad input, 1 otherwise. */
int status_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError&) {
    return 2;
  } catch (...) {
    return 1;
  }
}

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

std::unique_ptr<Dataset> open_dataset(const std::string& spec, const Network& network, std::uint64_t seed) {
  namespace fs = std::filesystem;
  if (spec == "synthetic") {
    // Generated on demand from (seed, index); the size only sets where batches wrap.
    return std::make_unique<SyntheticDataset>(network.input, network.classes(), 50000, seed);
  }
  const auto colon = spec.find(':');
  const std::string kind = spec.substr(0, colon);
  const std::string path = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "cifar10" && !path.empty()) {
    std::vector<std::string> files;
    if (fs::is_directory(path)) {
      for (int i = 1; i <= 5; ++i) files.push_back((fs::path(path) / fmt::format("data_batch_{}.bin", i)).string());
    } else {
      files.push_back(path);
    }
    return std::make_unique<InMemoryDataset>(read_cifar10(files));
  }
  if (kind == "mnist" && !path.empty()) {
    return std::make_unique<InMemoryDataset>(read_mnist((fs::path(path) / "train-images-idx3-ubyte").string(),
                                                        (fs::path(path) / "train-labels-idx1-ubyte").string()));
  }
  throw InputError("command line", "/dataset", spec, "expected synthetic, cifar10:PATH or mnist:DIR");
}

/** Drives the numerical Runtime; records the loss sum of every iteration's forward. */
class RealBackend final : public ComputeBackend {
 public:
  /** `between_iterations(i)` runs before iteration i > 0 begins, when iteration i - 1 is
   *  complete on this rank (checkpoints). */
  RealBackend(Runtime& runtime, const Dataset& data, const Network& network, int iterations,
              std::function<void(int)> between_iterations = {})
      : runtime_(runtime), data_(data), network_(network), loss_sums_(std::size_t(iterations), 0.0),
        correct_(std::size_t(iterations), 0.0), between_iterations_(std::move(between_iterations)) {}
  std::string mode() const override { return "real"; }
  void begin_iteration(int iteration) override {
    if (iteration > 0 && between_iterations_) between_iterations_(iteration);
    runtime_.load_batch(iteration, data_);
  }
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override {
    runtime_.run_compute(op, iteration, poll);
    if (op.layer >= 0 && op.phase == Phase::forward && iteration < int(loss_sums_.size()) &&
        network_.layers[std::size_t(op.layer)].spec.kind == LayerKind::softmax) {
      loss_sums_[std::size_t(iteration)] = runtime_.last_loss_sum();
      correct_[std::size_t(iteration)] = double(runtime_.last_correct());
    }
  }
  CommBuffers prepare(const Collective& c) override {
    const CollectiveBuffers b = runtime_.prepare(c);
    return CommBuffers{b.send, b.recv, b.send_count, b.recv_count};
  }
  void complete(const Collective& c) override { runtime_.complete(c); }
  void finish() override { runtime_.finish_schedule(); }
  const std::vector<double>& loss_sums() const { return loss_sums_; }
  const std::vector<double>& correct() const { return correct_; }

 private:
  Runtime& runtime_;
  const Dataset& data_;
  const Network& network_;
  std::vector<double> loss_sums_;  // per iteration, this rank's images (nats)
  std::vector<double> correct_;    // per iteration, this rank's arg-max hits
  std::function<void(int)> between_iterations_;
};

/** Rank 0's progress on stderr: one line per finished iteration with its time on this rank,
 *  so a long run is not silent (the metrics over all ranks come at the end). */
class ProgressBackend final : public ComputeBackend {
 public:
  ProgressBackend(ComputeBackend& inner, int iterations, int warmup)
      : inner_(inner), iterations_(iterations), warmup_(warmup) {}
  std::string mode() const override { return inner_.mode(); }
  void begin_iteration(int iteration) override {
    if (iteration > 0) report(iteration - 1);
    started_ = std::chrono::steady_clock::now();
    inner_.begin_iteration(iteration);
  }
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override {
    inner_.run_compute(op, iteration, poll);
  }
  CommBuffers prepare(const Collective& c) override { return inner_.prepare(c); }
  void complete(const Collective& c) override { inner_.complete(c); }
  void finish() override {
    inner_.finish();
    report(iterations_ - 1);
  }

 private:
  void report(int iteration) const {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    std::fprintf(stderr, "cnnpar-run: iteration %d/%d%s %.4f s (rank 0)\n", iteration + 1, iterations_,
                 iteration < warmup_ ? " (warm-up)" : "", seconds);
  }
  ComputeBackend& inner_;
  int iterations_, warmup_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

/** A backend that kills its process mid-run (test hook for a dying rank). */
class ExitingBackend final : public ComputeBackend {
 public:
  ExitingBackend(ComputeBackend& inner, int ops_before_exit) : inner_(inner), left_(ops_before_exit) {}
  std::string mode() const override { return inner_.mode(); }
  void begin_iteration(int i) override { inner_.begin_iteration(i); }
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override {
    if (--left_ <= 0) std::raise(SIGKILL);  // dies like a crashed node: no message, no cleanup
    inner_.run_compute(op, iteration, poll);
  }
  CommBuffers prepare(const Collective& c) override { return inner_.prepare(c); }
  void complete(const Collective& c) override { inner_.complete(c); }
  void finish() override { inner_.finish(); }

 private:
  ComputeBackend& inner_;
  int left_;
};

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

std::string checkpoint_file(const Options& o) {
  return (std::filesystem::path(o.checkpoint) / "checkpoint.bin").string();
}

/** Fails early when checkpoints could not be written: the directory is a file, cannot be
 *  created, or takes no new file (tried: root ignores permission bits), or
 *  its checkpoint.bin is not a regular file. The directory itself is created at the start. */
void check_checkpoint_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const auto fail = [&](const std::string& value, const std::string& reason) {
    throw InputError("command line", "/checkpoint", value, reason);
  };
  std::error_code ec;
  fs::path probe_dir = dir;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) fail(dir, "exists and is not a directory");
    const fs::path file = fs::path(dir) / "checkpoint.bin";
    if (fs::exists(file, ec) && !fs::is_regular_file(file, ec)) fail(file.string(), "exists and is not a regular file");
  } else {
    // The nearest existing ancestor must take the new directory.
    probe_dir = fs::absolute(dir, ec).parent_path();
    while (!probe_dir.empty() && !fs::exists(probe_dir, ec) && probe_dir != probe_dir.root_path())
      probe_dir = probe_dir.parent_path();
    if (!fs::is_directory(probe_dir, ec)) fail(dir, "cannot be created: " + probe_dir.string() + " is not a directory");
  }
  const std::string probe = (probe_dir / (".cnnpar-probe." + std::to_string(::getpid()))).string();
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  if (!f) fail(dir, std::string("cannot write in ") + probe_dir.string() + ": " + std::strerror(errno));
  std::fclose(f);
  std::remove(probe.c_str());
}

/** Why the state between two iterations of `schedule` is not a checkpoint ("" if it is): a
 *  collective posted in one iteration and waited in a later one (Das et al.'s deferred
 *  updates) would be lost. Mirrors the interpreter: an iteration begins at its first compute
 *  or post op after a mark. */
std::string checkpoint_boundary_problem(const Schedule& schedule) {
  for (std::size_t r = 0; r < schedule.programs.size(); ++r) {
    std::vector<int> pending;
    bool begun = true;
    int iteration = 0;
    for (const Op& op : schedule.programs[r].ops) {
      if (op.kind == OpKind::mark) {
        ++iteration;
        begun = false;
        continue;
      }
      if (op.kind == OpKind::wait) {
        pending.erase(std::remove(pending.begin(), pending.end(), op.collective), pending.end());
        continue;
      }
      if (!begun && iteration < schedule.iterations && !pending.empty()) {
        const Collective& c = schedule.collectives.at(std::size_t(pending.front()));
        return fmt::format("rank {} waits for collective {} ({}) of iteration {} in iteration {}", r, c.id, c.label,
                           iteration - 1, iteration);
      }
      begun = true;
      if (op.kind == OpKind::post) pending.push_back(op.collective);
    }
  }
  return "";
}

/** Everything a rank sets up before the run; built identically on every rank. */
struct Setup {
  Network network;
  Platform platform;
  StrategyOptions strategy;
  Schedule schedule;
  std::unique_ptr<Dataset> dataset;
  std::unique_ptr<Runtime> runtime;
  ProgressMode progress = ProgressMode::poll;
  InterpreterOptions interpreter;
  std::int64_t tile_columns = 0;
  CheckpointRun checkpoint_run;  // what a checkpoint of this run records
  std::vector<double> probe_s;   // conv_split's probe seconds per rank (empty without a probe)
};

/** conv_split's `--shares probe`: every rank times the probe convolutions (real/probe.hpp) at
 *  the same time, so ranks that share a machine probe under the contention they will train
 *  under, and the times give every rank the same Eq. 1 shares, which replace `probe` in the
 *  options (so the trace and its prediction record the shares the run used). */
void resolve_probe_shares(Setup& s, const Options& o, int rank, int size) {
  const auto slowed = o.slowdown.find(rank);
  std::vector<double> mine(std::size_t(size), 0.0), times(std::size_t(size), 0.0);
  mpi::barrier(MPI_COMM_WORLD, o.timeout_s, "conv_split probe");
  mine[std::size_t(rank)] = conv_probe_s(s.network, s.strategy.global_batch, o.compute == "real", s.platform, rank,
                                         slowed == o.slowdown.end() ? 1.0 : slowed->second, 5);
  mpi::allreduce(mine.data(), times.data(), size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, o.timeout_s, "conv_split probe");
  std::string text;
  for (double w : probe_shares(times, "<probe>")) text += (text.empty() ? "" : ",") + fmt::format("{:.17g}", w);
  s.strategy.values["shares"] = text;
  s.probe_s = times;
}

/** How the executor runs: --comm-progress, --collectives, --compute. */
struct ExecutionModes {
  ProgressMode progress = ProgressMode::poll;
  CollectiveMode collectives = CollectiveMode::mpi;
  bool sleep_compute = false;
};
/** @throws InputError("command line", "/FLAG", value, reason) for a mode that does not exist. */
ExecutionModes parse_execution_modes(const Options& o) {
  ExecutionModes modes;
  try {
    modes.progress = progress_mode_from_string(o.comm_progress);
  } catch (const std::invalid_argument&) {
    throw InputError("command line", "/comm-progress", o.comm_progress, "expected poll or thread");
  }
  if (o.compute != "real" && o.compute != "sleep")
    throw InputError("command line", "/compute", o.compute, "expected real or sleep");
  modes.sleep_compute = o.compute == "sleep";
  try {
    modes.collectives = collective_mode_from_string(o.collectives);
  } catch (const std::invalid_argument&) {
    throw InputError("command line", "/collectives", o.collectives, "expected mpi or p2p");
  }
  return modes;
}

/** GEMM column tile between polls: --gemm-tile-columns, else 4096 when polling (deep-layer
 *  GEMMs are narrower, so they run whole), else none. */
std::int64_t executor_tile_columns(const Options& o, ProgressMode progress) {
  return o.gemm_tile_columns >= 0 ? o.gemm_tile_columns : (progress == ProgressMode::poll ? 4096 : 0);
}

/** Fills `s` in place: the Runtime keeps references to s.network and s.schedule. */
void prepare(Setup& s, const Options& o, int rank, int size) {
  s.network = load_network(o.network);
  s.platform = load_platform(o.platform);
  s.platform.network.element_bytes = kExecutorElementBytes;  // the executor sends FP32 tensors
  const ExecutionModes modes = parse_execution_modes(o);
  s.progress = modes.progress;
  check_slowdown_ranks(o.slowdown, size, o.slowdown_texts.empty() && !o.spec.empty() ? o.spec : "command line",
                       "/slowdown");
  if (o.iterations < 1) throw InputError("command line", "/iterations", std::to_string(o.iterations), "must be >= 1");
  if (o.warmup < 0 || o.warmup >= o.iterations)
    throw InputError("command line", "/warmup", std::to_string(o.warmup), "must be in [0, iterations)");
  if (o.resume && o.checkpoint.empty())
    throw InputError("command line", "/resume", "true", "--resume needs --checkpoint DIR");
  if (o.checkpoint_every > 0 && o.checkpoint.empty())
    throw InputError("command line", "/checkpoint-every", std::to_string(o.checkpoint_every),
                     "--checkpoint-every needs --checkpoint DIR");
  if (!o.checkpoint.empty() && o.compute != "real")
    throw InputError("command line", "/checkpoint", o.checkpoint,
                     "checkpoints hold trained weights: they need --compute real");
  if (o.compute == "real") check_trainable(s.network, load_scenario("networks", o.network).origin);

  if (rank == 0) {  // only rank 0 writes; the set-up agreement tells the others
    check_output_path(o.trace, "/trace");
    check_output_path(o.weights_out, "/weights-out");
    if (!o.checkpoint.empty() && !o.resume) check_checkpoint_dir(o.checkpoint);
  }

  // Resuming: the run goes on from the checkpoint's iteration up to --iterations in total.
  std::optional<Checkpoint> saved;
  int iterations = o.iterations, warmup = o.warmup;
  if (o.resume) {
    const std::string file = checkpoint_file(o);
    try {
      saved = read_checkpoint(file, s.network);
    } catch (const InputError& e) {
      if (e.json_path() != "/") throw;
      throw InputError("command line", "/checkpoint", file, e.reason());  // cannot be read at all
    }
    if (rank == 0) check_checkpoint_dir(o.checkpoint);
    const std::int64_t done = saved->state.iteration;
    if (done >= o.iterations)
      throw InputError("command line", "/iterations", std::to_string(o.iterations),
                       fmt::format("{} is already at iteration {}: give --iterations above it to go on", file, done));
    iterations = int(o.iterations - done);
    warmup = std::min(o.warmup, iterations - 1);  // the warm-up excludes iterations from metrics only
  }

  s.strategy.name = o.strategy.strategy();
  s.strategy.global_batch = o.batch;
  s.strategy.recompute_columns = o.strategy.recompute_columns();
  s.strategy.ranks = size;
  s.strategy.iterations = iterations;
  s.strategy.warmup_iterations = warmup;
  s.strategy.origin = o.spec.empty() ? "command line" : o.spec;
  s.strategy.values = o.spec_strategy_values;
  const nlohmann::json flag_values = o.strategy.values();
  for (const auto& [key, value] : flag_values.items()) s.strategy.values[key] = value;
  if (s.strategy.name == "conv_split" && s.strategy.text("shares") == "probe") resolve_probe_shares(s, o, rank, size);
  s.schedule = build_schedule(s.network, s.platform, s.strategy);
  verify_or_throw(s.schedule, "<schedule " + s.strategy.name + ">", &s.network);
  if (s.schedule.ranks() != size)
    throw InputError("command line", "/ranks", std::to_string(size),
                     fmt::format("the schedule has {} ranks, mpiexec started {}", s.schedule.ranks(), size));
  // A calibrated platform used beyond the shapes it measured (`cnnpar run` predicts with it;
  // --compute sleep sleeps its times): say so once.
  if (rank == 0)
    for (const std::string& warning : calibration_warnings(s.platform, s.schedule))
      std::fprintf(stderr, "cnnpar-run: warning: %s\n", warning.c_str());

  s.interpreter.progress = s.progress;
  s.interpreter.collectives = modes.collectives;
  s.interpreter.platform = &s.platform;
  s.interpreter.poll_interval_s = o.poll_interval_us * 1e-6;
  s.interpreter.collective_concurrency =
      o.collective_concurrency > 0 ? o.collective_concurrency : std::max(1, s.platform.network.collective_concurrency);
  s.interpreter.timeout_s = o.timeout_s;
  s.interpreter.debug_stall = rank == o.debug_stall_rank;
  s.tile_columns = executor_tile_columns(o, s.progress);

  // What a resumed run must repeat (real/checkpoint.hpp says why each one).
  CheckpointRun& id = s.checkpoint_run;
  id.seed = o.seed;
  id.global_batch = s.schedule.global_batch;
  id.ranks = size;
  id.gemm_tile_columns = s.tile_columns;
  id.learning_rate = float(o.lr);
  id.momentum = float(o.momentum);
  id.weight_decay = float(o.weight_decay);
  id.strategy = s.schedule.strategy;
  nlohmann::json options = s.schedule.options.is_object() ? s.schedule.options : nlohmann::json::object();
  // Free to change on resume: the run's length, and the columns (the same numbers either way).
  for (const char* free : {"iterations", "warmup", "strategy", "batch", "ranks", "columns"}) options.erase(free);
  id.options = options.dump();
  id.dataset = o.dataset;
  id.collectives = to_string(s.interpreter.collectives);
  if (saved) check_resume(checkpoint_file(o), saved->run, id);

  if (o.compute == "real") {
    s.dataset = open_dataset(o.dataset, s.network, o.seed);
    s.dataset->check_matches(s.network);
    SgdConfig sgd;
    sgd.learning_rate = float(o.lr);
    sgd.momentum = float(o.momentum);
    sgd.weight_decay = float(o.weight_decay);
    s.runtime = std::make_unique<Runtime>(s.network, s.schedule, rank, o.seed, sgd);
    s.runtime->set_gemm_tile_columns(s.tile_columns);
    if (saved) s.runtime->restore(saved->state);
  }
  if (o.checkpoint_every > 0) {
    std::string problem = checkpoint_boundary_problem(s.schedule);
    if (problem.empty() && s.runtime && s.runtime->delays_updates())
      problem = "its replicated fc layers compute each weight gradient in the next iteration";
    if (!problem.empty())
      throw InputError("command line", "/checkpoint-every", std::to_string(o.checkpoint_every),
                       fmt::format("strategy {} carries work from one iteration into the next ({}), so only the end of "
                                   "the run is a checkpoint; leave --checkpoint-every out",
                                   s.schedule.strategy, problem));
  }
}

/** The whole model on every rank (all ranks must call it): a model-parallel rank holds only
 *  its rows, so the ranks' owned parts are summed (adding zeros rounds nothing). */
RuntimeState assembled_state(const Runtime& runtime, double timeout_s) {
  if (!runtime.model_parallel()) return runtime.state();
  RuntimeState state = runtime.owned_state();
  std::vector<float> sum(state.weights.size());
  mpi::allreduce(state.weights.data(), sum.data(), int(sum.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, timeout_s,
                 "model assembly");
  state.weights.swap(sum);
  sum.assign(state.momentum.size(), 0.0f);
  mpi::allreduce(state.momentum.data(), sum.data(), int(sum.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, timeout_s,
                 "model assembly");
  state.momentum.swap(sum);
  return state;
}

/** All ranks learn whether any rank failed; the lowest failing rank prints its message.
 *  Returns the exit status (0 when every rank succeeded). */
int agree_on_failure(const std::exception_ptr& error, int rank, int size, double timeout_s) {
  int local[2] = {error ? rank : size, error ? status_of(error) : 0};
  int first_failed = size, status = 0;
  mpi::allreduce(&local[0], &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, timeout_s, "set-up agreement");
  mpi::allreduce(&local[1], &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, timeout_s, "set-up agreement");
  if (error && rank == first_failed) std::fprintf(stderr, "cnnpar-run: %s\n", message_of(error).c_str());
  return status;
}

/** --threads (else OPENBLAS_NUM_THREADS, else 1) and --gemm, for every kernel of this process.
 *  @throws InputError for a back-end this build lacks or a bad OPENBLAS_NUM_THREADS. */
void configure_compute(const Options& o) {
  int threads = o.threads;
  if (threads == 0) {
    threads = 1;
    if (const char* env = std::getenv("OPENBLAS_NUM_THREADS"); env && *env) {
      char* end = nullptr;
      const long value = std::strtol(env, &end, 10);
      if (*end != '\0' || value < 1 || value > 1024)
        throw InputError("environment", "/OPENBLAS_NUM_THREADS", env, "must be an integer in [1, 1024]");
      threads = int(value);
    }
  }
  set_gemm_backend(parse_gemm_backend(o.gemm, "command line", "/gemm"));
  set_compute_threads(threads);
}

/** Largest resident set of this process so far (bytes). */
double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

int run_training(const Options& o, int rank, int size) {
  std::optional<Setup> setup;
  std::exception_ptr error;
  try {
    configure_compute(o);
    setup.emplace();
    prepare(*setup, o, rank, size);
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

  Interpreter interpreter(s.schedule, rank, *backend, comms, clock, s.interpreter);
  const double wall_start_s = MPI_Wtime();
  RankTrace mine = interpreter.run();
  const double wall_s = MPI_Wtime() - wall_start_s;

  // Per-iteration global loss: sum of the ranks' loss sums over N (every rank's images once).
  std::vector<double> loss_sums(std::size_t(s.schedule.iterations), 0.0), correct = loss_sums;
  std::vector<double> global_loss(loss_sums.size(), 0.0), global_correct(loss_sums.size(), 0.0);
  if (real) {
    loss_sums = real->loss_sums();
    correct = real->correct();
  }
  mpi::allreduce(loss_sums.data(), global_loss.data(), int(loss_sums.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                 o.timeout_s, "loss reduction");
  mpi::allreduce(correct.data(), global_correct.data(), int(correct.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                 o.timeout_s, "accuracy reduction");
  for (double& loss : global_loss) loss /= double(s.schedule.global_batch);

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
    m["gemm_backend"] = to_string(gemm_backend());
    m["im2col_columns"] = !s.runtime                 ? "none (sleep compute)"
                          : s.runtime->keep_columns() ? "kept"
                                                      : "shared, recomputed for each conv weight gradient";
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
      std::vector<double> accuracy;
      for (double c : global_correct) accuracy.push_back(c / double(s.schedule.global_batch));
      m["accuracy"] = accuracy;
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
      std::printf("cnnpar-run: %s on %s, %d ranks, batch %lld, %d iterations (%d warm-up), %s compute, %s comm progress\n",
                  s.schedule.strategy.c_str(), s.network.name.c_str(), size, (long long)s.schedule.global_batch,
                  s.schedule.iterations, s.schedule.warmup_iterations, backend->mode().c_str(), to_string(s.progress));
      std::printf("cnnpar-run: %d compute threads per rank, GEMMs on %s, im2col columns %s\n", compute_threads(),
                  to_string(gemm_backend()), s.runtime ? (s.runtime->keep_columns() ? "kept" : "shared") : "none");
      std::printf("cnnpar-run: peak resident memory %.1f MB (largest rank)\n", largest_rss_bytes / 1e6);
      const TraceMetrics metrics = compute_metrics(trace);
      if (!metrics.iteration_times_s.empty()) {
        const auto [least, most] = std::minmax_element(metrics.iteration_times_s.begin(), metrics.iteration_times_s.end());
        std::printf("cnnpar-run: iteration median %.4f s over %zu measured iterations (min %.4f s, max %.4f s, spread "
                    "%.1f %%), wall %.3f s in all%s%s\n",
                    metrics.iteration_s, metrics.iteration_times_s.size(), *least, *most,
                    iteration_spread_percent(metrics), wall_s, o.trace.empty() ? "" : ", trace ", o.trace.c_str());
      }
      if (s.runtime && o.resume)
        std::printf("cnnpar-run: resumed from %s at iteration %lld, ran to iteration %lld\n", checkpoint_path.c_str(),
                    (long long)(s.runtime->iteration() - s.schedule.iterations), (long long)s.runtime->iteration());
      if (s.runtime && !global_loss.empty())
        std::printf("cnnpar-run: loss %.4f -> %.4f, weights %s across ranks\n", global_loss.front(), global_loss.back(),
                    identical ? "identical" : "DIFFERENT");
      std::fflush(stdout);
      // Started by `cnnpar run` (--spec), which warns with the prediction at hand.
      if (o.spec.empty())
        for (const std::string& warning : measurement_warnings(nullptr, trace))
        std::fprintf(stderr, "cnnpar-run: warning: %s\n", warning.c_str());
    }
  }
  mpi::barrier(MPI_COMM_WORLD, o.timeout_s, "final barrier");
  return 0;
}

void print_compute_calibration(const ComputeSummary& c, const Platform& p);
void print_network_calibration(const CalibrationResult& result);
void print_progress_calibration(const CalibrationResult& result);

/** The calibration's report on rank 0: the compute fit, per collective and size the measured
 *  time against what the fitted platform's step pricing gives, and the progress mechanisms. */
void print_calibration(const CalibrationResult& result) {
  const ComputeSummary& c = result.compute;
  const Platform& p = result.platform;
  const CalibrationParts& m = result.measured;
  std::printf("cnnpar-run: measured %s; kept from the base platform: %s\n", to_string(m).c_str(),
              to_string(CalibrationParts{!m.compute, !m.network, !m.progress}).c_str());
  if (m.compute) print_compute_calibration(c, p);
  if (m.network) print_network_calibration(result);
  if (m.progress) print_progress_calibration(result);
}

void print_compute_calibration(const ComputeSummary& c, const Platform& p) {
  std::printf("cnnpar-run: GEMM grid: %d points (per-rank batches %lld..%lld), %d outlying repeats\n", c.gemm_points,
              static_cast<long long>(c.batches.front()), static_cast<long long>(c.batches.back()), c.gemm_outliers);
  std::printf("cnnpar-run: non-GEMM kernels: memory bandwidth %.3f GB/s, call overhead %.2f us (%d ops: %d outlying "
              "repeats, %d ops beyond 3 MADs of the fit); iteration overhead %.3f ms + %.1f us per image\n",
              p.nodes.memory_bandwidth_Bps / 1e9, p.nodes.call_overhead_s * 1e6, c.memory_points, c.op_outliers,
              c.memory.outliers, p.iteration_overhead_s * 1e3, p.input_per_image_s * 1e6);
  if (!p.nodes.kernel_memory_bandwidth_Bps.empty()) {
    std::string classes;
    for (const auto& [kernel, bandwidth_Bps] : p.nodes.kernel_memory_bandwidth_Bps)
      classes += fmt::format("{}{} {:.3f}", classes.empty() ? "" : ", ", to_string(kernel), bandwidth_Bps / 1e9);
    std::printf("cnnpar-run: memory bandwidth by kernel class (GB/s): %s\n", classes.c_str());
  }
  if (c.measured_iteration_s > 0)
    std::printf("cnnpar-run: iteration at per-rank batch %lld: measured %.4f s, modelled %.4f s (%+.1f %%)\n",
                static_cast<long long>(c.batches.back()), c.measured_iteration_s, c.modelled_iteration_s,
                100.0 * (c.modelled_iteration_s / c.measured_iteration_s - 1));
  for (const auto& [kernel, seconds] : c.per_class_s)
    std::printf("  %-8s measured %.4f s, modelled %.4f s (%+.1f %%)\n", kernel.c_str(), seconds.first, seconds.second,
                100.0 * (seconds.second / seconds.first - 1));
}

void print_network_calibration(const CalibrationResult& result) {
  const Platform& p = result.platform;
  if (!result.network_note.empty())
    std::printf("cnnpar-run: network NOT fitted (%s): the base platform's is kept\n", result.network_note.c_str());
  std::printf("cnnpar-run: network: latency %.3f us, bandwidth %.3f GB/s, reduction rate %.3f GB/s, %zu "
              "message-factor pieces\n",
              p.network.latency_s * 1e6, p.network.bandwidth_Bps / 1e9, p.network.reduction_rate_Bps / 1e9,
              p.network.message_factors.size());
  for (const MessageFactor& f : p.network.message_factors)
    std::printf("  from %12.0f B: latency x %.3f, bandwidth x %.3f\n", f.from_bytes, f.latency_factor, f.bandwidth_factor);
  for (const auto& [kind, points] : p.network.kind_size_factors) {
    std::printf("  %s steps priced as messages of", kind.c_str());
    for (const KindSizeFactor& point : points) std::printf(" %.0f B: x %.3f;", point.bytes, point.factor);
    std::printf(" their size\n");
  }
  std::printf("%-15s %12s %12s %12s %8s %9s\n", "collective", "bytes", "measured s", "modelled s", "error %", "outliers");
  // measured s: the median of isolated repeats, or (*) the mean of a chain of back-to-back ones
  for (const CollectiveCurve& curve : result.collectives) {
    double worst = 0;
    for (const CollectivePoint& point : curve.points) {
      const double error = 100.0 * (point.modelled_s / point.fit_s - 1);
      worst = std::max(worst, std::abs(error));
      std::printf("%-15s %12.0f %11.4g%c %12.4g %+8.1f %5d/%-3d\n", curve.kind.c_str(), point.bytes, point.fit_s,
                  point.chained ? '*' : ' ', point.modelled_s, error, point.measured_s.outliers, point.measured_s.count);
    }
    std::printf("%-15s worst |error| %.1f %%%s%s\n", curve.kind.c_str(), worst, curve.stopped.empty() ? "" : "; ",
                curve.stopped.c_str());
  }
}

void print_progress_calibration(const CalibrationResult& result) {
  const ProgressSummary& s = result.progress;
  const Platform& p = result.platform;
  if (!result.progress_note.empty()) {
    std::printf("cnnpar-run: progress NOT fitted (%s): the base platform's values are kept\n",
                result.progress_note.c_str());
    return;
  }
  std::printf("cnnpar-run: progress: %zu backward ops at per-rank batch %lld (one pass %.4f s alone), a %.0f B "
              "allreduce (%.4f s alone)\n",
              s.compute_ops, static_cast<long long>(s.batch), s.pass_alone_s, s.collective_bytes, s.collective_alone_s);
  std::printf("cnnpar-run:   comm_compute_slowdown %.3f: compute under a chain of %d allreduces %+.1f %% (median of "
              "%d rank-repeats, %d outlying)\n",
              p.comm_compute_slowdown, s.chain, 100 * s.slowdown.median, s.slowdown.count, s.slowdown.outliers);
  std::printf("cnnpar-run:   network.busy_bandwidth_fraction %.3f: the allreduce under %d passes of compute took "
              "%.4f s (median of %d rank-repeats, %d outlying%s)\n",
              p.network.busy_bandwidth_fraction, s.passes, s.collective_busy_s, s.fraction.count, s.fraction.outliers,
              s.fraction.median != p.network.busy_bandwidth_fraction
                  ? fmt::format("; measured {:.3f}, clamped to [{}, 1]", s.fraction.median, kMinBusyFraction).c_str()
                  : "");
  std::printf("cnnpar-run:   comm_start_wait_max %.6f s: the allreduce posted before those passes waited that long "
              "for the progress thread (median of %d rank-repeats, %d outlying)\n",
              p.comm_start_wait_max_s, s.start_wait.count, s.start_wait.outliers);
}

int run_calibration(const Options& o, int rank, int size, bool max_message_given) {
  std::exception_ptr error;
  Network network;
  Platform base;
  CalibrateOptions options;
  try {
    configure_compute(o);
    if (o.out.empty()) throw InputError("command line", "/out", "", "--calibrate needs --out PLATFORM.json");
    if (rank == 0) check_output_path(o.out, "/out");
    network = load_network(o.network);
    base = load_platform(o.platform);
    if (!(o.max_message_bytes >= 1024 && o.max_message_bytes <= 2.0 * 1024 * 1024 * 1024))
      throw InputError("command line", "/max-message", fmt::format("{}", o.max_message_bytes),
                       "the largest message must be 1 KiB .. 2 GiB");
    options.parts = parse_calibration_parts(o.calibrate_parts, "command line", "/calibrate-parts");
    const ExecutionModes modes = parse_execution_modes(o);
    options.progress_mode = modes.progress;
    options.collectives = modes.collectives;
    options.sleep_compute = modes.sleep_compute;
  } catch (...) {
    error = std::current_exception();
  }
  if (const int status = agree_on_failure(error, rank, size, o.timeout_s); status != 0) return status;
  options.batch = o.batch;  // global, as everywhere: the compute grid covers per-rank batches 1 .. batch
  options.seed = o.seed;
  options.repeats = std::max(1, o.repeats);
  options.timeout_s = o.timeout_s;
  options.max_message_bytes = o.max_message_bytes;
  options.max_message_given = max_message_given;
  options.op_seconds = o.op_seconds;
  options.poll_interval_s = o.poll_interval_us * 1e-6;
  options.gemm_tile_columns = executor_tile_columns(o, options.progress_mode);
  if (rank == 0 && !o.quiet)
    options.progress = [](const std::string& line) {
      std::printf("cnnpar-run: calibrate: %s\n", line.c_str());
      std::fflush(stdout);
    };
  CalibrationResult result = calibrate(network, base, options, MPI_COMM_WORLD);
  if (rank == 0) {
    write_file_atomic(o.out, to_json(result.platform).dump(2) + "\n");
    print_calibration(result);
    std::printf("cnnpar-run: wrote %s (%zu GEMM grid points%s)\n", o.out.c_str(),
                result.platform.measured_gemm_flops.size(),
                result.platform.measured_op_s.empty() ? "" : fmt::format(", {} op times", result.platform.measured_op_s.size()).c_str());
  }
  mpi::barrier(MPI_COMM_WORLD, o.timeout_s, "final barrier");
  return 0;
}

/** SIGINT/SIGTERM: remove the temporary file of an output being written, then die of the
 *  signal as without a handler (mpiexec reports it and ends the other ranks). */
extern "C" void on_terminate_signal(int signal) {
  remove_pending_temporary();
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

/** Every rank passed the final barrier: the run's work and its outputs are complete, so a
 *  finalize that cannot end must not turn it into a hang. On MPICH 4.0 ch4:ucx, whose
 *  MPI_Finalize races (mpi::finalize_can_hang), ranks alone on their hosts leave without it;
 *  elsewhere MPI_Finalize runs, bounded by kFinalizeBound_s. */
constexpr double kFinalizeBound_s = 30;

[[noreturn]] void leave_now() {
  std::fflush(nullptr);
  ::_exit(0);
}

void finish_after_final_barrier(std::unique_ptr<mpi::Environment> environment, int rank, double timeout_s) {
  if (mpi::finalize_can_hang(mpi::library_version()) && !mpi::ranks_share_hosts(MPI_COMM_WORLD, timeout_s)) leave_now();
  std::thread([rank] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kFinalizeBound_s));
    std::fprintf(stderr, "cnnpar-run: rank %d: MPI_Finalize did not return within %.0f s; the run is complete, leaving without it\n",
                 rank, kFinalizeBound_s);
    leave_now();
  }).detach();
  environment.reset();  // MPI_Finalize
}

bool wants_thread_multiple(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--comm-progress=thread") == 0) return true;
    if (std::strcmp(argv[i], "--comm-progress") == 0 && i + 1 < argc && std::strcmp(argv[i + 1], "thread") == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Sleeps (sleep compute, polling, the communication thread) end when asked, not up to the
  // default 50 us timer slack later (threads inherit it). Measured: 65-86 us late -> 15-36 us.
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  std::unique_ptr<mpi::Environment> environment;
  try {
    environment = std::make_unique<mpi::Environment>(&argc, &argv, wants_thread_multiple(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cnnpar-run: %s\n", e.what());
    return 1;
  }
  // After MPI_Init, so these handlers are the ones that stay.
  struct sigaction terminate {};
  terminate.sa_handler = on_terminate_signal;
  sigemptyset(&terminate.sa_mask);
  ::sigaction(SIGINT, &terminate, nullptr);
  ::sigaction(SIGTERM, &terminate, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  Options options;
  CLI::App app;
  cli::set_one_line_failure_message(app, "cnnpar-run");
  add_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank sees the same arguments, so every rank stops here; rank 0 speaks.
    if (rank == 0) app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  try {
    apply_run_spec(app, options);
    check_numbers(app, options);
  } catch (const InputError& e) {
    // Every rank reads the same spec and fails alike; rank 0 speaks.
    if (rank == 0) std::fprintf(stderr, "cnnpar-run: %s\n", e.what());
    return 2;
  }

  try {
    const int status = options.calibrate ? run_calibration(options, rank, size, app.count("--max-message") > 0) : run_training(options, rank, size);
    if (status == 0) finish_after_final_barrier(std::move(environment), rank, options.timeout_s);
    return status;
  } catch (const std::exception& e) {
    // After set-up a failure is local to this rank: say which, and take the job down so no
    // rank is left waiting in a collective.
    const int status = status_of(std::current_exception());
    const std::string message = e.what();
    if (message.rfind("rank ", 0) == 0) {  // stall and timeout messages already name the rank
      std::fprintf(stderr, "cnnpar-run: %s\n", message.c_str());
    } else {
      std::fprintf(stderr, "cnnpar-run: rank %d: %s\n", rank, message.c_str());
    }
    mpi::abort_world(status);
  }
}
