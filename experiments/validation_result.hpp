#pragma once
// One configuration's result: the metrics compared, predicted and measured, and its JSON form,
// the result file a run folder keeps (and resume reads back).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/metrics.hpp"
#include "experiments/validation_diagnosis.hpp"

namespace cnnpar {

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
  std::string collectives = "p2p";  ///< the executor's collectives: p2p | mpi
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

}  // namespace cnnpar
