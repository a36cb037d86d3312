// The progress part of the calibration: the network's backward ops and its largest gradient
// allreduce, alone and together, give comm_compute_slowdown, busy_bandwidth_fraction and
// comm_start_wait_max in the run's progress mode.
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "real/calibrate_parts.hpp"
#include "real/clock_sync.hpp"
#include "real/dataset.hpp"
#include "real/mpi_wrap.hpp"
#include "real/runtime.hpp"

namespace cnnpar::real::calibration {
namespace {

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

}  // namespace

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

}  // namespace cnnpar::real::calibration
