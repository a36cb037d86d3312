#pragma once
// How well a fit predicts what it was not fitted on: leave-one-out refits, and other studies
// held out and predicted with the fitted values.
#include <string>
#include <vector>

#include "experiments/fit_observations.hpp"
#include "experiments/fit_solver.hpp"
#include "experiments/sweep.hpp"
#include "model/platform.hpp"

namespace cnnpar {

/** Leave-one-out cross-validation: for each observation, the fit without it (from `fitted`)
 *  and its prediction there; `progress` is told of each refit. */
struct LeaveOneOut {
  std::string skipped;  ///< why it was not run ("" when it was): observations <= free parameters
  struct Row {
    double predicted = 0;
    double relative_error = 0;  ///< predicted / observed − 1
    bool converged = true;      ///< false: that refit did not converge (left out of the mean)
    std::string failure;
  };
  std::vector<Row> rows;  ///< one per observation
  double mean_abs_error_percent = 0;
};
LeaveOneOut leave_one_out(const PredictFunction& predict, const std::vector<double>& observed,
                          const std::vector<FreeParameter>& free, const std::vector<double>& fitted,
                          const FitOptions& options = {}, const SweepProgress& progress = {});

/** Another study predicted with the fitted values and with the start values. */
struct HeldOut {
  std::string study, platform;
  std::string platform_note;  ///< how the fitted values reached its platform
  std::vector<Observation> observations;
  std::vector<double> start_predicted, predicted;
  /** Per observation: the fit saw the same configuration on the same platform (Lee's Figs. 10
   *  and 11 publish Fig. 6's lee point again), so it is not held out. */
  std::vector<bool> fitted_on;
  double start_mean_abs_error_percent = 0, mean_abs_error_percent = 0;  ///< over all observations
  int unseen = 0;                          ///< observations the fit did not see
  double unseen_mean_abs_error_percent = 0;  ///< fitted, over those
};

/** `held` predicted on `start` and on `fitted`; `fitted_on` marks the configurations among
 *  `seen` (the fit's observations) when `same_platform`. */
HeldOut predict_held_out(const std::string& study, const Observations& held, const Platform& start, const Platform& fitted,
                         const std::vector<Observation>& seen, bool same_platform);

/** Mean of |predicted / observed − 1| in percent. */
double mean_abs_error_percent(const std::vector<double>& predicted, const std::vector<double>& observed);

}  // namespace cnnpar
