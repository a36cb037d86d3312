#pragma once
// The least-squares fit itself: GSL's trust-region Levenberg–Marquardt over the free parameters.
// Every GSL call of cnnpar is in fit_solver.cpp.
//
// Residuals are relative errors, prediction / observation − 1, so an iteration time of 2 ms
// and a speedup of 60 weigh alike. Positive quantities are fitted in log space, fractions
// (efficiencies, busy_bandwidth_fraction) as logits, so a step never leaves their range.
#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiments/fit_free_parameters.hpp"

namespace cnnpar {

/** The fit did not converge (GSL reported failure, the iteration limit was reached, or a step
 *  left the platform's valid range). main maps it, like any failure, to status 1. */
class FitNotConverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct FitOptions {
  int max_iterations = 100;
  double xtol = 1e-10;  ///< GSL's step test: |dx_j| <= xtol (|x_j| + xtol), x in log/logit space
  double gtol = 1e-10;  ///< GSL's gradient test (scaled), and the test of a start that is already optimal
};

/** A model of the observations: their predictions for given parameter values. */
using PredictFunction = std::function<std::vector<double>(const std::vector<double>& values)>;

struct FitResult {
  std::vector<double> values;  ///< fitted, per free parameter, in its unit
  /** 1σ per parameter in its unit, from the covariance (J^T J)^-1 scaled by the residual
   *  variance χ²/(n − p); empty optional when not estimable (n == p, or the observations do
   *  not depend on the parameter). */
  std::vector<std::optional<double>> sigma;
  std::vector<bool> identifiable;  ///< false: no observation depends on the parameter
  std::vector<double> predicted;   ///< per observation (all of them), at `values`
  int iterations = 0;
  std::string stop_reason;  ///< "small step", "small gradient", "start already optimal"
  int refused_steps = 0;     ///< trial steps whose values the platform refused (rejected like worse steps)
  std::string last_refusal;  ///< the platform's reason for the last of them
  double chi_square = 0;    ///< Σ residual² over the fitted observations
  int dof = 0;              ///< fitted observations − free parameters
};

/** Fits `free` (starting at `start`, in their units) so that predict(values) matches
 *  `observed` in relative terms, on the observations `included` (all when empty).
 *  @throws FitNotConverged (status 1) on GSL failure or the iteration limit;
 *  InputError from `predict` at the start values (bad input) passes through. */
FitResult fit_parameters(const PredictFunction& predict, const std::vector<double>& observed,
                         const std::vector<FreeParameter>& free, const std::vector<double>& start,
                         const FitOptions& options = {}, const std::vector<std::size_t>& included = {});

}  // namespace cnnpar
