#pragma once
// `cnnpar-run --calibrate`: measures this machine and writes a platform JSON that the
// analytic and SimGrid engines accept (docs/formats.md "calibrated platform"):
//  * compute (rank 0): the network's one-rank schedule is run with the real kernels at every
//    per-rank batch 1, 2, 4, ... up to the global batch. Each GEMM op gives a point of the
//    GEMM grid (calibration.gemm_flops, "gemm MxNxK phase" → FLOP/s, median of the repeats),
//    which model/gemm_rate.hpp interpolates; the non-GEMM ops (im2col, col2im, pooling,
//    element-wise, update) give nodes.memory_bandwidth and nodes.call_overhead from a fit of
//    t = overhead + bytes / bandwidth; the time an iteration spends outside its ops gives
//    iteration_overhead. Per-op seconds only with `op_seconds` (an explicit override);
//  * network (P >= 2, every rank): send (ping-pong between ranks 0 and 1), allreduce,
//    allgather, reduce_scatter and bcast from min to max message size, the median of repeats
//    (max over ranks per repeat), outliers counted; each time is split into the steps the
//    engines price (model/collective.hpp), and network.latency, .bandwidth and
//    .message_factors are fitted so that the step pricing reproduces the curves.
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

namespace cnnpar::real {

struct CalibrateOptions {
  std::int64_t batch = 64;  ///< global batch: per-rank batches 1 .. batch are measured
  std::uint64_t seed = 1;
  int repeats = 3;          ///< timed repetitions of each op (the median is kept)
  double min_message_bytes = 1024;
  double max_message_bytes = 256.0 * 1024 * 1024;
  bool op_seconds = false;  ///< also store calibration.op_seconds at the global batch
  double timeout_s = 60;
  std::string origin = "command line";  ///< for InputError
  /** progress lines (rank 0); may be empty */
  std::function<void(const std::string&)> progress;
};

/** One measured collective size: the slowest rank's time per repeat, reduced robustly, and
 *  what the fitted platform's step pricing gives for it. */
struct CollectivePoint {
  double bytes = 0;  ///< Collective::bytes (model/schedule.hpp size convention of the kind)
  RobustSummary measured_s;
  double modelled_s = 0;
};
struct CollectiveCurve {
  std::string kind;  ///< "send", "allreduce", "allgather", "reduce_scatter", "bcast"
  std::vector<CollectivePoint> points;
};

/** What the compute fit saw, for the report. */
struct ComputeSummary {
  std::vector<std::int64_t> batches;  ///< per-rank batches run
  int gemm_points = 0;
  int gemm_outliers = 0;     ///< GEMM repeats beyond kOutlierMads of their median
  MemoryFit memory;
  int memory_points = 0;
  int op_outliers = 0;       ///< non-GEMM repeats beyond kOutlierMads
  double measured_iteration_s = 0;  ///< at the largest batch, median
  double modelled_iteration_s = 0;  ///< the fitted platform's sum over the same ops + overhead
  /** per kernel class at the largest batch: (measured, modelled) seconds of one iteration */
  std::map<std::string, std::pair<double, double>> per_class_s;
};

struct CalibrationResult {
  Platform platform;  ///< the base platform with calibration, network and count filled in
  ComputeSummary compute;
  std::vector<CollectiveCurve> collectives;  ///< empty on one rank
  std::string network_note;  ///< why the network was not fitted (the base platform's kept); "" = fitted
};

/** Per-rank batches the compute calibration runs for global batch `batch`: 1, 2, 4, ... and
 *  `batch` itself. */
std::vector<std::int64_t> calibration_batches(std::int64_t batch);

/** Collective over `comm`: every rank takes part in the network measurements; rank 0 times
 *  the compute ops (the others wait at a barrier). The result is complete on rank 0 only. */
CalibrationResult calibrate(const Network& network, const Platform& base, const CalibrateOptions& options,
                            MPI_Comm comm);

}  // namespace cnnpar::real
