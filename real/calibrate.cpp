#include "real/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "system/collective.hpp"
#include "system/collective_algorithm.hpp"
#include "base/error.hpp"
#include "system/gemm_rate.hpp"
#include "base/output_files.hpp"
#include "system/op_time.hpp"
#include "model/schedule.hpp"
#include "workload/strategy.hpp"
#include "real/clock_sync.hpp"
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

/** Tests `request` without sleeping until it completes, yielding the core between tests as the
 *  interpreter's waits do: with more ranks than cores a spinning rank would hold the core its
 *  peer needs for a time slice (milliseconds per message). */
void spin_wait(mpi::Request& request, double timeout_s, const char* what) {
  mpi::wait_with_timeout(request, timeout_s, what, std::chrono::microseconds(0), [] { std::this_thread::yield(); });
}

/** Barrier that spins, so every rank leaves it at once. */
void tight_barrier(MPI_Comm comm, double timeout_s) {
  mpi::Request request;
  CNNPAR_MPI(MPI_Ibarrier(comm, request.out()));
  spin_wait(request, timeout_s, "calibration barrier");
}

// ---------------------------------------------------------------------------------------------
// Compute

/** Timings of one run of the one-rank schedule at one per-rank batch. */
struct BatchTimings {
  std::map<std::string, std::pair<Op, std::vector<double>>> ops;  ///< by label: op, seconds per measured iteration
  std::vector<double> iteration_s;                              ///< mark to mark, measured iterations
  std::vector<double> outside_ops_s;                            ///< iteration minus its ops
};

/** The network's one-rank dp schedule at `batch` images as cnnpar-run builds it (same
 *  strategy defaults): one warm-up iteration (caches, allocations), one timed. */
Schedule one_rank_schedule(const Network& network, const Platform& base, std::int64_t batch, const CalibrateOptions& o) {
  StrategyOptions strategy;
  strategy.name = "dp";
  strategy.global_batch = batch;
  strategy.ranks = 1;
  strategy.iterations = 2;
  strategy.warmup_iterations = 1;
  strategy.recompute_columns = kExecutorRecomputesColumns;  // the executor's default schedule
  strategy.origin = o.origin;
  Schedule schedule = build_schedule(network, base, strategy);
  verify_or_throw(schedule, "<calibration schedule>");
  return schedule;
}

/** Runs `schedule` (one rank) on `runtime` with the real kernels, timing every compute op of
 *  its measured iterations. */
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
    }
  }
  runtime.finish_schedule();
  return out;
}

BatchTimings time_batch(const Network& network, const Platform& base, std::int64_t batch, const CalibrateOptions& o) {
  const Schedule schedule = one_rank_schedule(network, base, batch, o);
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

/** Every rank times the kernels at once (so ranks sharing a host contend as in a run); rank 0
 *  fits the pooled samples into `platform`. */
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
  for (int pass = 0; pass < o.repeats; ++pass) {
    const double start = now_s();
    for (std::size_t step = 0; step < summary.batches.size(); ++step) {
      const std::size_t i = pass % 2 == 0 ? step : summary.batches.size() - 1 - step;
      tight_barrier(comm, std::max(o.timeout_s, 3600.0));  // the ranks time each batch together
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
  pool_over_ranks(timings, comm, rank, o.timeout_s);
  if (rank != 0) return;
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
    // Every non-GEMM class gets an efficiency: the fitted one, else 1 (memory-bound), as the
    // fit assumed; never the base platform's guess.
    for (KernelClass kernel : {KernelClass::im2col, KernelClass::col2im, KernelClass::pool, KernelClass::eltwise,
                               KernelClass::lrn, KernelClass::softmax, KernelClass::update, KernelClass::other}) {
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

// ---------------------------------------------------------------------------------------------
// Network

constexpr int kPingTag = 7101;

/** Where a measured collective runs: the executor's communicators, in the calibration's
 *  collectives mode. */
struct Exchange {
  const Communicators& comms;
  CollectiveMode mode;
  const Platform& platform;  ///< p2p: the algorithm rule (resolve_algorithm), as in the run
  int rank;
  int tag_upper_bound;
  double timeout_s;
  /** Seconds between two tests of a request in flight: the poll interval with a communication
   *  thread (it sleeps that long between its progress calls, so in a run every step of a
   *  collective waits for the thread's next call), 0 when polling (a waiting rank tests
   *  without pause, yielding the core). */
  double test_interval_s;
};

/** Tests with `done` until it is true, `x.test_interval_s` apart (else yielding): how the run
 *  to be predicted drives a request in flight. */
template <class Done>
void drive(const Done& done, const Exchange& x, double start, const std::string& what) {
  while (!done()) {
    if (MPI_Wtime() - start > x.timeout_s)
      throw mpi::TimeoutError(fmt::format("rank {}: calibration {} did not complete within {:.0f} s", x.rank, what, x.timeout_s));
    if (x.test_interval_s > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(x.test_interval_s));
    } else {
      std::this_thread::yield();
    }
  }
}

// A message-factor piece spans the measured sizes its chord predicts within 3 %. At 10 % a
// 1 Gbit/s testbed link came out 8 % fast at 16 MiB (one piece from 32 KiB on, bent by the
// token bucket's head start), and a large gradient's allreduce is most of a dp iteration;
// small sizes then take more pieces, which costs nothing.
constexpr double kFactorTolerance = 0.03;
// A kind's size factors start where the transfer is at least this share of a collective's priced time.
constexpr double kKindFactorTransferShare = 0.5;
constexpr int kRounds = 3;
constexpr int kWarmUpCalls = 50;
// From this size on, a collective is timed in a chain of back-to-back repeats, as a run posts
// its gradients, and priced by the chain's mean: on a link whose transfers stall now and then
// (the testbed under bbr: chained 8 MiB allreduces at 100 Mbit/s 0.70 s at best, 0.85-0.93 s in
// some calls), barrier-separated repeats kept a median at the floor that runs do not.
constexpr double kChainFromBytes = 1024.0 * 1024;
// A chain lasts at least this long when the extrapolated transfer allows, within kMaxChainCalls.
constexpr double kChainTarget_s = 2;
constexpr int kMaxChainCalls = 20;

/** Repeats of one size: small messages are cheap and noisy, so they get more. */
int repeats_for(double bytes, int repeats) {
  if (bytes <= 64.0 * 1024) return std::max(repeats, 21);
  if (bytes <= 4.0 * 1024 * 1024) return std::max(repeats, 9);
  return std::max(repeats, 5);
}

/** This rank's buffers of `c` in `a` and `b` (CommBuffers conventions; zero counts off the
 *  group), the ones the executor would post: allreduce and bcast in place. */
CommBuffers buffers_for(const Collective& c, int rank, std::vector<float>& a, std::vector<float>& b) {
  const CollectiveCounts counts = collective_counts(c, rank);
  CNNPAR_ASSERT(std::size_t(counts.send) <= a.size() && std::size_t(counts.recv) <= b.size(),
                "calibration buffers hold the largest message");
  const bool in_place = c.kind == CollectiveKind::allreduce || c.kind == CollectiveKind::bcast;
  return CommBuffers{a.data(), in_place ? a.data() : b.data(), counts.send, counts.recv};
}

/** Seconds of one `c` on this rank, run as the executor runs it (RunningCollective, driven as
 *  the run's progress mode drives it); a `send` is a ping-pong between ranks 0 and 1, one way =
 *  half the round trip (ranks beyond them: 0). */
/** Seconds of a round trip between ranks 0 and 1 (called on those two only): rank 0 sends
 *  `out_count` floats from `send`, rank 1 receives them into `recv` and answers with
 *  `back_count` floats from `send`, each leg driven as the run drives a request. */
double ping_pong(const float* send, float* recv, int out_count, int back_count, const Exchange& x, const std::string& what) {
  const double start = MPI_Wtime();
  const int peer = 1 - x.rank;
  for (int leg = 0; leg < 2; ++leg) {
    const int count = leg == 0 ? out_count : back_count;
    mpi::Request request;
    if ((leg == 0) == (x.rank == 0))
      CNNPAR_MPI(MPI_Isend(send, count, MPI_FLOAT, peer, kPingTag, x.comms.point_to_point(), request.out()));
    else
      CNNPAR_MPI(MPI_Irecv(recv, count, MPI_FLOAT, peer, kPingTag, x.comms.point_to_point(), request.out()));
    drive([&] { return request.test(); }, x, start, what);
  }
  return MPI_Wtime() - start;
}

double run_one(const Collective& c, const CommBuffers& buffers, const Exchange& x) {
  const double start = MPI_Wtime();
  const std::string what = fmt::format("{} of {:.0f} B", to_string(c.kind), c.bytes);
  if (c.kind == CollectiveKind::send) {
    if (x.rank > 1) return 0;
    const int count = int(std::max(buffers.send_count, buffers.recv_count));
    return 0.5 * ping_pong(buffers.send, buffers.recv, count, count, x, what);
  }
  RunningCollective running(c, buffers, x.comms, x.rank, x.mode, &x.platform, x.tag_upper_bound);
  drive([&] { return running.test(); }, x, start, what);
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

/** The critical member's steps of `c` (the ones both engines' pricing follows). */
CollectivePlan priced_plan(const Collective& c, const Platform& platform) {
  return plan_collective(c, resolve_algorithm(c, platform), critical_member(c));
}

/** Seconds the engines' step pricing gives `c` on `platform` (steps_time_s, with the kind's
 *  size factor). */
double priced_s(const Collective& c, const Platform& platform) {
  return steps_time_s(priced_plan(c, platform), platform.network, step_size_factor(c, platform.network));
}

// Draining a link's token bucket sends this many times its depth: tbf counts headers too.
constexpr double kDrainMargin = 1.1;
constexpr int kDrainTag = 7102;

/** Empties every node link's token bucket (network.link_burst): each rank sends `bytes` to the
 *  next in a ring and receives as many from the previous one, so the measurement that follows
 *  starts at the link's rate, as the engines' collective pricing assumes (they add the burst
 *  a run's idle links hold, system/link_bucket.hpp). Without it the barrier-separated repeats
 *  of mid sizes on a 1 Gbit/s testbed link came out 9-15 % faster than its rate, and pings
 *  of 128-512 KiB a third. */
void drain_buckets(const Exchange& x, int rank, int size, std::vector<float>& out, std::vector<float>& in) {
  const int count = int(out.size());
  const double start = MPI_Wtime();
  mpi::Request send, receive;
  CNNPAR_MPI(MPI_Irecv(in.data(), count, MPI_FLOAT, (rank + size - 1) % size, kDrainTag, x.comms.point_to_point(), receive.out()));
  CNNPAR_MPI(MPI_Isend(out.data(), count, MPI_FLOAT, (rank + 1) % size, kDrainTag, x.comms.point_to_point(), send.out()));
  drive([&] { return receive.test() && send.test(); }, x, start, "bucket drain");
}

void calibrate_network(const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int rank, int size,
                       Platform& platform, std::vector<CollectiveCurve>& curves, std::string& network_note) {
  std::vector<double> sizes;
  for (double bytes = o.min_message_bytes; bytes < o.max_message_bytes; bytes *= 2) sizes.push_back(bytes);
  sizes.push_back(o.max_message_bytes);
  // Room for the largest message and a reduce_scatter's padding to P blocks.
  const std::size_t floats = std::size_t(o.max_message_bytes / 4) + 1 + std::size_t(size);
  std::vector<float> a(floats, 1.0f), b(floats, 0.0f);
  const std::size_t drain_floats = std::size_t(std::ceil(kDrainMargin * platform.network.link_burst_bytes / 4));
  std::vector<float> drain_out(drain_floats, 1.0f), drain_in(drain_floats, 0.0f);
  const auto barrier = [&] {
    tight_barrier(comm, o.timeout_s);
    if (drain_floats == 0) return;
    drain_buckets(x, rank, size, drain_out, drain_in);
    tight_barrier(comm, o.timeout_s);  // every rank has received its drain: no link still carries one
  };
  const CollectiveKind kinds[] = {CollectiveKind::send, CollectiveKind::allreduce, CollectiveKind::allgather,
                                  CollectiveKind::reduce_scatter, CollectiveKind::bcast};
  for (CollectiveKind kind : kinds) {
    CollectiveCurve curve;
    curve.kind = to_string(kind);
    const double start = now_s();
    // Wake the transport up (connections, a rank that slept through the compute timing): the
    // first size measured came out 10 times slower than the next without this.
    {
      const Collective first = measured_collective(kind, sizes.front(), size);
      const CommBuffers buffers = buffers_for(first, rank, a, b);
      for (int i = 0; i < kWarmUpCalls; ++i) run_one(first, buffers, x);
    }
    std::vector<std::pair<double, double>> measured;  // (bytes, fit seconds) so far; equal on every rank
    for (double bytes : sizes) {
      // The gathered result is P contributions: keep it within the largest message.
      if (kind == CollectiveKind::allgather && bytes * size > o.max_message_bytes) break;
      if (kind == CollectiveKind::reduce_scatter && bytes < 4.0 * size) continue;
      // One transfer at this size as the smaller sizes predict it (0 = none measured yet).
      const double predicted_s = measured.empty() ? 0 : extrapolated_transfer_s(measured, bytes);
      if (!o.max_message_given && !measured.empty()) {
        if (predicted_s > o.max_transfer_s) {
          curve.stopped = fmt::format("{:.0f} B and beyond skipped: one transfer predicted {:.2f} s > {:g} s (give "
                                      "--max-message to measure them)",
                                      bytes, predicted_s, o.max_transfer_s);
          break;
        }
      }
      const Collective c = measured_collective(kind, bytes, size);
      const CommBuffers buffers = buffers_for(c, rank, a, b);
      run_one(c, buffers, x);  // warm-up: registration, protocol set-up
      const bool chained = bytes >= kChainFromBytes;
      const int repeats =
          chained ? chain_calls(predicted_s, repeats_for(bytes, o.repeats), kChainTarget_s, kMaxChainCalls)
                  : repeats_for(bytes, o.repeats);
      // On a loaded machine a rank descheduled for a time slice (milliseconds) can spoil most
      // repeats of a microsecond message: up to kRounds rounds, the calmest one (smallest
      // median) kept - noise only adds time. A chained size outlasts a time slice: one round.
      const int rounds = chained ? 1 : kRounds;
      RobustSummary best;
      std::vector<double> best_slowest;
      for (int round = 0; round < rounds; ++round) {
        std::vector<double> mine(static_cast<std::size_t>(repeats)), slowest(static_cast<std::size_t>(repeats));
        if (chained) barrier();
        for (int i = 0; i < repeats; ++i) {
          if (!chained) barrier();
          mine[std::size_t(i)] = run_one(c, buffers, x);
        }
        mpi::allreduce(mine.data(), slowest.data(), repeats, MPI_DOUBLE, MPI_MAX, comm, o.timeout_s,
                       "calibration (collective times)");
        const RobustSummary summary = robust_summary(slowest);
        if (round == 0 || summary.median < best.median) {
          best = summary;
          best_slowest = std::move(slowest);
        }
      }
      const double fit_s =
          chained ? std::accumulate(best_slowest.begin(), best_slowest.end(), 0.0) / double(best_slowest.size())
                  : best.median;
      curve.points.push_back(CollectivePoint{bytes, best, fit_s, chained, 0});
      measured.emplace_back(bytes, fit_s);
    }
    say(o, fmt::format("network: {:<14} {} sizes {:.0f} B .. {:.0f} B, {:.1f} s{}", curve.kind, curve.points.size(),
                       curve.points.front().bytes, curve.points.back().bytes, now_s() - start,
                       curve.stopped.empty() ? "" : "; " + curve.stopped));
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
      const CollectivePlan plan = priced_plan(c, platform);
      if (plan.steps.empty()) continue;
      Priced p{&point, 0, double(plan.steps.size()), 0};
      for (const CollectiveStep& step : plan.steps) {
        p.step_bytes += step_message_bytes(step) / p.steps;
        if (step.reduce) p.reduce_bytes += step.receive_bytes;
      }
      priced.push_back(p);
      if (p.reduce_bytes > 0) continue;
      const double per_step_s = point.fit_s / p.steps;
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
                            p.point->fit_s - p.steps * platform.network.message_time_s(p.step_bytes));
    platform.network.reduction_rate_Bps = 0;
    if (excess.size() >= 2) {
      const Line line = theil_sen(excess);
      if (line.slope > 0) platform.network.reduction_rate_Bps = 1.0 / line.slope;
    }
    // What the one link model leaves per kind (at 10 Gbit/s on 4 ranks it priced allgather
    // 21-32 % fast and send 6-20 % slow): each kind's own size factors.
    std::map<std::string, std::vector<KindSizeFactor>> kind_factors;
    for (const CollectiveCurve& curve : curves) {
      std::vector<KindSample> samples;
      for (const CollectivePoint& point : curve.points) {
        const Collective c = measured_collective(collective_kind_from_string(curve.kind), point.bytes, size);
        const CollectivePlan plan = priced_plan(c, platform);
        KindSample sample{point.bytes, point.fit_s, steps_time_s(plan, platform.network), 0};
        for (const CollectiveStep& step : plan.steps)
          sample.transfer_s += platform.network.transfer_time_s(step_message_bytes(step));
        samples.push_back(sample);
      }
      std::vector<KindSizeFactor> points = fit_kind_size_factors(samples, kKindFactorTransferShare);
      if (!points.empty()) kind_factors[curve.kind] = std::move(points);
    }
    platform.network.kind_size_factors = std::move(kind_factors);
  } catch (const std::invalid_argument& error) {
    // Curves too flat or too noisy to fit (a tiny --max-message on a loaded machine): the
    // base platform's network stays, and the report says why.
    network_note = error.what();
  }
  for (CollectiveCurve& curve : curves)
    for (CollectivePoint& point : curve.points)
      point.modelled_s = priced_s(measured_collective(collective_kind_from_string(curve.kind), point.bytes, size), platform);
}

// A burst probe sends this share of the bucket: with TCP/IP headers it still fits (tbf counts
// them: goodput is 0.956 of the rate).
constexpr double kBurstProbeShare = 0.75;
constexpr int kBurstProbeRepeats = 9;
// Between probes the link idles this many times the bucket's refill time, within the bounds
// (long enough to refill, shorter than TCP's idle restart of 200 ms where the rate allows).
constexpr double kBurstRefillMargin = 2;
constexpr double kMinBurstIdle_s = 0.02, kMaxBurstIdle_s = 1.0;

/** The rate a token bucket's bytes pass at (network.link_peak_bandwidth) on a link shaped with
 *  network.link_burst: ranks 0 and 1 idle until their buckets refill, then rank 0 sends
 *  kBurstProbeShare of the bucket and rank 1 answers with one float; the round trip less two
 *  latencies is the burst. The median over kBurstProbeRepeats; never below the link's
 *  bandwidth (a shaper slower than its path has no burst to speak of). Rank 0's fit. */
void calibrate_burst(const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int rank, Platform& platform,
                     std::string& note) {
  NetworkSpec& net = platform.network;
  double idle_s = std::clamp(kBurstRefillMargin * net.link_burst_bytes / net.bandwidth_Bps, kMinBurstIdle_s, kMaxBurstIdle_s);
  mpi::bcast(&idle_s, 1, MPI_DOUBLE, 0, comm, o.timeout_s, "calibration (burst idle)");  // rank 0 has the fit
  const int count = std::max(1, int(kBurstProbeShare * net.link_burst_bytes / 4));
  std::vector<float> message(std::size_t(count), 1.0f);
  std::vector<double> round_trips;
  const double start = now_s();
  for (int i = 0; i < kBurstProbeRepeats; ++i) {
    tight_barrier(comm, o.timeout_s);
    std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
    if (rank > 1) continue;
    round_trips.push_back(ping_pong(message.data(), message.data(), count, 1, x, "burst probe"));
  }
  if (rank != 0) return;
  const double burst_s = median(round_trips) - 2 * net.message_time_s(0);
  const double burst_bytes = 4.0 * count;
  if (!(burst_s > 0)) {
    note = fmt::format("burst probe: {:.0f} B took {:.1f} us, within two latencies: link_peak_bandwidth left at {}",
                       burst_bytes, 1e6 * median(round_trips), net.link_peak_bandwidth_Bps);
    return;
  }
  net.link_peak_bandwidth_Bps = std::max(burst_bytes / burst_s, net.bandwidth_Bps);
  say(o, fmt::format("network: burst          {:.0f} B after {:.0f} ms idle: {:.3f} ms, {:.1f} MB/s (link {:.1f} MB/s), {:.1f} s",
                     burst_bytes, 1e3 * idle_s, 1e3 * median(round_trips), 1e-6 * burst_bytes / burst_s,
                     1e-6 * net.bandwidth_Bps, now_s() - start));
}

// ---------------------------------------------------------------------------------------------
// Progress

// The slowdown probe computes for about this long under its chain of collectives.
constexpr double kSlowdownProbe_s = 0.5;
// The chain outlasts that compute by this factor at full speed (a busy fraction below 1 only
// lengthens it), so every op of the probe runs while a collective progresses.
constexpr double kChainMargin = 1.5;
constexpr int kMaxChain = 1000;
// The fraction probe computes for this many times the collective's time alone, so a fraction
// down to 1/8 still completes under compute, but for at most kMaxFractionProbe_s.
constexpr double kFractionCover = 8;
constexpr double kMaxFractionProbe_s = 5;

/** The compute side of the progress probes: each compute op runs on the real kernels of
 *  `runtime` or, without one, sleeps its modelled time on `platform` (a --compute sleep run),
 *  polling as the run's backends do. Every probe collective gets the same buffers: the
 *  communication engine runs them one at a time and their contents do not matter. */
class ProbeBackend final : public ComputeBackend {
 public:
  ProbeBackend(Runtime* runtime, const Platform& platform, int rank, double slice_s, const Collective& probe)
      : runtime_(runtime), sleeper_(platform, rank, slice_s), buffers_(sleeper_.prepare(probe)) {}
  std::string mode() const override { return runtime_ ? "real" : "sleep"; }
  void begin_iteration(int) override {}
  void run_compute(const Op& op, int iteration, const std::function<void()>& poll) override {
    if (runtime_) {
      runtime_->run_compute(op, 0, poll);  // the ops of the warmed-up iteration 0
    } else {
      sleeper_.run_compute(op, iteration, poll);
    }
  }
  CommBuffers prepare(const Collective&) override { return buffers_; }
  void complete(const Collective&) override {}

 private:
  Runtime* runtime_;
  SleepBackend sleeper_;
  CommBuffers buffers_;
};

/** Every rank's program: post `chain` copies of `probe`, run `passes` passes of `ops`, wait
 *  for the collectives, mark. */
Schedule probe_schedule(int ranks, const Collective& probe, int chain, const std::vector<Op>& ops, int passes) {
  Schedule s;
  s.strategy = "calibration probe";
  s.iterations = 1;
  std::vector<Op> program;
  for (int i = 0; i < chain; ++i) program.push_back(Op::post_op(s.add_collective(probe)));
  for (int pass = 0; pass < passes; ++pass) program.insert(program.end(), ops.begin(), ops.end());
  for (int i = 0; i < chain; ++i) program.push_back(Op::wait_op(i));
  program.push_back(Op::mark_op(0));
  const OpList shared(std::move(program));
  for (int r = 0; r < ranks; ++r) s.programs.push_back(Program{r, shared, {}});
  return s;
}

double duration_s(const ComputeRecord& r) { return r.end_s - r.start_s; }

/** The progress part (every rank at once): comm_compute_slowdown and
 *  network.busy_bandwidth_fraction of the calibration's progress mode, into `platform` on
 *  rank 0. Each repeat runs, through the executor's Interpreter, (1) one pass of the
 *  network's backward ops alone, (2) the probe allreduce alone, (3) a chain of probe
 *  allreduces outlasting about kSlowdownProbe_s of those ops: their time against (1) gives
 *  compute_slowdown, (4) one probe allreduce under kFractionCover times its time alone of
 *  those ops: its time against (2) gives busy_bandwidth_fraction, with the time any rank
 *  computed (ranks on a loaded machine drift apart; the engines slow a collective while any
 *  member computes); that allreduce's wait from its post to its start, with the passes
 *  holding the core, gives comm_start_wait_max. Times on the ranks' common clock. Throws
 *  std::invalid_argument when the network has nothing to probe with. */
void calibrate_progress(const Network& network, const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int size,
                        Platform& platform, ProgressSummary& summary) {
  const int rank = x.rank;
  // The compute ops: the backward pass of one rank at the run's per-rank batch (dp).
  summary.batch = std::max<std::int64_t>(1, o.batch / size);
  const Schedule schedule = one_rank_schedule(network, platform, summary.batch, o);
  std::vector<Op> ops;
  for (const Op& op : schedule.programs[0].ops) {
    if (op.kind == OpKind::mark) break;  // the first (warm-up) iteration's ops
    if (op.kind == OpKind::compute && (op.phase == Phase::backward_data || op.phase == Phase::backward_weight))
      ops.push_back(op);
  }
  // The probe: the network's largest gradient allreduce (what dp and dp_layerwise post).
  double bytes = 0;
  for (const Collective& c : schedule.collectives) bytes = std::max(bytes, c.bytes);
  bytes = std::min(bytes, o.max_message_bytes);
  if (ops.empty() || bytes <= 0) throw std::invalid_argument("the network has no backward ops or no gradients to probe with");
  Collective probe = measured_collective(CollectiveKind::allreduce, bytes, size);
  probe.label = "calibration progress probe";
  summary.collective_bytes = bytes;
  summary.compute_ops = ops.size();

  std::unique_ptr<Runtime> runtime;
  if (!o.sleep_compute) {
    SyntheticDataset data(network.input, network.classes(), 50000, o.seed);
    runtime = std::make_unique<Runtime>(network, schedule, 0, o.seed);
    runtime->set_gemm_tile_columns(o.gemm_tile_columns);
    run_timed(*runtime, schedule, data);  // activations and errors for the backward ops; warm caches
  }
  ProbeBackend backend(runtime.get(), platform, rank, std::max(o.poll_interval_s, 1e-6), probe);
  InterpreterOptions io;
  io.progress = o.progress_mode;
  io.poll_interval_s = o.poll_interval_s;
  io.collective_concurrency = 1;
  io.collectives = o.collectives;
  io.platform = &x.platform;
  io.timeout_s = std::max(o.timeout_s, 4 * kMaxFractionProbe_s);
  // One clock for all ranks: a collective starts when its last member posts it and runs slowed
  // while any member computes, so the probes read other ranks' times.
  SyncedClock clock;
  clock.synchronise(comm, 8, o.timeout_s);
  const auto latest = [&](double seconds) {  // the latest of every rank's `seconds`
    double out = 0;
    mpi::allreduce(&seconds, &out, 1, MPI_DOUBLE, MPI_MAX, comm, o.timeout_s, "calibration (progress probe times)");
    return out;
  };
  const auto run = [&](const Schedule& probe_program) {
    tight_barrier(comm, o.timeout_s);
    Interpreter interpreter(probe_program, rank, backend, x.comms, clock, io);
    return interpreter.run();
  };
  run(probe_schedule(size, probe, 1, ops, 1));  // warm-up: connections, the thread, the code paths
  const auto time_ops_alone = [&] {  // per op of one pass, seconds
    std::vector<double> seconds;
    for (const ComputeRecord& r : run(probe_schedule(size, probe, 0, ops, 1)).compute) seconds.push_back(duration_s(r));
    return seconds;
  };
  const auto time_collective_alone = [&] {  // from the last member's post to this rank's completion
    const CollectiveRecord lone = run(probe_schedule(size, probe, 1, {}, 0)).collectives.at(0);
    return lone.comm_end_s - latest(lone.comm_start_s);
  };

  std::vector<double> slowdowns, fractions, start_waits, passes_s, alone_s, busy_s;
  for (int repeat = 0; repeat < std::max(3, o.repeats); ++repeat) {
    const double start = now_s();
    // The alone sides bracket the busy ones, so load that other work puts on the machine during
    // the repeat biases neither side: compute alone before and after the chain (their mean),
    // the collective alone twice before and once after the covered probe (the calmest: a rank
    // descheduled by other work only adds time).
    std::vector<double> op_alone_s = time_ops_alone();
    double collective_alone_s = std::min(time_collective_alone(), time_collective_alone());
    // Every rank must run the same programs: size them from the slowest rank's times.
    double mine[2] = {0, collective_alone_s}, agreed[2] = {0, 0};
    for (double seconds : op_alone_s) mine[0] += seconds;
    mpi::allreduce(mine, agreed, 2, MPI_DOUBLE, MPI_MAX, comm, o.timeout_s, "calibration (progress probe sizes)");
    const double pass_s = std::max(agreed[0], 1e-6), collective_s = std::max(agreed[1], 1e-6);
    passes_s.push_back(mine[0]);

    // (3) compute while a chain of collectives progresses.
    const int slow_passes = std::max(1, int(std::ceil(kSlowdownProbe_s / pass_s)));
    summary.chain = std::clamp(int(std::ceil(kChainMargin * slow_passes * pass_s / collective_s)) + 1, 2, kMaxChain);
    const RankTrace chained = run(probe_schedule(size, probe, summary.chain, ops, slow_passes));
    double chain_end_s = 0;
    for (const CollectiveRecord& r : chained.collectives) chain_end_s = std::max(chain_end_s, r.comm_end_s);
    const std::vector<double> op_after_s = time_ops_alone();
    for (std::size_t k = 0; k < op_alone_s.size(); ++k) op_alone_s[k] = 0.5 * (op_alone_s[k] + op_after_s[k]);
    std::vector<double> alone, busy;  // the ops that ended while the chain progressed
    for (std::size_t k = 0; k < chained.compute.size() && chained.compute[k].end_s <= chain_end_s; ++k) {
      busy.push_back(duration_s(chained.compute[k]));
      alone.push_back(op_alone_s[k % op_alone_s.size()]);
    }
    if (!busy.empty()) slowdowns.push_back(compute_slowdown(alone, busy));

    // (4) one collective while the ops run (with the run's poll points).
    summary.passes = std::clamp(int(std::ceil(kFractionCover * collective_s / pass_s)), 1,
                                std::max(1, int(kMaxFractionProbe_s / pass_s)));
    const RankTrace covered = run(probe_schedule(size, probe, 1, ops, summary.passes));
    const CollectiveRecord& c = covered.collectives.at(0);
    // Posted to an idle thread right before the passes: how long it waited for a core.
    start_waits.push_back(c.comm_start_s - c.posted_s);
    double compute_end_s = 0;
    for (const ComputeRecord& r : covered.compute) compute_end_s = std::max(compute_end_s, r.end_s);
    // From the last member's post to this rank's completion, computing while any member did.
    const double start_s = latest(c.comm_start_s);
    const double computing_s = std::min(c.comm_end_s, latest(compute_end_s)) - start_s;
    collective_alone_s = std::min(collective_alone_s, time_collective_alone());
    alone_s.push_back(collective_alone_s);
    if (computing_s > 0) {
      busy_s.push_back(c.comm_end_s - start_s);
      fractions.push_back(busy_bandwidth_fraction(collective_alone_s, busy_s.back(), computing_s));
    }
    say(o, fmt::format("progress: repeat {}/{}: pass {:.4f} s, allreduce {:.0f} B alone {:.4f} s, under {} passes "
                       "{:.4f} s; {} chained allreduces under {} passes: {:.1f} s",
                       repeat + 1, std::max(3, o.repeats), mine[0], bytes, collective_alone_s, summary.passes,
                       c.comm_end_s - start_s, summary.chain, slow_passes, now_s() - start));
  }
  const auto gathered =
      mpi::gather_strings(nlohmann::json{{"s", slowdowns}, {"f", fractions}, {"w", start_waits}}.dump(), 0, comm,
                          o.timeout_s, "calibration (progress results)");
  if (rank != 0) return;
  std::vector<double> all_s, all_f, all_w;
  for (const std::string& text : gathered) {
    const nlohmann::json part = nlohmann::json::parse(text);
    for (const nlohmann::json& v : part.at("s")) all_s.push_back(v.get<double>());
    for (const nlohmann::json& v : part.at("f")) all_f.push_back(v.get<double>());
    for (const nlohmann::json& v : part.at("w")) all_w.push_back(v.get<double>());
  }
  if (all_s.empty() || all_f.empty())
    throw std::invalid_argument("no probe overlapped compute and communication");
  summary.pass_alone_s = median(passes_s);
  summary.collective_alone_s = median(alone_s);
  summary.collective_busy_s = busy_s.empty() ? 0 : median(busy_s);
  summary.slowdown = robust_summary(all_s);
  summary.fraction = robust_summary(all_f);
  summary.start_wait = robust_summary(all_w);
  platform.comm_compute_slowdown = std::clamp(summary.slowdown.median, 0.0, 100.0);
  platform.comm_start_wait_max_s = std::max(0.0, summary.start_wait.median);
  platform.network.busy_bandwidth_fraction = std::clamp(summary.fraction.median, kMinBusyFraction, 1.0);
}

/** Rank 0's `platform` on every rank (the sleeping probes price ops with it). */
void share_platform(Platform& platform, MPI_Comm comm, int rank, double timeout_s) {
  std::string text = rank == 0 ? to_json(platform).dump() : std::string();
  unsigned long long length = text.size();
  mpi::bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm, timeout_s, "calibration (platform)");
  text.resize(std::size_t(length));
  mpi::bcast(text.data(), int(length), MPI_CHAR, 0, comm, timeout_s, "calibration (platform)");
  if (rank != 0) platform = parse_platform(nlohmann::json::parse(text), "<calibrated platform of rank 0>");
}

}  // namespace

std::vector<std::int64_t> calibration_batches(std::int64_t batch) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 1; b < batch; b *= 2) out.push_back(b);
  out.push_back(std::max<std::int64_t>(1, batch));
  return out;
}

namespace {

/** `source` of the calibrated platform: how each measured part was measured, and the base
 *  platform (its own `source`) for the parts kept from it. */
std::string describe_source(const Network& network, const Platform& base, const CalibrateOptions& o, int size,
                            const CalibrationResult& result) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string date = utc_timestamp();
  const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::string text = fmt::format(
      "cnnpar calibrate on {} at {}, {} MPI ranks, {} comm progress, {} collectives, {} compute threads "
      "(OPENBLAS_NUM_THREADS={}); measured: {}",
      host, date, size, to_string(o.progress_mode), to_string(o.collectives), compute_threads(),
      threads ? threads : "default", to_string(result.measured).empty() ? "nothing" : to_string(result.measured));
  if (result.measured.compute) {
    const ComputeSummary& c = result.compute;
    text += fmt::format(
        "; compute (every rank at once, samples pooled over ranks): {} at per-rank batches {}..{} (global batch {}), "
        "GEMMs on {}, GEMM grid of {} points (median of {} repeats x {} ranks, {} outlying repeats); non-GEMM kernels "
        "t = {:.3g} s + bytes / {:.4g} B/s over {} ops ({} outlying)",
        network.name, c.batches.front(), c.batches.back(), o.batch, to_string(gemm_backend()), c.gemm_points,
        o.repeats, size, c.gemm_outliers, c.memory.overhead_s, c.memory.bandwidth_Bps, c.memory_points,
        c.memory.outliers);
  }
  if (result.measured.network) {
    int outliers = 0, repeats = 0;
    std::string ends;
    for (const CollectiveCurve& curve : result.collectives) {
      for (const CollectivePoint& point : curve.points) {
        outliers += point.measured_s.outliers;
        repeats += point.measured_s.count;
      }
      if (!curve.stopped.empty())
        ends += fmt::format("{}{} up to {:.0f} B", ends.empty() ? "" : ", ", curve.kind, curve.points.back().bytes);
    }
    text += fmt::format(
        "; network: send, allreduce, allgather, reduce_scatter and bcast over {} ranks, {:.0f} B .. {:.0f} B{}, "
        "median of isolated repeats below {:.0f} B, mean of back-to-back repeats from it ({} of {} repeats "
        "outlying), {}",
        size, o.min_message_bytes, o.max_message_bytes,
        ends.empty() ? "" : fmt::format(" ({}: larger sizes predicted beyond {:g} s per transfer)", ends, o.max_transfer_s),
        kChainFromBytes, outliers, repeats,
        result.network_note.empty()
            ? std::string("robust latency/bandwidth fit, piecewise message factors, reduction rate")
            : "not fitted, the base platform's network kept: " + result.network_note);
  }
  if (result.measured.progress && !result.progress_note.empty()) {
    text += "; progress: not fitted, the base platform's comm_compute_slowdown, busy_bandwidth_fraction and "
            "comm_start_wait_max kept: " +
            result.progress_note;
  } else if (result.measured.progress) {
    const ProgressSummary& p = result.progress;
    text += fmt::format(
        "; progress: {} backward ops at per-rank batch {} ({} compute) and a {:.0f} B allreduce, median of {} "
        "probes: compute under communication {:+.1f} % ({} outlying), communication under compute at {:.3f} of its "
        "speed (alone {:.4g} s, under compute {:.4g} s; {} outlying), its start {:.4g} s after its post ({} outlying)",
        p.compute_ops, p.batch, o.sleep_compute ? "sleep" : "real", p.collective_bytes, p.slowdown.count,
        100 * p.slowdown.median, p.slowdown.outliers, p.fraction.median, p.collective_alone_s, p.collective_busy_s,
        p.fraction.outliers, p.start_wait.median, p.start_wait.outliers);
  }
  const CalibrationParts& m = result.measured;
  const CalibrationParts kept{!m.compute, !m.network, !m.progress};
  if (!to_string(kept).empty())
    text += fmt::format("; kept from the base platform {}: {} (base source: {})", base.name, to_string(kept),
                        base.source.empty() ? "none" : base.source);
  else
    text += "; base platform: " + base.name;
  return text;
}

}  // namespace

CalibrationResult calibrate(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm) {
  int rank = 0, size = 1;
  CNNPAR_MPI(MPI_Comm_rank(comm, &rank));
  CNNPAR_MPI(MPI_Comm_size(comm, &size));
  CalibrationResult result;
  result.platform = base;
  result.measured = o.parts;
  result.measured.network = o.parts.network && size >= 2;
  result.measured.progress = o.parts.progress && size >= 2;

  if (o.parts.compute) {
    result.platform.measured_op_s.clear();
    result.platform.measured_gemm_flops.clear();
    calibrate_compute(network, base, o, comm, rank, result.platform, result.compute);
  }
  if (size < 2) {
    if (o.parts.network || o.parts.progress) say(o, "network and progress not measured: one rank");
  } else {
    // The executor's communicators over the ranks (every measured group is the world).
    Schedule world;
    for (int r = 0; r < size; ++r) world.programs.push_back(Program{r, {}, {}});
    const Communicators comms(world, rank);
    const Exchange x{comms, o.collectives, result.platform, rank, tag_upper_bound(), o.timeout_s,
                     o.progress_mode == ProgressMode::thread ? o.poll_interval_s : 0.0};
    if (o.parts.network) {
      calibrate_network(o, x, comm, rank, size, result.platform, result.collectives, result.network_note);
      // A shaped link's bucket (the testbed's tbf): how fast its burst passes.
      if (result.platform.network.link_burst_bytes > 0)
        calibrate_burst(o, x, comm, rank, result.platform, result.network_note);
    }
    if (o.parts.progress) {
      if (o.parts.compute && o.sleep_compute) share_platform(result.platform, comm, rank, o.timeout_s);
      try {
        calibrate_progress(network, o, x, comm, size, result.platform, result.progress);
      } catch (const std::invalid_argument& error) {
        // Nothing to probe with, or no probe overlapped: the base platform's values stay.
        result.progress_note = error.what();
      }
    }
  }
  // The ranks measured are nodes of the platform (a 4-rank calibration predicts 4 nodes); a
  // platform of node kinds or per-node speeds states its count by them and stays as it is.
  if (result.platform.nodes.kinds.empty() && result.platform.nodes.speed_factors.empty() &&
      result.platform.nodes.count < size) {
    result.platform.nodes.count = size;
    result.platform.resolve_speed_factors();
  }
  if (rank == 0) {
    result.platform.name = base.name.ends_with("-calibrated") ? base.name : base.name + "-calibrated";
    result.platform.source = describe_source(network, base, o, size, result);
  }
  return result;
}

}  // namespace cnnpar::real
