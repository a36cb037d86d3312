// The least-squares fit on GSL: every gsl_* call of cnnpar is here. Coordinates are log or
// logit of the values, residuals relative errors; GSL's errors come back as return codes.
#include "experiments/fit_solver.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <numeric>

#include <fmt/format.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "base/error.hpp"

namespace cnnpar {

namespace {

// Fit coordinates: log(value), or logit(value) for a fraction, so every step stays in range.
double to_coordinate(const FreeParameter& free, double value) {
  return free.fraction ? std::log(value / (1 - value)) : std::log(value);
}
double to_value(const FreeParameter& free, double x) { return free.fraction ? 1 / (1 + std::exp(-x)) : std::exp(x); }
double value_per_coordinate(const FreeParameter& free, double value) { return free.fraction ? value * (1 - value) : value; }

// GSL's default handler aborts the process; library code reports through return codes instead.
class GslErrorsReturned {
 public:
  GslErrorsReturned() : previous_(gsl_set_error_handler_off()) {}
  ~GslErrorsReturned() { gsl_set_error_handler(previous_); }

 private:
  gsl_error_handler_t* previous_;
};

struct VectorDeleter {
  void operator()(gsl_vector* v) const { gsl_vector_free(v); }
};
struct MatrixDeleter {
  void operator()(gsl_matrix* m) const { gsl_matrix_free(m); }
};
struct WorkspaceDeleter {
  void operator()(gsl_multifit_nlinear_workspace* w) const { gsl_multifit_nlinear_free(w); }
};

struct Problem {
  const PredictFunction* predict;
  const std::vector<double>* observed;
  const std::vector<std::size_t>* included;
  const std::vector<FreeParameter>* free;
  std::exception_ptr error;  // an exception of `predict`, carried across GSL's C frames
  bool started = false;      // the start values were evaluated (and accepted)
  std::string out_of_range;  // the platform's last refusal of a trial step
  int refused = 0;           // trial steps the platform refused
};

// The residual of a trial step whose values the platform refuses (an efficiency below 1e-6, a
// time beyond 1e9 s): far above any real relative error, so the trust region rejects the step
// and shrinks, as for any step that makes the fit worse. Accepted points are always valid.
constexpr double kRefusedResidual = 1e6;

std::vector<double> values_at(const std::vector<FreeParameter>& free, const gsl_vector* x) {
  std::vector<double> values;
  for (std::size_t j = 0; j < free.size(); ++j) values.push_back(to_value(free[j], gsl_vector_get(x, j)));
  return values;
}

// r_k = predicted / observed − 1 over the included observations.
int relative_residuals(const gsl_vector* x, void* data, gsl_vector* f) {
  Problem& problem = *static_cast<Problem*>(data);
  try {
    const std::vector<double> predicted = (*problem.predict)(values_at(*problem.free, x));
    for (std::size_t k = 0; k < problem.included->size(); ++k) {
      const std::size_t i = (*problem.included)[k];
      gsl_vector_set(f, k, predicted[i] / (*problem.observed)[i] - 1);
    }
    return GSL_SUCCESS;
  } catch (const InputError& e) {
    if (!problem.started) {  // at the start values: bad input, reported as such
      problem.error = std::current_exception();
      return GSL_EBADFUNC;
    }
    problem.out_of_range = e.reason();
    ++problem.refused;
    gsl_vector_set_all(f, kRefusedResidual);
    return GSL_SUCCESS;
  } catch (...) {
    problem.error = std::current_exception();
    return GSL_EBADFUNC;
  }
}

// A step that left the platform's valid range (the parser refuses the candidate) is the fit's
// failure, not bad input: the start values were accepted.
[[noreturn]] void rethrow_from_fit(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError& e) {
    throw FitNotConverged(fmt::format("the fit did not converge: a step left the platform's valid range ({})", e.reason()));
  }
}

double infinity_norm_of_gradient(const gsl_matrix* J, const gsl_vector* f) {
  double largest = 0;
  for (std::size_t j = 0; j < J->size2; ++j) {
    double g = 0;  // (J^T f)_j, the gradient of ½‖f‖²
    for (std::size_t k = 0; k < J->size1; ++k) g += gsl_matrix_get(J, k, j) * gsl_vector_get(f, k);
    largest = std::max(largest, std::abs(g));
  }
  return largest;
}

}  // namespace

FitResult fit_parameters(const PredictFunction& predict, const std::vector<double>& observed,
                         const std::vector<FreeParameter>& free, const std::vector<double>& start,
                         const FitOptions& options, const std::vector<std::size_t>& included_given) {
  std::vector<std::size_t> included = included_given;
  if (included.empty()) {
    included.resize(observed.size());
    std::iota(included.begin(), included.end(), std::size_t(0));
  }
  const std::size_t n = included.size(), p = free.size();
  CNNPAR_ASSERT(p > 0 && n >= p && start.size() == p, "a fit needs parameters and at least as many observations");
  const GslErrorsReturned gsl_errors;
  Problem problem{&predict, &observed, &included, &free, nullptr, false, {}, 0};

  gsl_multifit_nlinear_parameters parameters = gsl_multifit_nlinear_default_parameters();
  parameters.trs = gsl_multifit_nlinear_trs_lm;  // Levenberg–Marquardt; the Jacobian by forward differences
  const std::unique_ptr<gsl_multifit_nlinear_workspace, WorkspaceDeleter> workspace(
      gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &parameters, n, p));
  CNNPAR_ASSERT(workspace != nullptr, "GSL allocates its workspace");
  const std::unique_ptr<gsl_vector, VectorDeleter> x0(gsl_vector_alloc(p));
  for (std::size_t j = 0; j < p; ++j) gsl_vector_set(x0.get(), j, to_coordinate(free[j], start[j]));
  gsl_multifit_nlinear_fdf fdf{};
  fdf.f = relative_residuals;
  fdf.df = nullptr;
  fdf.fvv = nullptr;
  fdf.n = n;
  fdf.p = p;
  fdf.params = &problem;

  // The start values alone first: the platform's refusal of them is bad input. (The start's
  // finite-difference Jacobian may step out of range like any trial step.)
  {
    const std::unique_ptr<gsl_vector, VectorDeleter> f0(gsl_vector_alloc(n));
    relative_residuals(x0.get(), &problem, f0.get());
    if (problem.error) std::rethrow_exception(problem.error);
    problem.started = true;
  }
  int status = gsl_multifit_nlinear_init(x0.get(), &fdf, workspace.get());
  if (problem.error) rethrow_from_fit(problem.error);
  CNNPAR_ASSERT(status == GSL_SUCCESS, "GSL starts the fit");
  const gsl_matrix* J = gsl_multifit_nlinear_jac(workspace.get());
  double largest_column = 0;
  std::vector<double> column_norm(p, 0.0);
  for (std::size_t j = 0; j < p; ++j) {
    for (std::size_t k = 0; k < n; ++k) column_norm[j] += gsl_matrix_get(J, k, j) * gsl_matrix_get(J, k, j);
    column_norm[j] = std::sqrt(column_norm[j]);
    largest_column = std::max(largest_column, column_norm[j]);
  }
  for (std::size_t j = 0; j < p; ++j)
    if (!(column_norm[j] > 0))
      throw InputError("command line", "--free", free[j].path,
                       fmt::format("no observation depends on {} at its start {}{}, so the fit cannot determine it",
                                   free[j].path, start[j], free[j].unit_label().empty() ? "" : " " + free[j].unit_label()));

  int info = 0;
  status = gsl_multifit_nlinear_driver(std::size_t(options.max_iterations), options.xtol, options.gtol, 0.0, nullptr,
                                       nullptr, &info, workspace.get());
  if (problem.error) rethrow_from_fit(problem.error);
  FitResult result;
  result.iterations = int(gsl_multifit_nlinear_niter(workspace.get()));
  const gsl_vector* f = gsl_multifit_nlinear_residual(workspace.get());
  J = gsl_multifit_nlinear_jac(workspace.get());
  if (status == GSL_SUCCESS) {
    result.stop_reason = info == 1 ? "small step" : info == 2 ? "small gradient" : "converged";
  } else if (info == GSL_ENOPROG && infinity_norm_of_gradient(J, f) <= std::sqrt(options.gtol)) {
    // No step lowered the cost on the first try and the gradient vanishes: the start is
    // already the minimum (an exact start, or a leave-one-out refit from the full fit).
    result.stop_reason = "start already optimal";
  } else {
    // The platform's last refusal of a step says where the fit was heading.
    const std::string heading =
        problem.out_of_range.empty() ? "" : fmt::format("; the last step it refused: {}", problem.out_of_range);
    if (status == GSL_EMAXITER)
      throw FitNotConverged(fmt::format("the fit did not converge within {} iteration{} (--max-iterations){}",
                                        options.max_iterations, options.max_iterations == 1 ? "" : "s", heading));
    throw FitNotConverged(fmt::format("the fit did not converge: GSL stopped after {} iterations: {}{}", result.iterations,
                                      gsl_strerror(info == GSL_ENOPROG ? GSL_ENOPROG : status), heading));
  }

  result.refused_steps = problem.refused;
  result.last_refusal = problem.out_of_range;
  result.values = values_at(free, gsl_multifit_nlinear_position(workspace.get()));
  gsl_blas_ddot(f, f, &result.chi_square);
  result.dof = int(n) - int(p);
  const std::unique_ptr<gsl_matrix, MatrixDeleter> covariance(gsl_matrix_alloc(p, p));
  gsl_multifit_nlinear_covar(J, 0.0, covariance.get());
  for (std::size_t j = 0; j < p; ++j) {
    double column = 0;
    for (std::size_t k = 0; k < n; ++k) column += gsl_matrix_get(J, k, j) * gsl_matrix_get(J, k, j);
    result.identifiable.push_back(column > 0);
    if (result.dof > 0 && column > 0) {
      // σ of the coordinate, scaled by the residual variance, then in the value's unit.
      const double sigma_x = std::sqrt(gsl_matrix_get(covariance.get(), j, j) * result.chi_square / result.dof);
      result.sigma.push_back(sigma_x * value_per_coordinate(free[j], result.values[j]));
    } else {
      result.sigma.push_back(std::nullopt);
    }
  }
  try {
    result.predicted = predict(result.values);
  } catch (...) {
    rethrow_from_fit(std::current_exception());
  }
  return result;
}

}  // namespace cnnpar
