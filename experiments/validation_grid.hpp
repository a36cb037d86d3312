#pragma once
// The validation grid: its file (docs/formats.md "Validation grid"), the configurations it
// expands to with their labels, keys and run settings, and the group calibrations' file names.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/strategy.hpp"

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

/** The grid's optional fit on real runs: in every group of configurations predicted
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
  /// Collective modes, each a run of every configuration: mpi (the library's algorithms) | p2p
  /// (the engines' steps)
  std::vector<std::string> collectives = {"p2p"};
  /// The conv paths of every run (as --conv); auto is resolved from each calibration (which
  /// then times direct convolutions too), and the run-spec states the resolved layers.
  ConvPaths conv = kDefaultConvPaths;
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
  std::string collectives = "p2p";  ///< the executor's collectives: p2p | mpi
};
/** True for the executor's collectives modes: "p2p" (the engines' steps), "mpi" (the library's). */
bool is_collectives_mode(const std::string& text);
/** What an mpi-mode configuration adds to its key and its calibration's file name ("_mpi"), and
 *  to its labels (", mpi collectives"); p2p adds nothing, so one-mode grids keep their names. */
std::string collectives_key_suffix(const std::string& collectives);
std::string collectives_label_suffix(const std::string& collectives);
/** The cross product in grid order (collectives, network, strategy, link, batch, ranks; ranks
 *  fastest): a grid of one mode keeps the order and keys it had before modes were an axis. */
std::vector<ValidationConfig> validation_configs(const ValidationGrid& grid);
/** Iterations (warm-up included) a run of `grid` takes when its predicted iteration is
 *  `predicted_iteration_s`: at least grid.iterations, and enough that the measured ones last
 *  grid.measure_seconds, at most kMaxValidationIterations. */
inline constexpr int kMaxValidationIterations = 1000;
int run_iterations(const ValidationGrid& grid, double predicted_iteration_s);
/** "lee k=3 f=1" */
std::string strategy_label(const StrategyOptions& strategy);
/** "vgg-a-32 lee k=3 f=1, 1Gbps, batch 64, 2 ranks", with ", mpi collectives" in mpi mode */
std::string config_label(const ValidationGrid& grid, const ValidationConfig& config);
/** A file-name-safe, stable key: "vgg-a-32_lee-k3-f1_1Gbps_b64_p2", "..._p2_mpi" in mpi mode. */
std::string config_key(const ValidationGrid& grid, const ValidationConfig& config);
/** How the configuration is run, beyond what its key says: "12 iterations (2 warm-up), real
 *  compute, thread progress, p2p collectives, platform local". A finished result is kept on
 *  resume only when its settings are these. */
std::string config_settings(const ValidationGrid& grid, const ValidationConfig& config);

}  // namespace cnnpar
