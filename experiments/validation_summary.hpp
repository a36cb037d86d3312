#pragma once
// The fidelity report over a grid's results: MAPE and R error per engine, MAPE by each grid
// dimension, and the strategy rankings.
//
// Definitions (docs/design.md "Validation"):
//  * error of a configuration = 100 · (predicted − measured) / measured iteration time, the
//    measured one being the median over measured iterations (analysis/metrics.hpp);
//  * mape_percent[engine] = mean |error| over the configurations;
//  * r_mae_points[engine] = mean |R_predicted − R_measured| (Lee Eq. 11, points of percent);
//  * a ranking group is the configurations that differ only in strategy; a pair of strategies
//    is decided when their measured iteration times' interquartile ranges do not overlap, and an
//    engine ranks a group as measured when it orders every decided pair the same way.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/validation_grid.hpp"
#include "experiments/validation_result.hpp"

namespace cnnpar {

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

}  // namespace cnnpar
