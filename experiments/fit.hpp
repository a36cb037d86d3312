#pragma once
// `cnnpar fit`: platform parameters fitted to observations by nonlinear least squares (GSL's
// trust-region Levenberg–Marquardt, gsl_multifit_nlinear). The parameters are platform paths
// of `--set` (workload/overrides.hpp), each one number for the whole platform; observations are
// the published numbers of studies (predicted the way `cnnpar report` predicts them:
// predict_study + paper_comparisons) and the mean iteration times of measured traces
// (predicted on the schedule rebuilt from the trace's metadata). Predictions inside the fit
// use the engine the caller passes (the analytic one: fast and deterministic).
//
// The parts: the free parameters (fit_free_parameters.hpp), the observations
// (fit_observations.hpp), the least-squares solver (fit_solver.hpp), how well the fit predicts
// what it did not see (fit_out_of_sample.hpp) and its report (fit_report.hpp).
#include "experiments/fit_free_parameters.hpp"
#include "experiments/fit_observations.hpp"
#include "experiments/fit_out_of_sample.hpp"
#include "experiments/fit_report.hpp"
#include "experiments/fit_solver.hpp"
