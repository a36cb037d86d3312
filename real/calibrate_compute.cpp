// The compute part of the calibration: every rank times the real kernels over the per-rank
// batches; rank 0 fits the GEMM grid, the memory roofline and the iteration overhead.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "model/gemm_grid.hpp"
#include "model/schedule.hpp"
#include "real/calibrate_parts.hpp"
#include "real/dataset.hpp"
#include "real/mpi_wrap.hpp"
#include "real/runtime.hpp"
#include "system/op_time.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::real::calibration {

Schedule one_rank_schedule(const Network& network, const Platform& base, std::int64_t batch, const CalibrateOptions& o,
                           const ConvPaths& conv) {
  StrategyOptions strategy = plain_data_parallel(StrategyOptions{});
  strategy.global_batch = batch;
  strategy.ranks = 1;
  strategy.iterations = 2;
  strategy.warmup_iterations = 1;
  strategy.recompute_columns = kExecutorRecomputesColumns;  // the executor's default schedule
  strategy.origin = o.origin;
  strategy.conv = conv;
  Schedule schedule = build_schedule(network, base, strategy);
  verify_or_throw(schedule, "<calibration schedule>");
  return schedule;
}

BatchTimings run_timed(Runtime& runtime, const Schedule& schedule, const Dataset& data) {
  BatchTimings out;
  int iteration = 0;
  bool begun = false;
  double iteration_start = now_s(), ops_s = 0;
  for (const Op& op : schedule.programs[0].ops) {
    switch (op.kind) {
      case OpKind::mark: {
        const double end = now_s();
        if (iteration >= schedule.warmup_iterations) {
          out.iteration_s.push_back(end - iteration_start);
          out.outside_ops_s.push_back(end - iteration_start - ops_s);
        }
        ++iteration;
        begun = false;
        iteration_start = now_s();
        ops_s = 0;
        break;
      }
      case OpKind::compute: {
        if (!begun && iteration < schedule.iterations) runtime.load_batch(iteration, data);
        begun = true;
        const double start = now_s();
        runtime.run_compute(op, iteration);
        const double seconds = now_s() - start;
        ops_s += seconds;
        if (iteration >= schedule.warmup_iterations) {
          auto& entry = out.ops.try_emplace(op.label, op, std::vector<double>{}).first->second;
          entry.second.push_back(seconds);
        }
        break;
      }
      case OpKind::post:  // one rank: a collective over {0} leaves the data as it is
        if (!begun && iteration < schedule.iterations) runtime.load_batch(iteration, data);
        begun = true;
        runtime.prepare(schedule.collectives[std::size_t(op.collective)]);
        break;
      case OpKind::wait:
        runtime.complete(schedule.collectives[std::size_t(op.collective)]);
        break;
      case OpKind::serve:
        CNNPAR_ASSERT(false, "the one-rank calibration schedule has no parameter server");
    }
  }
  runtime.finish_schedule();
  return out;
}

namespace {

BatchTimings time_batch(const Network& network, const Platform& base, std::int64_t batch, const CalibrateOptions& o,
                        const ConvPaths& conv) {
  const Schedule schedule = one_rank_schedule(network, base, batch, o, conv);
  SyntheticDataset data(network.input, network.classes(), 50000, o.seed);
  Runtime runtime(network, schedule, 0, o.seed);
  return run_timed(runtime, schedule, data);
}

/** Adds every other rank's samples to rank 0's `timings` (every rank ran the same batches and
 *  ops). Pooled, not reduced per rank first: every rank computes under the same contention in
 *  a run and the engines give every rank one platform, so each rank's repeats are samples of
 *  the same op, and the median of the pool is the typical rank's time. */
void pool_over_ranks(std::vector<BatchTimings>& timings, MPI_Comm comm, int rank, double timeout_s) {
  nlohmann::json mine = nlohmann::json::array();
  for (const BatchTimings& t : timings) {
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [label, entry] : t.ops) ops[label] = entry.second;
    mine.push_back({{"ops", ops}, {"iteration_s", t.iteration_s}, {"outside_ops_s", t.outside_ops_s}});
  }
  const std::vector<std::string> gathered =
      mpi::gather_strings(mine.dump(), 0, comm, timeout_s, "calibration (compute samples)");
  if (rank != 0) return;
  const auto append = [](std::vector<double>& to, const nlohmann::json& from) {
    for (const nlohmann::json& value : from) to.push_back(value.get<double>());
  };
  for (std::size_t r = 1; r < gathered.size(); ++r) {
    const nlohmann::json theirs = nlohmann::json::parse(gathered[r]);
    CNNPAR_ASSERT(theirs.size() == timings.size(), "every rank times the same per-rank batches");
    for (std::size_t i = 0; i < timings.size(); ++i) {
      const nlohmann::json& part = theirs[i];
      for (auto& [label, entry] : timings[i].ops) append(entry.second, part.at("ops").at(label));
      append(timings[i].iteration_s, part.at("iteration_s"));
      append(timings[i].outside_ops_s, part.at("outside_ops_s"));
    }
  }
}

}  // namespace

void calibrate_compute(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm,
                       int rank, Platform& platform, ComputeSummary& summary) {
  summary.batches = calibration_batches(o.batch);
  std::map<std::string, std::pair<GemmShape, std::vector<double>>> gemm_seconds;  // by grid key; pooled
  std::vector<KernelSample> memory_samples;                                       // medians of the non-GEMM ops
  std::vector<std::pair<Op, double>> largest_ops;                                 // at the largest batch
  std::vector<std::pair<double, double>> outside_ops_s;  // (per-rank batch, median seconds)
  double largest_iteration_s = 0;
  // Repeats are passes over every batch (alternately up and down) rather than consecutive
  // iterations of one batch: a burst of load on a shared machine then spoils one repeat of
  // many points, which their medians ignore, instead of every repeat of a few points.
  std::vector<BatchTimings> timings(summary.batches.size());
  // With direct (Winograd) convolutions: the same batches with every conv layer direct (Winograd
  // where it can), kept apart (their ops carry the im2col schedule's labels); only their conv
  // (winograd) ops are used.
  std::vector<BatchTimings> direct_timings(o.direct_convolutions ? summary.batches.size() : 0);
  std::vector<BatchTimings> winograd_timings(o.winograd_convolutions ? summary.batches.size() : 0);
  const auto add_timings = [](BatchTimings& all, const BatchTimings& t) {
    for (const auto& [label, entry] : t.ops) {
      auto& kept = all.ops.try_emplace(label, entry.first, std::vector<double>{}).first->second;
      kept.second.insert(kept.second.end(), entry.second.begin(), entry.second.end());
    }
    all.iteration_s.insert(all.iteration_s.end(), t.iteration_s.begin(), t.iteration_s.end());
    all.outside_ops_s.insert(all.outside_ops_s.end(), t.outside_ops_s.begin(), t.outside_ops_s.end());
  };
  for (int pass = 0; pass < o.repeats; ++pass) {
    const double start = now_s();
    for (std::size_t step = 0; step < summary.batches.size(); ++step) {
      const std::size_t i = pass % 2 == 0 ? step : summary.batches.size() - 1 - step;
      tight_barrier(comm, std::max(o.timeout_s, 3600.0));  // the ranks time each batch together
      add_timings(timings[i], time_batch(network, base, summary.batches[i], o, {}));
      if (o.direct_convolutions) {
        tight_barrier(comm, std::max(o.timeout_s, 3600.0));
        add_timings(direct_timings[i],
                    time_batch(network, base, summary.batches[i], o, ConvPaths{.mode = ConvPaths::Mode::direct}));
      }
      if (o.winograd_convolutions) {
        tight_barrier(comm, std::max(o.timeout_s, 3600.0));
        add_timings(winograd_timings[i],
                    time_batch(network, base, summary.batches[i], o, ConvPaths{.mode = ConvPaths::Mode::winograd}));
      }
    }
    say(o, fmt::format("compute: pass {}/{} over per-rank batches {}..{}: {:.1f} s", pass + 1, o.repeats,
                       summary.batches.front(), summary.batches.back(), now_s() - start));
  }
  pool_over_ranks(timings, comm, rank, o.timeout_s);
  if (o.direct_convolutions) pool_over_ranks(direct_timings, comm, rank, o.timeout_s);
  if (o.winograd_convolutions) pool_over_ranks(winograd_timings, comm, rank, o.timeout_s);
  if (rank != 0) return;
  // Direct and Winograd convolutions: the median time of each shape and phase, as the GEMM grid's.
  const auto conv_grid = [](const std::vector<BatchTimings>& kept, KernelClass kernel,
                            std::map<std::string, double>& rates) {
    std::map<std::string, std::pair<GemmShape, std::vector<double>>> conv_seconds;
    for (const BatchTimings& t : kept)
      for (const auto& [label, entry] : t.ops) {
        const auto& [op, seconds] = entry;
        if (op.kernel != kernel) continue;
        auto& pooled =
            conv_seconds.try_emplace(gemm_key(op.gemm, op.phase), op.gemm, std::vector<double>{}).first->second;
        pooled.second.insert(pooled.second.end(), seconds.begin(), seconds.end());
      }
    for (const auto& [key, entry] : conv_seconds)
      rates[key] = entry.first.flops() / std::max(median(entry.second), 1e-9);
    return int(conv_seconds.size());
  };
  summary.conv_points = conv_grid(direct_timings, KernelClass::conv, platform.measured_conv_flops);
  summary.winograd_points = conv_grid(winograd_timings, KernelClass::winograd, platform.measured_winograd_flops);
  for (std::size_t i = 0; i < summary.batches.size(); ++i) {
    const BatchTimings& t = timings[i];
    const bool largest = i + 1 == summary.batches.size();
    for (const auto& [label, entry] : t.ops) {
      const auto& [op, seconds] = entry;
      const RobustSummary s = robust_summary(seconds);
      if (op.kernel == KernelClass::gemm) {
        auto& pooled = gemm_seconds.try_emplace(gemm_key(op.gemm, op.phase), op.gemm, std::vector<double>{}).first->second;
        pooled.second.insert(pooled.second.end(), seconds.begin(), seconds.end());
        summary.gemm_outliers += s.outliers;
      } else {
        memory_samples.push_back(KernelSample{op.kernel, op.flops, op.bytes, s.median});
        summary.op_outliers += s.outliers;
      }
      if (largest) largest_ops.emplace_back(op, s.median);
      if (largest && o.op_seconds) platform.measured_op_s[label] = s.median;
    }
    if (!t.outside_ops_s.empty()) outside_ops_s.emplace_back(double(summary.batches[i]), median(t.outside_ops_s));
    if (largest) largest_iteration_s = median(t.iteration_s);
    say(o, fmt::format("compute: per-rank batch {:>5}: iteration {:.4f} s ({:.4f} s outside ops), median of {}",
                       summary.batches[i], median(t.iteration_s), median(t.outside_ops_s), t.iteration_s.size()));
  }
  // GEMM grid: the median time of each shape and phase (fc layers of equal shape pool theirs).
  std::vector<double> rates;
  for (const auto& [key, entry] : gemm_seconds) {
    const double rate = entry.first.flops() / std::max(median(entry.second), 1e-9);
    platform.measured_gemm_flops[key] = rate;
    rates.push_back(rate);
  }
  summary.gemm_points = int(gemm_seconds.size());
  // A GEMM the grid cannot price (a phase it has no points of, a device-less roofline) gets
  // the typical measured efficiency.
  if (!rates.empty())
    platform.nodes.efficiency[KernelClass::gemm] = std::clamp(median(rates) / platform.nodes.peak_flops, 1e-6, 1.0);
  platform.resolve_gemm_grid();

  summary.memory_points = int(memory_samples.size());
  if (memory_samples.size() >= 2) {
    const RooflineFit fit = fit_roofline(memory_samples, platform.nodes.peak_flops);
    summary.memory = fit.memory;
    platform.nodes.memory_bandwidth_Bps = fit.memory.bandwidth_Bps;
    platform.nodes.kernel_memory_bandwidth_Bps = fit.kernel_bandwidth_Bps;
    platform.nodes.call_overhead_s = fit.memory.overhead_s;
    // Every roofline-priced class gets an efficiency: the fitted one, else 1 (memory-bound), as the
    // fit assumed; never the base platform's guess.
    for (KernelClass kernel : kKernelClasses) {
      if (kernel == KernelClass::gemm || kernel == KernelClass::conv || kernel == KernelClass::winograd)
        continue;  // their grids price them
      const auto found = fit.efficiency.find(kernel);
      platform.nodes.efficiency[kernel] = found == fit.efficiency.end() ? 1.0 : found->second;
    }
  }
  // Time an iteration spends outside its ops: the loop itself, and loading the batch.
  if (!outside_ops_s.empty()) {
    const InputTimeFit input = fit_input_time(outside_ops_s);
    platform.iteration_overhead_s = input.overhead_s;
    platform.input_per_image_s = input.per_image_s;
  }

  summary.measured_iteration_s = largest_iteration_s;
  Platform check = platform;
  check.measured_op_s.clear();  // the model as it prices other batches
  double modelled = iteration_overhead_s(check, summary.batches.back());
  for (const auto& [op, seconds] : largest_ops) {
    const double model_s = op_time_s(check, op, 0);
    modelled += model_s;
    auto& per_class = summary.per_class_s[to_string(op.kernel)];
    per_class.first += seconds;
    per_class.second += model_s;
  }
  summary.modelled_iteration_s = modelled;
}

}  // namespace cnnpar::real::calibration
