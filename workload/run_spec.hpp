#pragma once
// The run-spec: everything `cnnpar run` hands to `cnnpar-run` in one JSON file (instead of
// re-spelling flags as argv), so both executables read a run the same way.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "workload/strategy.hpp"

namespace cnnpar {

/** cnnpar-run's GEMM back-end unless --gemm says otherwise. */
inline constexpr const char* kDefaultGemmBackend = "openblas";

/** cnnpar-run's SGD settings and poll interval unless the flags or the run-spec say otherwise. */
inline constexpr double kDefaultLearningRate = 0.01;
inline constexpr double kDefaultMomentum = 0.9;
inline constexpr double kDefaultWeightDecay = 5e-4;
inline constexpr double kDefaultPollIntervalUs = 200;
/** Iterations of a measured run unless --iterations says otherwise: enough measured ones for
 *  a median and a spread (the first is warm-up). */
inline constexpr int kDefaultMeasuredRunIterations = 10;

/** Compute slowdown per rank (Marques et al.'s heterogeneous nodes, for real on one machine):
 *  rank → factor; the rank's compute ops take `factor` times as long. */
using Slowdowns = std::map<int, double>;
/** Largest slowdown factor: beyond it a run is a stall, not a slower node. */
inline constexpr double kMaxSlowdown = 100;

/** "RANK:FACTOR" (--slowdown 1:2), added to `slowdowns`.
 *  @throws InputError(file, path, text, reason) for another syntax, a negative rank, a factor
 *  outside [1, kMaxSlowdown] (a factor below 1 would need a faster machine) or a rank given twice. */
void add_slowdown(Slowdowns& slowdowns, const std::string& text, const std::string& file, const std::string& path);
/** @throws InputError(file, path, "RANK:FACTOR", reason) for a rank >= `ranks`. */
void check_slowdown_ranks(const Slowdowns& slowdowns, int ranks, const std::string& file, const std::string& path);
/** {"1": 2.0, ...} (JSON object keys are strings). */
nlohmann::json slowdowns_to_json(const Slowdowns& slowdowns);

struct RunSpec {
  std::string network;                 ///< name or JSON path
  std::string platform = "local";      ///< name or JSON path
  StrategyOptions strategy;            ///< name, batch, iterations, warm-up, the strategy's options
  std::uint64_t seed = 1;
  std::optional<double> learning_rate, momentum, weight_decay;  ///< absent: cnnpar-run's defaults
  std::string dataset = "synthetic";
  std::string compute = "real";        ///< real | sleep
  std::string comm_progress = "poll";  ///< poll | thread: how collectives progress during compute
  bool progress = false;               ///< per-iteration progress lines on stderr (rank 0)
  std::string collectives = "mpi";     ///< mpi | p2p (real/interpreter.hpp CollectiveMode)
  std::optional<double> poll_interval_us;
  double timeout_s = 60;
  std::int64_t collective_concurrency = 0;  ///< collectives run at once; 0 = the platform's
  std::string trace;                   ///< output paths ("" = none)
  std::string weights_out;
  std::string checkpoint;              ///< directory of checkpoint.bin ("" = none)
  std::int64_t checkpoint_every = 0;   ///< iterations between checkpoints; 0 = only at the end
  bool resume = false;                 ///< start from <checkpoint>/checkpoint.bin
  std::int64_t threads = 0;            ///< compute threads per rank; 0 = OPENBLAS_NUM_THREADS, else 1
  std::string gemm = kDefaultGemmBackend;  ///< GEMM back-end: openblas | onednn (real/kernels.hpp)
  std::string inner = "gemm";  ///< conv forward and weight gradient: gemm | dag (model/inner_mode.hpp)
  Slowdowns slowdown;                  ///< JSON "slowdown": {"RANK": FACTOR}
  // strategy.recompute_columns is the "columns" field: "kept" | "recomputed"; strategy.conv
  // the "conv" field: "im2col" | "direct" | "winograd" | "auto" | "LAYER[:PATH],..."
};

/** Numbers of a run that mean something only in a range. One check serves cnnpar-run's
 *  flags, `cnnpar run`'s flags and the run-spec's fields, so all three refuse alike. */
enum class RunNumber {
  learning_rate,     ///< finite, > 0
  momentum,          ///< in [0, 1)
  weight_decay,      ///< finite, >= 0
  timeout_s,         ///< finite, > 0 (seconds)
  poll_interval_us,  ///< finite, >= 0 (microseconds)
  concurrency,       ///< integer >= 0 (0 = the platform's value)
  checkpoint_every,  ///< integer >= 0 (iterations; 0 = only at the end)
  gemm_tile_columns, ///< integer >= 0 (columns)
  repeats,           ///< integer >= 1
  threads,           ///< integer in [0, 1024] (0 = the default)
};
/** @throws InputError(file, path, value, reason) when `value` is outside the range of `which`. */
void check_run_number(RunNumber which, double value, const std::string& file, const std::string& path);

/** The ranged numbers a run is started with (cnnpar run's and cnnpar-run's flags alike). */
struct RunNumbers {
  double learning_rate = kDefaultLearningRate, momentum = kDefaultMomentum, weight_decay = kDefaultWeightDecay;
  double timeout_s = 60, poll_interval_us = kDefaultPollIntervalUs;
  double concurrency = 0, checkpoint_every = 0, threads = 0;
};
/** check_run_number on each, named by its flag ("/lr", "/timeout-s", ...).
 *  @throws InputError(file, "/FLAG", value, reason) for the first out of range. */
void check_run_numbers(const RunNumbers& numbers, const std::string& file);

/** The GEMM back-ends cnnpar-run knows ("openblas" | "onednn"; whether this build has oneDNN
 *  is cnnpar-run's check). @throws InputError(file, path, text, reason) for another name. */
void check_gemm_backend_name(const std::string& text, const std::string& file, const std::string& path);

/** The parts of a platform a calibration measures (--calibrate-parts); the others keep the
 *  base platform's values. compute: the GEMM grid, nodes.memory_bandwidth, .call_overhead,
 *  .efficiency, iteration_overhead (and calibration.op_seconds); network: network.latency,
 *  .bandwidth, .overhead, .message_factors, .reduction_rate; progress:
 *  comm_compute_slowdown and network.busy_bandwidth_fraction. */
struct CalibrationParts {
  bool compute = true;
  bool network = true;
  bool progress = true;
  /** a conv layer's forward and weight-gradient work per inner mode and thread count
   *  (nodes.inner); not in the default list */
  bool inner = false;
};
/** The default of --calibrate-parts: every part. */
inline constexpr const char* kAllCalibrationParts = "compute,network,progress";
/** A comma list of compute, network, progress and inner, each at most once, at least one.
 *  @throws InputError(file, path, text, reason). */
CalibrationParts parse_calibration_parts(const std::string& text, const std::string& file, const std::string& path);
/** The comma list of the parts that are set ("" for none), in the order compute, network, progress, inner. */
std::string to_string(const CalibrationParts& parts);

/** A seed given as text: decimal digits only, at most 2^64 - 1 (a "-1" would otherwise wrap
 *  to 2^64 - 1 unnoticed). @throws InputError(file, path, text, reason). */
std::uint64_t parse_seed(const std::string& text, const std::string& file, const std::string& path);

nlohmann::json to_json(const RunSpec& spec);
/** @throws InputError (file, JSON path, value) for a missing or malformed field, an unknown
 *  strategy or an option its schema does not have. */
RunSpec run_spec_from_json(const nlohmann::json& document, const std::string& file);

}  // namespace cnnpar
