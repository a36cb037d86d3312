// The run's set-up on every rank: checks of the options, network and platform, conv_split's
// probe, the schedule and its verification, resume, the runtime and the dataset.
#include "apps/cnnpar-run/setup.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cnnpar-run/failure.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"
#include "model/scenarios.hpp"
#include "real/kernels_conv_direct.hpp"
#include "real/mpi_wrap.hpp"
#include "real/probe.hpp"
#include "system/op_time.hpp"
#include "workload/conv_choice.hpp"
#include "workload/executor_network.hpp"
#include "workload/registry.hpp"

namespace cnnpar::executor {

namespace {

std::unique_ptr<Dataset> open_dataset(const std::string& spec, const Network& network, std::uint64_t seed) {
  namespace fs = std::filesystem;
  if (spec == "synthetic") {
    // Generated on demand from (seed, index); the size only sets where batches wrap.
    return std::make_unique<SyntheticDataset>(network.input, network.classes(), SyntheticDataset::kRunImages, seed);
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

/** Options the strategy resolves from the ranks' speeds (conv_split's `--shares probe`,
 *  param_server's `--per-sample probe`): every rank times the strategy's probe (real/probe.hpp)
 *  at the same time, so ranks that share a machine probe under the contention they will train
 *  under; the strategy turns the times into its options (Eq. 1 shares or IDPA's per-sample
 *  times, which replace `probe`, so the trace and its prediction record what the run used). */
void probe_ranks(Setup& s, const Options& o, int rank, int size, const StrategySpec& spec) {
  const auto slowed = o.slowdown.find(rank);
  std::vector<double> mine(std::size_t(size), 0.0), times(std::size_t(size), 0.0);
  mpi::barrier(MPI_COMM_WORLD, o.timeout_s, "rank probe");
  const double slowdown = slowed == o.slowdown.end() ? 1.0 : slowed->second;
  const bool real_compute = o.compute == "real";
  switch (spec.probe) {
    case RankProbe::conv_forward:
      mine[std::size_t(rank)] = conv_probe_s(s.network, s.strategy.global_batch, real_compute, s.platform, rank, slowdown, 5);
      break;
    case RankProbe::training_step:
      mine[std::size_t(rank)] =
          training_probe_s(s.network, s.strategy.global_batch, real_compute, s.platform, rank, slowdown, 5);
      break;
    case RankProbe::none:
      CNNPAR_ASSERT(false, "strategy " + spec.name + " probes the ranks without naming a probe");
  }
  mpi::allreduce(mine.data(), times.data(), size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, o.timeout_s, "rank probe");
  spec.resolve_probe(s.strategy, times);
  s.probe_s = times;
}

/** The conv paths a checkpoint's run took (its options' "conv"; absent = im2col). */
ConvPaths checkpoint_conv_paths(const CheckpointRun& run, const std::string& file) {
  const nlohmann::json options = nlohmann::json::parse(run.options, nullptr, false);
  if (!options.is_object() || !options.contains("conv")) return {};
  return conv_paths_from_json(options.at("conv"), file, "/options/conv");
}

// `--conv auto` on a platform without a direct grid: every rank times every path of each of its
// conv layers on its own shapes, and the sums over the ranks pick each layer's fastest path for
// all of them (one schedule). A path a rank cannot run (Winograd on a CPU without its kernels)
// costs it infinity.
ConvPaths choose_conv_paths(const Setup& s, const Options& o, int rank, int size) {
  StrategyOptions im2col = s.strategy;
  im2col.conv = {};
  const Schedule schedule = build_schedule(s.network, s.platform, im2col);
  const auto& ops = schedule.programs.at(std::size_t(rank)).ops;
  const std::size_t layers = s.network.layers.size();
  constexpr std::size_t kPaths = 3;  // per layer: im2col s, direct s, Winograd s
  std::vector<double> mine(kPaths * layers, 0.0), sums(kPaths * layers, 0.0);
  std::vector<bool> timed(layers, false);
  for (const Op& op : ops) {
    if (op.kind != OpKind::compute || !op.conv_layer || op.kernel != KernelClass::gemm || op.phase != Phase::forward)
      continue;
    const std::size_t l = std::size_t(op.layer);
    if (timed[l]) continue;
    timed[l] = true;
    const Layer& layer = s.network.layers[l];
    const real::ConvGeometry geometry = real::conv_layer_geometry(layer, op.batch);
    const bool backward_data = std::any_of(ops.begin(), ops.end(), [&](const Op& other) {
      return other.kind == OpKind::compute && other.layer == op.layer && other.phase == Phase::backward_data;
    });
    const real::ConvPathSeconds seconds = real::conv_path_seconds(geometry, op.gemm.m, backward_data);
    mine[kPaths * l] = seconds.im2col_s;
    mine[kPaths * l + 1] = seconds.direct_s;
    mine[kPaths * l + 2] = winograd_shape(layer.spec) ? seconds.winograd_s : std::numeric_limits<double>::infinity();
  }
  mpi::allreduce(mine.data(), sums.data(), int(sums.size()), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, o.timeout_s,
                 "conv path probe");
  ConvPaths chosen{.mode = ConvPaths::Mode::layers};
  std::vector<std::string> lines;
  for (std::size_t l = 0; l < layers; ++l) {
    const double* path_s = &sums[kPaths * l];
    if (path_s[0] == 0 && path_s[1] == 0) continue;  // no rank computes it
    const std::size_t fastest = std::size_t(std::min_element(path_s, path_s + kPaths) - path_s);
    const std::string& name = s.network.layers[l].spec.name;
    if (fastest == 1) chosen.direct_layers.push_back(name);
    if (fastest == 2) chosen.winograd_layers.push_back(name);
    const auto ms = [&](double seconds) {
      return std::isfinite(seconds) ? fmt::format("{:.2f} ms", 1e3 * seconds / size) : std::string("n/a");
    };
    lines.push_back(fmt::format("{} {} ({} im2col, {} direct, {} winograd)", name,
                                to_string(ConvPath(fastest)), ms(path_s[0]), ms(path_s[1]), ms(path_s[2])));
  }
  std::sort(chosen.direct_layers.begin(), chosen.direct_layers.end());
  std::sort(chosen.winograd_layers.begin(), chosen.winograd_layers.end());
  if (rank == 0 && !o.quiet) fmt::print(stderr, "cnnpar-run: --conv auto, per training step: {}\n", fmt::join(lines, "; "));
  return chosen;
}

}  // namespace

std::string checkpoint_file(const Options& o) {
  return (std::filesystem::path(o.checkpoint) / "checkpoint.bin").string();
}

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

FreedMemory freed_memory_once_set_up(int ranks) { return ranks > 1 ? FreedMemory::kept : FreedMemory::returned; }

std::int64_t executor_tile_columns(const Options& o, ProgressMode progress) {
  return o.gemm_tile_columns >= 0 ? o.gemm_tile_columns : (progress == ProgressMode::poll ? 4096 : 0);
}

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
  if (o.compute == "real") check_executor_network(s.network, load_scenario("networks", o.network).origin);

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
  s.strategy.conv = o.strategy.conv();
  const bool inner_dag = parse_inner_mode(o.inner, "command line", "/inner") == InnerMode::dag;
  if (s.strategy.conv.any_direct() && !real::direct_convolution_available())
    throw InputError("command line", "--conv", s.strategy.conv.text(),
                     "this build has no oneDNN (configure with -DCNNPAR_ONEDNN=ON; libdnnl-dev): use --conv im2col");
  if (s.strategy.conv.any_direct() && inner_dag)
    throw InputError("command line", "--conv", s.strategy.conv.text(),
                     "BPT-CNN's inner task DAG (--inner dag) runs im2col + GEMM tasks: use --conv im2col with it");
  bool automatic = s.strategy.conv.mode == ConvPaths::Mode::automatic;
  if (automatic && (!real::direct_convolution_available() || inner_dag)) {
    s.strategy.conv = {};  // the only path this build or mode has
    automatic = false;
  }
  if (automatic && saved) {
    s.strategy.conv = checkpoint_conv_paths(saved->run, checkpoint_file(o));  // timing again could choose others
    automatic = false;
  }
  if (!automatic && o.compute == "real") {
    const std::string origin = o.spec.empty() ? "command line" : o.spec;
    validate_conv_paths(s.strategy.conv, s.network, origin);
    if (const std::string layer = real::winograd_layer_without_kernel(s.network, s.strategy.conv); !layer.empty())
      throw InputError(origin, "--conv", s.strategy.conv.text(),
                       fmt::format("this CPU has no oneDNN Winograd kernel for {} (oneDNN 2.x runs them with AVX-512 "
                                   "only): use --conv direct or auto",
                                   layer));
  }
  s.strategy.ranks = size;
  s.strategy.iterations = iterations;
  s.strategy.warmup_iterations = warmup;
  s.strategy.origin = o.spec.empty() ? "command line" : o.spec;
  s.strategy.values = o.spec_strategy_values;
  const nlohmann::json flag_values = o.strategy.values();
  for (const auto& [key, value] : flag_values.items()) s.strategy.values[key] = value;
  const StrategySpec& spec = strategy_spec(s.strategy.name, s.strategy.origin);
  const bool probes = spec.probes_ranks != nullptr && spec.probes_ranks(s.strategy);
  // Otherwise auto stays for build_schedule to resolve from the platform's prices: a platform
  // that measured direct convolutions, or sleep compute (which times no kernel).
  const bool times_conv_paths = automatic && o.compute == "real" && !prices_direct_convolutions(s.platform);
  // A rank that failed its checks waits in the set-up agreement, not in a probe's collective.
  if (probes || times_conv_paths)
    if (const int status = agree_on_failure(nullptr, rank, size, o.timeout_s); status != 0)
      throw SetUpFailedElsewhere{status};
  if (probes) probe_ranks(s, o, rank, size, spec);
  if (times_conv_paths) s.strategy.conv = choose_conv_paths(s, o, rank, size);
  // The schedule is built for the nodes as they run: a slowed node is nominally slower too
  // (IDPA's first split, Eq. 2), as in the prediction. Sleep compute pads the unslowed times.
  Platform as_run = s.platform;
  for (const auto& [slowed_rank, factor] : o.slowdown)
    if (slowed_rank < as_run.nodes.count) as_run.slow_down(slowed_rank, factor);
  s.schedule = build_schedule(s.network, as_run, s.strategy);
  verify_or_throw(s.schedule, "<schedule " + s.strategy.name + ">", &s.network);
  if (automatic && s.strategy.conv.mode == ConvPaths::Mode::automatic && prices_direct_convolutions(s.platform) &&
      rank == 0 && !o.quiet) {
    const nlohmann::json chosen = s.schedule.options.value("conv", nlohmann::json());
    fmt::print(stderr, "cnnpar-run: --conv auto from the platform's convolution grids: {}\n",
               chosen.is_null() ? std::string("im2col for every layer")
                                : "not im2col: " + conv_paths_from_json(chosen, o.platform, "/conv").text());
  }
  if (s.schedule.ranks() != size)
    throw InputError("command line", "/ranks", std::to_string(size),
                     fmt::format("the schedule has {} ranks, mpiexec started {}", s.schedule.ranks(), size));
  // A calibrated platform used beyond the shapes it measured (`cnnpar run` predicts with it;
  // --compute sleep sleeps its times): say so once.
  if (rank == 0)
    for (const std::string& warning : calibration_warnings(s.platform, s.schedule))
      fmt::print(stderr, "cnnpar-run: warning: {}\n", warning);

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
    s.runtime->set_inner_mode(parse_inner_mode(o.inner, "command line", "/inner"));  // checked by check_numbers
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

}  // namespace cnnpar::executor
