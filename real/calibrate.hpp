#pragma once
// `cnnpar-run --calibrate`: measures this machine and writes a platform JSON that the
// analytic and SimGrid engines accept (docs/formats.md "calibrated platform"), in up to three
// parts (--calibrate-parts); a part not measured keeps the base platform's values:
//  * compute (every rank at once, so ranks that share a host contend as in a run): the
//    network's one-rank schedule is run with the real kernels at every per-rank batch 1, 2,
//    4, ... up to the global batch. Each GEMM op gives a point of the GEMM grid
//    (calibration.gemm_flops, "gemm MxNxK phase" → FLOP/s, the median of every rank's
//    repeats), which system/gemm_rate.hpp interpolates; the non-GEMM ops (im2col, col2im,
//    pooling, element-wise, update) give nodes.memory_bandwidth and nodes.call_overhead from a
//    fit of t = overhead + bytes / bandwidth; the time an iteration spends outside its ops
//    gives iteration_overhead. Per-op seconds only with `op_seconds` (an explicit override);
//  * network (P >= 2, every rank): send (ping-pong between ranks 0 and 1), allreduce,
//    allgather, reduce_scatter and bcast from min to max message size, run as the executor
//    runs them in the calibration's collectives mode (real/interpreter.hpp RunningCollective:
//    MPI's own collectives or the engines' steps), the median of repeats (max over ranks per
//    repeat), outliers counted, sizes whose predicted transfer exceeds a bound skipped; each
//    time is split into the steps the engines price (system/collective.hpp), and
//    network.latency, .bandwidth and .message_factors are fitted so that the step pricing
//    reproduces the curves;
//  * progress (P >= 2, every rank): with the executor's Interpreter in the calibration's
//    progress mode (poll | thread), the network's backward ops run alone and while a chain of
//    its largest gradient allreduce progresses (comm_compute_slowdown), and that allreduce
//    runs alone and while the ops run with the executor's poll points
//    (network.busy_bandwidth_fraction).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "real/calibration_fit.hpp"
#include "real/interpreter.hpp"
#include "workload/run_spec.hpp"

namespace cnnpar::real {

struct CalibrateOptions {
  std::int64_t batch = 64;  ///< global batch: per-rank batches 1 .. batch are measured
  std::uint64_t seed = 1;
  int repeats = 3;          ///< timed repetitions of each op (the median is kept)
  double min_message_bytes = 1024;
  double max_message_bytes = 256.0 * 1024 * 1024;
  /** True when the user asked for max_message_bytes: every size up to it is measured however
   *  long it takes; else a size whose single transfer is predicted (from the smaller sizes of
   *  its kind, extrapolated_transfer_s) to exceed max_transfer_s ends its curve. */
  bool max_message_given = false;
  double max_transfer_s = 2;
  bool op_seconds = false;  ///< also store calibration.op_seconds at the global batch
  /** Also time every conv layer as a direct convolution (oneDNN): calibration.conv_flops. */
  bool direct_convolutions = false;
  /** Also time every 3x3 stride-1 conv layer as a Winograd convolution (oneDNN, AVX-512):
   *  calibration.winograd_flops. */
  bool winograd_convolutions = false;
  CalibrationParts parts;
  // How the runs to be predicted execute (the network and progress parts measure that mode):
  ProgressMode progress_mode = ProgressMode::poll;
  CollectiveMode collectives = CollectiveMode::mpi;
  /** progress part: compute ops sleep their modelled time on the platform (a --compute sleep
   *  run) instead of running the real kernels */
  bool sleep_compute = false;
  double poll_interval_s = kDefaultPollIntervalUs * 1e-6;
  std::int64_t gemm_tile_columns = 4096;  ///< GEMM column tile between polls (0 = none), as the run
  double timeout_s = 60;
  /** inner part: the mode and threads the runs to be predicted use (nodes.inner.mode and
   *  .threads); every mode is measured on 1..min(cores, hardware threads) threads */
  InnerMode inner_mode = InnerMode::gemm;
  int inner_threads = 1;
  std::string origin = "command line";  ///< for InputError
  std::string platform_file = "platform";  ///< the base platform's name or path, for InputError
  /** progress lines (rank 0); may be empty */
  std::function<void(const std::string&)> progress;
};

/** One measured collective size: the slowest rank's time per repeat, reduced robustly, the
 *  time the fit prices, and what the fitted platform's step pricing gives for it. */
struct CollectivePoint {
  double bytes = 0;  ///< Collective::bytes (model/schedule.hpp size convention of the kind)
  RobustSummary measured_s;
  /** Seconds the fit prices: the median of isolated repeats, or for a chained size
   *  (`chained`) the mean of its back-to-back repeats. */
  double fit_s = 0;
  bool chained = false;
  double modelled_s = 0;
};
struct CollectiveCurve {
  std::string kind;  ///< "send", "allreduce", "allgather", "reduce_scatter", "bcast"
  std::vector<CollectivePoint> points;
  /** Why the curve ends before the largest size ("" = it reaches it). */
  std::string stopped;
};

/** What the compute fit saw, for the report. */
struct ComputeSummary {
  std::vector<std::int64_t> batches;  ///< per-rank batches run
  int gemm_points = 0;
  int conv_points = 0;  ///< direct convolution shapes and phases timed (CalibrateOptions::direct_convolutions)
  int winograd_points = 0;  ///< the same for Winograd (CalibrateOptions::winograd_convolutions)
  int gemm_outliers = 0;     ///< GEMM repeats beyond kOutlierMads of their median
  MemoryFit memory;
  int memory_points = 0;
  int op_outliers = 0;       ///< non-GEMM repeats beyond kOutlierMads
  double measured_iteration_s = 0;  ///< at the largest batch, median
  double modelled_iteration_s = 0;  ///< the fitted platform's sum over the same ops + overhead
  /** per kernel class at the largest batch: (measured, modelled) seconds of one iteration */
  std::map<std::string, std::pair<double, double>> per_class_s;
};

/** What the progress probes saw, for the report. Every per-probe value is one rank's in one
 *  repeat; the platform takes the medians. */
struct ProgressSummary {
  double collective_bytes = 0;     ///< the probe allreduce (the network's largest gradient collective)
  std::int64_t batch = 0;          ///< per-rank batch of the compute ops
  std::size_t compute_ops = 0;     ///< backward ops of one pass
  double pass_alone_s = 0;         ///< one pass of them alone (median)
  double collective_alone_s = 0;   ///< the allreduce alone (median)
  double collective_busy_s = 0;    ///< the allreduce while the ops ran (median)
  int chain = 0;                   ///< allreduces chained under the slowdown probe's compute (last repeat)
  int passes = 0;                  ///< passes of compute under the fraction probe's allreduce (last repeat)
  RobustSummary slowdown;          ///< compute_slowdown per rank and repeat
  RobustSummary fraction;          ///< busy_bandwidth_fraction per rank and repeat, before clamping
  RobustSummary start_wait;        ///< seconds from the fraction probe's post to its start, per rank and repeat
};

/** What the inner part measured: a rank's conv forward and weight-gradient work per mode and
 *  thread count. */
struct InnerSummary {
  std::int64_t batch = 0;  ///< per-rank batch
  double flops = 0;        ///< the conv GEMMs' FLOPs of one iteration
  std::map<std::string, std::vector<double>> seconds;  ///< by mode, [T - 1]: median seconds per iteration
};

struct CalibrationResult {
  /** the base platform with the measured parts replaced, and at least as many nodes as ranks */
  Platform platform;
  CalibrationParts measured;  ///< the parts measured (network and progress need P >= 2)
  ComputeSummary compute;
  std::vector<CollectiveCurve> collectives;  ///< empty when the network was not measured
  std::string network_note;  ///< why the network was not fitted (the base platform's kept); "" = fitted
  ProgressSummary progress;
  std::string progress_note;  ///< why the progress mechanisms were not fitted (the base's kept); "" = fitted
  InnerSummary inner;
};

/** Per-rank batches the compute calibration runs for global batch `batch`: 1, 2, 4, ... and
 *  `batch` itself. */
std::vector<std::int64_t> calibration_batches(std::int64_t batch);

/** busy_bandwidth_fraction is kept in [kMinBusyFraction, 1] (the platform's range is (0, 1]). */
inline constexpr double kMinBusyFraction = 0.01;

/** @throws InputError(options.origin, "/network", name) when `options` asks for the inner part
 *  and `network` has no conv layer to time. */
void check_calibration_network(const Network& network, const CalibrateOptions& options);

/** Collective over `comm` (MPI_COMM_WORLD: the probes use the executor's Communicators):
 *  every rank takes part in every part. The result is complete on rank 0 only. */
CalibrationResult calibrate(const Network& network, const Platform& base, const CalibrateOptions& options,
                            MPI_Comm comm);

}  // namespace cnnpar::real
