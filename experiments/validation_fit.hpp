#pragma once
// Real runs feed the fit: the measured runs of a validation are observations for
// `cnnpar fit`'s least squares. Configurations predicted on one calibrated platform (or on a
// recalibration of its compute) form a group;
// in each, the grid's free parameters are fitted to the runs its `fit.observe` selects, and the
// group's other runs are predicted on the fitted platform: their error before and after the fit
// is the held-out error. Observations are mean measured iteration times (experiments/fit.hpp), so
// the errors here are against the mean, where the validation report uses the median.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/fit.hpp"
#include "experiments/validation.hpp"

namespace cnnpar {

/** One finished configuration and its measured trace. */
struct ValidationFitInput {
  const ConfigResult* result = nullptr;
  std::string measured_trace;  ///< file of the measured Trace
};

struct ValidationFitGroup {
  /// the group's calibrated platform file; runs predicted on a recalibration of its compute
  /// (group_calibration) belong to it, each predicted on its own file with the fitted values
  std::string platform;
  int platforms = 1;                     ///< platform files among its runs (1 + recalibrations)
  std::vector<std::string> observed;     ///< configuration labels the fit saw
  std::vector<std::string> held_out;     ///< the group's other configurations
  std::vector<FreeParameter> free;
  std::vector<double> fitted;            ///< per free parameter, in its unit
  std::vector<std::optional<double>> sigma;
  /** Per held-out configuration: 100 · (predicted / measured mean − 1) on the calibrated
   *  platform, and on the fitted one. */
  std::vector<double> before_percent, after_percent;
  /** Why the group was not fitted ("" when it was): fewer runs than free parameters, no run
   *  held out, a fit that did not converge. */
  std::string skipped;
};

struct ValidationFit {
  std::vector<std::string> free;  ///< the grid's free paths
  std::vector<std::string> observe;  ///< what the fit observes, in words
  std::vector<ValidationFitGroup> groups;
  int held_out = 0;                     ///< held-out configurations of the fitted groups
  double held_out_mape_before_percent = 0;  ///< their MAPE on the calibrated platforms
  double held_out_mape_after_percent = 0;   ///< on the fitted platforms
};

/** Fits every group of `inputs` (grouped by group_calibration of ConfigResult::platform) with
 *  `make_engine`.
 *  @throws InputError naming the grid file and "/fit/free/N" for a free path the platform does
 *  not have or cannot fit. */
ValidationFit fit_validation(const ValidationGrid& grid, const std::vector<ValidationFitInput>& inputs,
                             const EngineFactory& make_engine);

nlohmann::json to_json(const ValidationFit& fit);
/** The report's "Fit on the measured runs" section. */
std::string validation_fit_markdown(const ValidationFit& fit);

}  // namespace cnnpar
