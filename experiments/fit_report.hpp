#pragma once
// What `cnnpar fit` reports: the terminal text, the JSON report and the fitted platform file.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/fit_free_parameters.hpp"
#include "experiments/fit_observations.hpp"
#include "experiments/fit_out_of_sample.hpp"
#include "experiments/fit_solver.hpp"
#include "model/platform.hpp"

namespace cnnpar {

/** Everything `cnnpar fit` reports. */
struct FitReport {
  std::string engine;
  std::string platform_start;   ///< name of the platform the fit started from
  std::vector<std::string> sets;  ///< --set PATH=VALUE applied to it before the fit
  std::string platform_fitted;  ///< name written to the fitted file
  std::string out;              ///< the fitted platform's file
  std::vector<FreeParameter> free;
  std::vector<Observation> observations;
  std::vector<double> start_predicted;
  FitResult fit;
  LeaveOneOut loo;
  std::vector<HeldOut> held_out;
};

/** The machine-readable report (docs/formats.md, "fit report JSON"). */
nlohmann::json to_json(const FitReport& report);
/** The terminal report: parameters, observations, leave-one-out, held-out studies. */
std::string format_fit_report(const FitReport& report);
/** The fitted platform JSON: `fitted` in the platform's JSON form, named `name`, its `source`
 *  extended by the fit (free paths and values, the observations and their residuals, the
 *  leave-one-out error). */
nlohmann::json fitted_platform_json(const Platform& fitted, const std::string& name, const FitReport& report,
                                    const std::string& when);

}  // namespace cnnpar
