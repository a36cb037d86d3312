#include "real/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "model/collective.hpp"
#include "model/collective_algorithm.hpp"
#include "model/error.hpp"
#include "model/gemm_rate.hpp"
#include "model/op_time.hpp"
#include "model/schedule.hpp"
#include "model/strategies/strategy.hpp"
#include "real/dataset.hpp"
#include "real/kernels.hpp"
#include "real/mpi_wrap.hpp"
#include "real/runtime.hpp"

namespace cnnpar::real {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void say(const CalibrateOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

double median(std::vector<double> v) { return robust_summary(std::move(v)).median; }

// ---------------------------------------------------------------------------------------------
// Compute

/** Timings of one run of the one-rank schedule at one per-rank batch. */
struct BatchTimings {
  std::map<std::string, std::pair<Op, std::vector<double>>> ops;  ///< by label: op, seconds per measured iteration
  std::vector<double> iteration_s;                              ///< mark to mark, measured iterations
  std::vector<double> outside_ops_s;                            ///< iteration minus its ops
};

/** Runs the network's one-rank dp schedule at `batch` images with the real kernels, as
 *  cnnpar-run does (same strategy defaults), timing every compute op of one iteration after
 *  a warm-up one. */
BatchTimings time_batch(const Network& network, const Platform& base, std::int64_t batch, const CalibrateOptions& o) {
  StrategyOptions strategy;
  strategy.name = "dp";
  strategy.global_batch = batch;
  strategy.ranks = 1;
  strategy.iterations = 2;  // iteration 0 warms caches and allocations up; iteration 1 is timed
  strategy.warmup_iterations = 1;
  strategy.recompute_columns = kExecutorRecomputesColumns;  // the executor's default schedule
  strategy.origin = o.origin;
  const Schedule schedule = build_schedule(network, base, strategy);
  verify_or_throw(schedule, "<calibration schedule>");

  SyntheticDataset data(network.input, network.classes(), 50000, o.seed);
  Runtime runtime(network, schedule, 0, o.seed);
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
    }
  }
  runtime.finish_schedule();
  return out;
}

void calibrate_compute(const Network& network, const Platform& base, const CalibrateOptions& o, Platform& platform,
                       ComputeSummary& summary) {
  summary.batches = calibration_batches(o.batch);
  std::map<std::string, std::pair<GemmShape, std::vector<double>>> gemm_seconds;  // by grid key; pooled
  std::vector<KernelSample> memory_samples;                                       // medians of the non-GEMM ops
  std::vector<std::pair<Op, double>> largest_ops;                                 // at the largest batch
  std::vector<double> outside_ops_s;
  double largest_iteration_s = 0;
  // Repeats are passes over every batch (alternately up and down) rather than consecutive
  // iterations of one batch: a burst of load on a shared machine then spoils one repeat of
  // many points, which their medians ignore, instead of every repeat of a few points.
  std::vector<BatchTimings> timings(summary.batches.size());
  for (int pass = 0; pass < o.repeats; ++pass) {
    const double start = now_s();
    for (std::size_t step = 0; step < summary.batches.size(); ++step) {
      const std::size_t i = pass % 2 == 0 ? step : summary.batches.size() - 1 - step;
      BatchTimings t = time_batch(network, base, summary.batches[i], o);
      BatchTimings& all = timings[i];
      for (auto& [label, entry] : t.ops) {
        auto& kept = all.ops.try_emplace(label, entry.first, std::vector<double>{}).first->second;
        kept.second.insert(kept.second.end(), entry.second.begin(), entry.second.end());
      }
      all.iteration_s.insert(all.iteration_s.end(), t.iteration_s.begin(), t.iteration_s.end());
      all.outside_ops_s.insert(all.outside_ops_s.end(), t.outside_ops_s.begin(), t.outside_ops_s.end());
    }
    say(o, fmt::format("compute: pass {}/{} over per-rank batches {}..{}: {:.1f} s", pass + 1, o.repeats,
                       summary.batches.front(), summary.batches.back(), now_s() - start));
  }
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
    outside_ops_s.insert(outside_ops_s.end(), t.outside_ops_s.begin(), t.outside_ops_s.end());
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
    platform.nodes.call_overhead_s = fit.memory.overhead_s;
    // Every non-GEMM class gets an efficiency: the fitted one, else 1 (memory-bound), as the
    // fit assumed; never the base platform's guess.
    for (KernelClass kernel : {KernelClass::im2col, KernelClass::col2im, KernelClass::pool, KernelClass::eltwise,
                               KernelClass::lrn, KernelClass::softmax, KernelClass::update, KernelClass::other}) {
      const auto found = fit.efficiency.find(kernel);
      platform.nodes.efficiency[kernel] = found == fit.efficiency.end() ? 1.0 : found->second;
    }
  }
  // Time an iteration spends outside its ops (loading the batch, the loop itself).
  if (!outside_ops_s.empty()) platform.iteration_overhead_s = std::max(0.0, median(outside_ops_s));

  summary.measured_iteration_s = largest_iteration_s;
  Platform check = platform;
  check.measured_op_s.clear();  // the model as it prices other batches
  double modelled = check.iteration_overhead_s;
  for (const auto& [op, seconds] : largest_ops) {
    const double model_s = op_time_s(check, op, 0);
    modelled += model_s;
    auto& per_class = summary.per_class_s[to_string(op.kernel)];
    per_class.first += seconds;
    per_class.second += model_s;
  }
  summary.modelled_iteration_s = modelled;
}

// ---------------------------------------------------------------------------------------------
// Network

constexpr int kPingTag = 7101;

/** Barrier that spins (no sleeping between tests), so every rank leaves it at once. */
void tight_barrier(MPI_Comm comm, double timeout_s) {
  mpi::Request request;
  CNNPAR_MPI(MPI_Ibarrier(comm, request.out()));
  mpi::wait_with_timeout(request, timeout_s, "calibration barrier", std::chrono::microseconds(0));
}

void spin_wait(mpi::Request& request, double timeout_s, const char* what) {
  mpi::wait_with_timeout(request, timeout_s, what, std::chrono::microseconds(0));
}

// A message-factor piece spans the measured sizes its chord predicts within 10 %: the
// collectives' per-step times differ by more than that between kinds, so a tighter chord
// would follow their noise.
constexpr double kFactorTolerance = 0.10;
constexpr int kRounds = 3;
constexpr int kWarmUpCalls = 50;
constexpr double kRoundsUpToBytes = 4.0 * 1024 * 1024;

/** Repeats of one size: small messages are cheap and noisy, so they get more. */
int repeats_for(double bytes, int repeats) {
  if (bytes <= 64.0 * 1024) return std::max(repeats, 21);
  if (bytes <= 4.0 * 1024 * 1024) return std::max(repeats, 9);
  return std::max(repeats, 5);
}

/** One collective of `kind` over `comm` with `bytes` by the schedule's size convention. */
double run_one(CollectiveKind kind, double bytes, std::vector<float>& a, std::vector<float>& b, MPI_Comm comm,
               int rank, int size, double timeout_s) {
  const int count = std::max(1, int(bytes / 4));
  mpi::Request request;
  const double start = MPI_Wtime();
  switch (kind) {
    case CollectiveKind::send: {  // ping-pong between ranks 0 and 1: one way = half the round trip
      if (rank > 1) return 0;
      const int peer = 1 - rank;
      for (int leg = 0; leg < 2; ++leg) {
        if ((leg == 0) == (rank == 0))
          CNNPAR_MPI(MPI_Isend(a.data(), count, MPI_FLOAT, peer, kPingTag, comm, request.out()));
        else
          CNNPAR_MPI(MPI_Irecv(a.data(), count, MPI_FLOAT, peer, kPingTag, comm, request.out()));
        spin_wait(request, timeout_s, "calibration ping-pong");
      }
      return 0.5 * (MPI_Wtime() - start);
    }
    case CollectiveKind::allreduce:
      CNNPAR_MPI(MPI_Iallreduce(MPI_IN_PLACE, a.data(), count, MPI_FLOAT, MPI_SUM, comm, request.out()));
      break;
    case CollectiveKind::allgather:  // bytes = one member's contribution
      CNNPAR_MPI(MPI_Iallgather(a.data(), count, MPI_FLOAT, b.data(), count, MPI_FLOAT, comm, request.out()));
      break;
    case CollectiveKind::reduce_scatter:  // bytes = the whole vector, P blocks
      CNNPAR_MPI(MPI_Ireduce_scatter_block(a.data(), b.data(), std::max(1, count / size), MPI_FLOAT, MPI_SUM, comm,
                                           request.out()));
      break;
    case CollectiveKind::bcast:
      CNNPAR_MPI(MPI_Ibcast(a.data(), count, MPI_FLOAT, 0, comm, request.out()));
      break;
    default: CNNPAR_ASSERT(false, "calibration measures send, allreduce, allgather, reduce_scatter and bcast");
  }
  spin_wait(request, timeout_s, "calibration collective");
  return MPI_Wtime() - start;
}

/** The collective the engines would price for a measurement of `kind` at `bytes`. */
Collective measured_collective(CollectiveKind kind, double bytes, int size) {
  Collective c;
  c.id = 0;
  c.kind = kind;
  c.bytes = bytes;
  if (kind == CollectiveKind::send) {
    c.group = {0, 1};
    c.root = 0;
  } else {
    for (int r = 0; r < size; ++r) c.group.push_back(r);
    if (kind == CollectiveKind::bcast) c.root = 0;
  }
  return c;
}

/** Seconds the engines' step pricing gives `c` on `platform`: per step of the critical
 *  member, alpha·lf + n/(beta·bf) for its larger message n, plus the reduction of what it
 *  received when the step reduces and the platform has a reduction rate. */
double priced_s(const Collective& c, const Platform& platform) {
  const CollectivePlan plan = plan_collective(c, resolve_algorithm(c, platform), critical_member(c));
  double seconds = 0;
  for (const CollectiveStep& step : plan.steps) {
    seconds += platform.network.message_time_s(std::max(step.send_bytes, step.receive_bytes));
    if (step.reduce && platform.network.reduction_rate_Bps > 0)
      seconds += step.receive_bytes / platform.network.reduction_rate_Bps;
  }
  return seconds;
}

void calibrate_network(const CalibrateOptions& o, MPI_Comm comm, int rank, int size, Platform& platform,
                       std::vector<CollectiveCurve>& curves, std::string& network_note) {
  std::vector<double> sizes;
  for (double bytes = o.min_message_bytes; bytes < o.max_message_bytes; bytes *= 2) sizes.push_back(bytes);
  sizes.push_back(o.max_message_bytes);
  const std::size_t floats = std::size_t(o.max_message_bytes / 4) + 1;
  std::vector<float> a(floats, 1.0f), b(floats, 0.0f);
  const CollectiveKind kinds[] = {CollectiveKind::send, CollectiveKind::allreduce, CollectiveKind::allgather,
                                  CollectiveKind::reduce_scatter, CollectiveKind::bcast};
  for (CollectiveKind kind : kinds) {
    CollectiveCurve curve;
    curve.kind = to_string(kind);
    const double start = now_s();
    // Wake the transport up (connections, a rank that slept through the compute timing): the
    // first size measured came out 10 times slower than the next without this.
    for (int i = 0; i < kWarmUpCalls; ++i) run_one(kind, sizes.front(), a, b, comm, rank, size, o.timeout_s);
    for (double bytes : sizes) {
      // The gathered result is P contributions: keep it within the largest message.
      if (kind == CollectiveKind::allgather && bytes * size > o.max_message_bytes) break;
      if (kind == CollectiveKind::reduce_scatter && bytes < 4.0 * size) continue;
      const int repeats = repeats_for(bytes, o.repeats);
      run_one(kind, bytes, a, b, comm, rank, size, o.timeout_s);  // warm-up: registration, protocol set-up
      // On a loaded machine a rank descheduled for a time slice (milliseconds) can spoil most
      // repeats of a microsecond message: up to kRounds rounds, the calmest one (smallest
      // median) kept - noise only adds time. Large messages outlast a time slice: one round.
      const int rounds = bytes <= kRoundsUpToBytes ? kRounds : 1;
      RobustSummary best;
      for (int round = 0; round < rounds; ++round) {
        std::vector<double> mine(static_cast<std::size_t>(repeats)), slowest(static_cast<std::size_t>(repeats));
        for (int i = 0; i < repeats; ++i) {
          tight_barrier(comm, o.timeout_s);
          mine[std::size_t(i)] = run_one(kind, bytes, a, b, comm, rank, size, o.timeout_s);
        }
        mpi::allreduce(mine.data(), slowest.data(), repeats, MPI_DOUBLE, MPI_MAX, comm, o.timeout_s,
                       "calibration (collective times)");
        const RobustSummary summary = robust_summary(slowest);
        if (round == 0 || summary.median < best.median) best = summary;
      }
      curve.points.push_back(CollectivePoint{bytes, best, 0});
    }
    say(o, fmt::format("network: {:<14} {} sizes {:.0f} B .. {:.0f} B, {:.1f} s", curve.kind, curve.points.size(),
                       curve.points.front().bytes, curve.points.back().bytes, now_s() - start));
    curves.push_back(std::move(curve));
  }
  if (rank != 0) return;

  // Each measurement as the steps the engines price: k steps of (mean) size s take T/k each.
  // The kinds that reduce (allreduce, reduce_scatter) also add what they receive: they are
  // left out of the link fit and give the reduction rate below.
  struct Priced {
    const CollectivePoint* point;
    double step_bytes;     ///< mean over the steps of the larger message
    double steps;
    double reduce_bytes;   ///< received bytes of the reducing steps
  };
  std::vector<Priced> priced;
  std::vector<StepSample> steps;
  std::map<double, std::vector<double>> per_size;
  for (const CollectiveCurve& curve : curves)
    for (const CollectivePoint& point : curve.points) {
      const Collective c = measured_collective(collective_kind_from_string(curve.kind), point.bytes, size);
      const CollectivePlan plan = plan_collective(c, resolve_algorithm(c, platform), critical_member(c));
      if (plan.steps.empty()) continue;
      Priced p{&point, 0, double(plan.steps.size()), 0};
      for (const CollectiveStep& step : plan.steps) {
        p.step_bytes += std::max(step.send_bytes, step.receive_bytes) / p.steps;
        if (step.reduce) p.reduce_bytes += step.receive_bytes;
      }
      priced.push_back(p);
      if (p.reduce_bytes > 0) continue;
      const double per_step_s = point.measured_s.median / p.steps;
      steps.push_back(StepSample{p.step_bytes, per_step_s});
      per_size[p.step_bytes].push_back(per_step_s);
    }
  // Latency and bandwidth from the per-size medians over the kinds (robust to one odd kind).
  std::vector<std::pair<double, double>> link;
  for (const auto& [bytes, seconds] : per_size) link.emplace_back(bytes, median(seconds));
  try {
    const LinkFit fit = fit_link(link);
    platform.network.latency_s = fit.latency_s;
    platform.network.overhead_s = 0;
    platform.network.bandwidth_Bps = fit.bandwidth_Bps;
    platform.network.message_factors = fit_message_factors(steps, fit.latency_s, fit.bandwidth_Bps, kFactorTolerance);
    // Reduction rate: the Theil–Sen slope of what a reducing collective takes beyond its
    // messages against the bytes it reduces, over sizes where the arithmetic outweighs the
    // noise (>= kSmallMessageBytes reduced).
    std::vector<std::pair<double, double>> excess;
    for (const Priced& p : priced)
      if (p.reduce_bytes >= kSmallMessageBytes)
        excess.emplace_back(p.reduce_bytes,
                            p.point->measured_s.median - p.steps * platform.network.message_time_s(p.step_bytes));
    platform.network.reduction_rate_Bps = 0;
    if (excess.size() >= 2) {
      const Line line = theil_sen(excess);
      if (line.slope > 0) platform.network.reduction_rate_Bps = 1.0 / line.slope;
    }
  } catch (const std::invalid_argument& error) {
    // Curves too flat or too noisy to fit (a tiny --max-message on a loaded machine): the
    // base platform's network stays, and the report says why.
    network_note = error.what();
  }
  for (CollectiveCurve& curve : curves)
    for (CollectivePoint& point : curve.points)
      point.modelled_s = priced_s(measured_collective(collective_kind_from_string(curve.kind), point.bytes, size), platform);
}

}  // namespace

std::vector<std::int64_t> calibration_batches(std::int64_t batch) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 1; b < batch; b *= 2) out.push_back(b);
  out.push_back(std::max<std::int64_t>(1, batch));
  return out;
}

CalibrationResult calibrate(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm) {
  int rank = 0, size = 1;
  CNNPAR_MPI(MPI_Comm_rank(comm, &rank));
  CNNPAR_MPI(MPI_Comm_size(comm, &size));
  CalibrationResult result;
  result.platform = base;
  result.platform.measured_op_s.clear();
  result.platform.measured_gemm_flops.clear();

  if (rank == 0) calibrate_compute(network, base, o, result.platform, result.compute);
  // Other ranks idle here while rank 0 times kernels; the wait can be long on big networks.
  // They test the barrier every 20 ms only: a waiting rank that wakes every 50 us takes time
  // slices from rank 0's kernels on a small machine and makes them slower than in a run.
  {
    mpi::Request request;
    CNNPAR_MPI(MPI_Ibarrier(comm, request.out()));
    mpi::wait_with_timeout(request, std::max(o.timeout_s, 3600.0), "calibration (compute timing)",
                           rank == 0 ? std::chrono::microseconds(0) : std::chrono::microseconds(20000));
  }
  if (size >= 2) calibrate_network(o, comm, rank, size, result.platform, result.collectives, result.network_note);

  if (rank == 0) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::time_t now = std::time(nullptr);
    char date[32] = {};
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
    int outliers = 0, repeats = 0;
    for (const CollectiveCurve& curve : result.collectives)
      for (const CollectivePoint& point : curve.points) {
        outliers += point.measured_s.outliers;
        repeats += point.measured_s.count;
      }
    const ComputeSummary& c = result.compute;
    result.platform.name = base.name + "-calibrated";
    result.platform.source = fmt::format(
        "cnnpar calibrate on {} at {}: {} at per-rank batches {}..{} (global batch {}), GEMMs on {}, {} compute "
        "threads (OPENBLAS_NUM_THREADS={}), {} MPI ranks; GEMM grid of {} points (median of {} repeats, {} outlying "
        "repeats); non-GEMM kernels t = {:.3g} s + bytes / {:.4g} B/s over {} ops ({} outlying); {}; base platform: {}",
        host, date, network.name, c.batches.front(), c.batches.back(), o.batch, to_string(gemm_backend()),
        compute_threads(), threads ? threads : "default", size, c.gemm_points, o.repeats, c.gemm_outliers,
        c.memory.overhead_s, c.memory.bandwidth_Bps, c.memory_points, c.memory.outliers,
        size >= 2 ? fmt::format("network from send, allreduce, allgather, reduce_scatter and bcast over {} ranks, "
                                "{:.0f} B .. {:.0f} B, median of repeats ({} of {} repeats outlying), {}",
                                size, o.min_message_bytes, o.max_message_bytes, outliers, repeats,
                                result.network_note.empty()
                                    ? std::string("robust latency/bandwidth fit, piecewise message factors, reduction rate")
                                    : "not fitted, the base platform's network kept: " + result.network_note)
                  : std::string("network not measured (one rank)"),
        base.name);
  }
  return result;
}

}  // namespace cnnpar::real
