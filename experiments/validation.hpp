#pragma once
// `cnnpar validate`: a grid of configurations (network × strategy × link × batch × ranks), each
// predicted by both engines from a calibrated platform and measured for real, on the testbed or
// on a cluster. This file holds what needs no process: the grid file, its configurations, one
// configuration's result and diagnosis (from the predicted and measured traces), and the
// fidelity report over all results. Calibrating, launching and the testbed are the command's
// (apps/cnnpar/cmd_validate.cpp).
//
// Definitions (docs/design.md "Validation"):
//  * error of a configuration = 100 · (predicted − measured) / measured iteration time, the
//    measured one being the median over measured iterations (analysis/metrics.hpp);
//  * mape_percent[engine] = mean |error| over the configurations;
//  * r_mae_points[engine] = mean |R_predicted − R_measured| (Lee Eq. 11, points of percent);
//  * a ranking group is the configurations that differ only in strategy; a pair of strategies
//    is decided when their measured iteration times' interquartile ranges do not overlap, and an
//    engine ranks a group as measured when it orders every decided pair the same way.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/metrics.hpp"
#include "workload/strategy.hpp"
#include "model/trace.hpp"

namespace cnnpar {

/** One link setting of a grid: what the testbed shapes, or "native" (not shaped: a cluster's own
 *  network, or the testbed's bare veths). */
struct LinkSetting {
  std::string bandwidth_text = "native";  ///< as written: "1Gbps" or "native"
  double bandwidth_Bps = 0;               ///< bytes per second each direction; 0 = native
  std::string latency_text = "native";    ///< "50us" or "native"
  double latency_s = 0;                   ///< one-way added latency, seconds; 0 = native
  std::size_t bandwidth_index = 0;        ///< where the grid file lists them (error messages)
  std::size_t latency_index = 0;
  /** "1Gbps", "1Gbps 50us", "native" */
  std::string label() const;
  /** The same, safe in a file name: "1Gbps", "1Gbps_50us", "native". */
  std::string key() const;
};

/** The grid's optional fit on real runs (issue 11): in every group of configurations predicted
 *  on one calibrated platform, `free` is fitted to the measured runs that `strategies` and
 *  `batches` select, and the other runs of the group are predicted on the fitted platform. */
struct ValidationFitSpec {
  std::vector<std::string> free;        ///< platform paths, as `cnnpar fit --free` takes them
  std::vector<std::string> strategies;  ///< strategy labels observed (strategy_label); empty = all
  std::vector<std::int64_t> batches;    ///< batches observed; empty = all
  bool enabled() const { return !free.empty(); }
  /** True when the fit observes a run of `strategy` (label) at `batch`. */
  bool observes(const std::string& strategy, std::int64_t batch) const;
};

inline constexpr int kMaxRunAttempts = 10;

/** Marks a platform file whose compute was calibrated again over a group's calibration:
 *  STEM-recalibrated-N.json beside STEM.json (calibration.recalibrate_compute). */
inline constexpr const char* kRecalibratedSuffix = "-recalibrated-";
/** The group calibration a platform file belongs to: STEM.json for STEM-recalibrated-N.json,
 *  else the file itself. */
std::string group_calibration(const std::string& platform_file);
/** STEM-recalibrated-N.json beside `group_file` (STEM.json): its N-th recalibration. */
std::string recalibrated_platform_file(const std::string& group_file, int n);

/** A validation grid file (docs/formats.md "Validation grid"). */
struct ValidationGrid {
  std::string file;  ///< where it was read from
  std::string name;
  std::string description;
  std::vector<std::string> networks;         ///< names or paths
  std::vector<StrategyOptions> strategies;   ///< name and option values (batch, ranks set per configuration)
  std::vector<LinkSetting> links;            ///< bandwidths × latencies, latency varying fastest
  std::vector<std::int64_t> batches;         ///< global mini-batches
  std::vector<int> ranks;                    ///< rank counts, one rank per node
  int real_compute_max_ranks = 2;            ///< more ranks than this compute by sleeping (--compute sleep)
  int iterations = 12;                       ///< per run, warm-up included
  int warmup = 2;
  /// Least measured time per run (s): a configuration whose predicted iteration is short runs
  /// more iterations than `iterations` (run_iterations), so its median is not a few noisy samples.
  double measure_seconds = 0;
  std::string comm_progress = "thread";      ///< the executor's progress mode: poll | thread
  std::string collectives = "p2p";           ///< mpi (the library's algorithms) | p2p (the engines' steps)
  std::string platform = "local";            ///< base platform of the calibrations
  int testbed_nodes = 0;                     ///< nodes of the testbed; 0 = the largest rank count
  double burst_bytes = 256.0 * 1024;         ///< the testbed's tbf bucket
  int calibration_repeats = 3;
  double iteration_tolerance_percent = 5;    ///< the acceptance the report checks
  double overlap_tolerance_points = 5;
  /// A real-compute run is measured again when the machine computed further than this from its
  /// calibrated speed (compute_speed_check): other load on a shared machine, not the model.
  double compute_speed_tolerance_percent = 10;
  int run_attempts = 3;                      ///< at most this many runs per configuration (1: no check), <= kMaxRunAttempts
  /// When a configuration's first real-compute run is off its calibrated speed, calibrate compute
  /// again over the group's platform, predict again and make run_attempts more runs (the first
  /// is not kept); later configurations of the group use the new calibration.
  bool recalibrate_compute = true;
  ValidationFitSpec fit;
};

/** @throws InputError naming the grid file, the JSON path and the value: an unknown network, a
 *  strategy or option the registry refuses, a bandwidth or latency that does not parse, a rank
 *  count above the testbed's nodes, a batch a rank count does not divide, ... */
ValidationGrid parse_validation_grid(const nlohmann::json& document, const std::string& file);
ValidationGrid load_validation_grid(const std::string& path);

/** One configuration of a grid. */
struct ValidationConfig {
  std::string network;
  StrategyOptions strategy;  ///< global_batch, ranks, iterations and warm-up set
  std::size_t link = 0;      ///< index into ValidationGrid::links
  std::string compute;       ///< "real" or "sleep"
};
/** The cross product in grid order (network, strategy, link, batch, ranks; ranks fastest). */
std::vector<ValidationConfig> validation_configs(const ValidationGrid& grid);
/** Iterations (warm-up included) a run of `grid` takes when its predicted iteration is
 *  `predicted_iteration_s`: at least grid.iterations, and enough that the measured ones last
 *  grid.measure_seconds, at most kMaxValidationIterations. */
inline constexpr int kMaxValidationIterations = 1000;
int run_iterations(const ValidationGrid& grid, double predicted_iteration_s);
/** "lee k=3 f=1" */
std::string strategy_label(const StrategyOptions& strategy);
/** "vgg-a-32 lee k=3 f=1, 1Gbps, batch 64, 2 ranks" */
std::string config_label(const ValidationGrid& grid, const ValidationConfig& config);
/** A file-name-safe, stable key: "vgg-a-32_lee-k3-f1_1Gbps_b64_p2". */
std::string config_key(const ValidationGrid& grid, const ValidationConfig& config);
/** How the configuration is run, beyond what its key says: "12 iterations (2 warm-up), real
 *  compute, thread progress, p2p collectives, platform local". A finished result is kept on
 *  resume only when its settings are these. */
std::string config_settings(const ValidationGrid& grid, const ValidationConfig& config);

/** What the report compares, from one trace's metrics. */
struct FidelityMetrics {
  double iteration_s = 0;             ///< median over measured iterations
  double compute_s = 0;               ///< compute per iteration, max over ranks
  double comm_s = 0;                  ///< Σ T_c per iteration, max over ranks
  double exposed_comm_s = 0;          ///< Σ T_b per iteration, max over ranks
  double overlap_ratio_percent = 0;   ///< R
  double iteration_q25_s = 0;         ///< quartiles of the measured iteration times
  double iteration_q75_s = 0;
  int measured_iterations = 0;
};
FidelityMetrics fidelity_metrics(const TraceMetrics& metrics);

/** The part of the model a configuration's miss comes from (issue 10's words). */
enum class MissCause { none, compute, effective_bandwidth, latency, progress, tcp_behaviour, contention };
const char* to_string(MissCause cause);

struct Diagnosis {
  MissCause cause = MissCause::none;
  std::string explanation;  ///< one sentence with the numbers behind the verdict
};

/** Why `predicted` misses `measured` (the same schedule) by more than `tolerance_percent` in
 *  iteration time, or MissCause::none. The iteration error is split into compute (max over
 *  ranks) and exposed communication; the larger part names the cause, refined by the ops and
 *  collectives behind it:
 *  * compute: compute ops that ran while none of the rank's collectives was in progress miss;
 *    when the miss is in ops that overlapped communication instead, it is progress (the
 *    communication's cost to compute, comm_compute_slowdown);
 *  * communication, from the collectives' T_c, predicted against measured, on the rank whose
 *    exposed communication is largest:
 *    - collectives that overlapped compute miss while those that did not match: progress;
 *    - more than two ranks, and the miss lies in collectives whose steps run between more than
 *      one pair of nodes at once while a pair alone matches: contention;
 *    - otherwise by message size per step: >= 1 MiB effective bandwidth, < 64 KiB latency, in
 *      between TCP behaviour (slow start, the shaper's burst). */
Diagnosis diagnose(const Trace& predicted, const TraceMetrics& predicted_metrics, const Trace& measured,
                   const TraceMetrics& measured_metrics, double tolerance_percent);

/** How fast the machine computed during a measured run, against the calibration. */
struct ComputeSpeedCheck {
  double ratio = 0;  ///< measured / predicted seconds of the undisturbed ops (1 = as calibrated)
  int ops = 0;       ///< undisturbed ops of the measured iterations
  double share = 0;  ///< their predicted seconds over all the measured iterations' predicted compute
};
/** Undisturbed ops are the GEMMs of the measured iterations that no collective of any rank was
 *  in flight over for more than a quarter of their time: communication cannot have slowed
 *  them, as the ranks may share the machine's cores (the testbed). GEMMs only, as calibration
 *  times them directly (its GEMM grid); the roofline of the other ops is off by up to ±60 % per
 *  op, which would make the ratio depend on which ops ran undisturbed. Each is matched to the
 *  same op of `predicted`, the same schedule predicted from the calibrated platform.
 *  @return none when those ops hold less than kMinUndisturbedShare of the predicted GEMM time. */
inline constexpr double kMinUndisturbedShare = 0.1;
std::optional<ComputeSpeedCheck> compute_speed_check(const Trace& predicted, const Trace& measured);
/** True when a check's `ratio` is further than `tolerance_percent` from 1 (a ratio < 0: not
 *  checked, never off). */
bool compute_speed_off(double ratio, double tolerance_percent);

/** One configuration's outcome, as stored in the run folder (resume) and reported. */
struct ConfigResult {
  std::string key;
  std::string label;
  std::string network;
  std::string strategy;     ///< strategy_label
  std::string link;         ///< LinkSetting::label
  std::int64_t batch = 0;
  int ranks = 0;
  std::string compute;      ///< real | sleep
  std::string settings;     ///< config_settings
  std::string platform;     ///< the calibrated platform file the predictions used
  double load_average = -1; ///< 1-minute load when the measured run started (-1: unknown)
  /// compute_speed_check of the run kept, then of every run made (-1: none), in order
  double compute_speed_ratio = -1;
  std::vector<double> attempt_compute_speed_ratios;
  /// The first run was off: compute was calibrated again (`platform`), and the first ratio above
  /// is that run's against the calibration before; the run kept is a later one.
  bool compute_recalibrated = false;
  FidelityMetrics measured;
  std::map<std::string, FidelityMetrics> predicted;  ///< by engine: "analytic", "simgrid"
  std::map<std::string, Diagnosis> diagnosis;        ///< by engine
  /** 100 · (predicted − measured) / measured iteration time. */
  double error_percent(const std::string& engine) const;
};
nlohmann::json to_json(const ConfigResult& result);
/** @throws InputError(file, path, value) for a result file that is not one. */
ConfigResult config_result_from_json(const nlohmann::json& document, const std::string& file);

/** A group of configurations that differ only in strategy, ranked. */
struct RankingGroup {
  std::string label;                         ///< "vgg-a-32, 1Gbps, batch 64, 2 ranks"
  std::vector<std::string> measured_order;   ///< strategies, fastest first
  std::map<std::string, std::vector<std::string>> predicted_order;  ///< by engine
  int decided_pairs = 0;
  std::map<std::string, int> agreeing_pairs;  ///< by engine: decided pairs ordered as measured
  std::map<std::string, bool> agrees;         ///< by engine: every decided pair
};

struct EngineSummary {
  double mape_percent = 0;
  double max_abs_error_percent = 0;
  double r_mae_points = 0;
  int within_tolerance = 0;        ///< configurations with |error| <= the grid's tolerance
  int ranking_groups_agreeing = 0;
  std::map<std::string, int> causes;  ///< MissCause name -> configurations
};

struct ValidationReport {
  std::string grid_name, grid_file, description;
  double iteration_tolerance_percent = 5, overlap_tolerance_points = 5;
  double compute_speed_tolerance_percent = 10;
  int run_attempts = 3;
  bool recalibrate_compute = true;
  int configurations = 0;     ///< in the grid
  std::vector<ConfigResult> results;  ///< finished ones, in grid order
  std::map<std::string, EngineSummary> engines;
  /** MAPE per engine by one grid dimension: "ranks" -> "2" -> engine -> MAPE. */
  std::map<std::string, std::map<std::string, std::map<std::string, double>>> mape_by;
  std::vector<RankingGroup> rankings;
  nlohmann::json environment;  ///< testbed or cluster, calibration files, host (set by the caller)
  /** The fit on real runs, when the grid asks for one (set by the caller: experiments/validation_fit.hpp). */
  nlohmann::json fit;
  std::string fit_markdown;
};
ValidationReport summarize_validation(const ValidationGrid& grid, std::vector<ConfigResult> results);

nlohmann::json to_json(const ValidationReport& report);
std::string validation_markdown(const ValidationReport& report);
/** One row per configuration and engine: the configuration, measured and predicted metrics, error, cause. */
std::string validation_csv(const ValidationReport& report);

}  // namespace cnnpar
