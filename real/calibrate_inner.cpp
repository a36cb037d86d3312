// The inner part of the calibration: a conv layer's forward and weight-gradient work in each
// inner mode (im2col + one GEMM, or BPT-CNN's task DAG) on 1..T threads, as the fraction of T
// cores' peak it reaches (Platform nodes.inner).
#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "real/calibrate_parts.hpp"
#include "real/dataset.hpp"
#include "real/kernels.hpp"
#include "real/runtime.hpp"

namespace cnnpar::real::calibration {

namespace {

/** The ops a mode's efficiency covers: a conv layer's forward and weight-gradient GEMMs, and
 *  with dag its im2col ops too (they do nothing there; their work is in the GEMM ops). */
bool priced_by_inner(const Op& op, InnerMode mode) {
  if (!op.conv_layer || (op.phase != Phase::forward && op.phase != Phase::backward_weight)) return false;
  return op.kernel == KernelClass::gemm || (mode == InnerMode::dag && op.kernel == KernelClass::im2col);
}

struct InnerSample {
  double flops = 0;    ///< the GEMMs' FLOPs of one iteration
  double seconds = 0;  ///< the priced ops' seconds of one iteration
};

InnerSample time_mode(const Network& network, const Schedule& schedule, const Dataset& data, InnerMode mode,
                      const CalibrateOptions& o) {
  Runtime runtime(network, schedule, 0, o.seed);
  runtime.set_inner_mode(mode);
  runtime.set_gemm_tile_columns(o.gemm_tile_columns);  // as the runs split their GEMMs between polls
  const BatchTimings t = run_timed(runtime, schedule, data);
  InnerSample sample;
  for (const auto& [label, entry] : t.ops) {
    const auto& [op, seconds] = entry;
    if (!priced_by_inner(op, mode)) continue;
    if (op.kernel == KernelClass::gemm) sample.flops += op.flops;
    sample.seconds += median(seconds);
  }
  return sample;
}

}  // namespace

int inner_thread_limit(const Platform& platform) {
  const int hardware = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, std::min(platform.nodes.cores, hardware));
}

void calibrate_inner(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm, int rank,
                     Platform& platform, InnerSummary& summary) {
  int size = 1;
  CNNPAR_MPI(MPI_Comm_size(comm, &size));
  // A rank's share of the global batch, as in a run on the calibrating ranks.
  const std::int64_t batch = std::max<std::int64_t>(1, o.batch / size);
  const Schedule schedule = one_rank_schedule(network, base, batch, o);
  const SyntheticDataset data(network.input, network.classes(), 50000, o.seed);
  const int max_threads = inner_thread_limit(platform);
  const int run_threads = compute_threads();
  summary.batch = batch;
  // seconds[mode][T - 1]: this rank's repeats, pooled over the ranks below.
  std::map<InnerMode, std::vector<std::vector<double>>> seconds;
  double flops = 0;
  for (InnerMode mode : {InnerMode::gemm, InnerMode::dag}) seconds[mode].resize(std::size_t(max_threads));
  // Passes alternate the order of the (mode, T) cases, so a burst of load spoils one repeat of
  // several cases rather than every repeat of one.
  std::vector<std::pair<InnerMode, int>> cases;
  for (int threads = 1; threads <= max_threads; ++threads)
    for (InnerMode mode : {InnerMode::gemm, InnerMode::dag}) cases.emplace_back(mode, threads);
  for (int pass = 0; pass < o.repeats; ++pass) {
    const double start = now_s();
    for (std::size_t step = 0; step < cases.size(); ++step) {
      const auto [mode, threads] = cases[pass % 2 == 0 ? step : cases.size() - 1 - step];
      set_compute_threads(threads);
      tight_barrier(comm, std::max(o.timeout_s, 3600.0));  // the ranks time each case together
      const InnerSample sample = time_mode(network, schedule, data, mode, o);
      flops = sample.flops;
      seconds[mode][std::size_t(threads - 1)].push_back(sample.seconds);
    }
    say(o, fmt::format("inner: pass {}/{} over gemm and dag on 1..{} threads at per-rank batch {}: {:.1f} s",
                       pass + 1, o.repeats, max_threads, batch, now_s() - start));
  }
  set_compute_threads(run_threads);
  // Every rank's repeats are samples of the same work under the same contention (as compute).
  nlohmann::json mine = nlohmann::json::object();
  for (const auto& [mode, per_threads] : seconds) mine[to_string(mode)] = per_threads;
  const std::vector<std::string> gathered =
      mpi::gather_strings(mine.dump(), 0, comm, o.timeout_s, "calibration (inner samples)");
  if (rank != 0) return;
  for (std::size_t r = 1; r < gathered.size(); ++r) {
    const nlohmann::json theirs = nlohmann::json::parse(gathered[r]);
    for (auto& [mode, per_threads] : seconds)
      for (std::size_t t = 0; t < per_threads.size(); ++t)
        for (const nlohmann::json& value : theirs.at(to_string(mode)).at(t)) per_threads[t].push_back(value.get<double>());
  }
  InnerThreads inner{.mode = o.inner_mode, .threads = std::min(o.inner_threads, max_threads)};
  for (const auto& [mode, per_threads] : seconds) {
    std::vector<double>& efficiency = inner.conv_efficiency[mode];
    for (std::size_t t = 0; t < per_threads.size(); ++t) {
      const double threads_peak_flops = platform.nodes.peak_flops * double(t + 1) / double(platform.nodes.cores);
      const double rate_flops = flops / std::max(median(per_threads[t]), 1e-9);
      if (rate_flops > threads_peak_flops)
        throw InputError(o.platform_file, "/nodes/peak", fmt::format("{}", platform.nodes.peak_flops),
                         fmt::format("the conv layers ran at {:.4g} FLOP/s on {} of the node's {} cores ({}), above "
                                     "that share of the peak: give the node's real peak",
                                     rate_flops, t + 1, platform.nodes.cores, to_string(mode)));
      efficiency.push_back(rate_flops / threads_peak_flops);
      summary.seconds[to_string(mode)].push_back(median(per_threads[t]));
    }
  }
  summary.flops = flops;
  platform.nodes.inner = inner;
}

}  // namespace cnnpar::real::calibration
