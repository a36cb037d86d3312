#pragma once
// `cnnpar fit`: platform parameters fitted to observations by nonlinear least squares (GSL's
// trust-region Levenberg–Marquardt, gsl_multifit_nlinear). The parameters are platform paths
// of `--set` (workload/overrides.hpp), each one number for the whole platform; observations are
// the published numbers of studies (predicted the way `cnnpar report` predicts them:
// predict_study + paper_comparisons) and the mean iteration times of measured traces
// (predicted on the schedule rebuilt from the trace's metadata). Predictions inside the fit
// use the engine the caller passes (the analytic one: fast and deterministic).
//
// Residuals are relative errors, prediction / observation − 1, so an iteration time of 2 ms
// and a speedup of 60 weigh alike. Positive quantities are fitted in log space, fractions
// (efficiencies, busy_bandwidth_fraction) as logits, so a step never leaves their range.
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/sweep.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "workload/strategy.hpp"
#include "workload/study.hpp"
#include "model/trace.hpp"

namespace cnnpar {

/** The fit did not converge (GSL reported failure, the iteration limit was reached, or a step
 *  left the platform's valid range). main maps it, like any failure, to status 1. */
class FitNotConverged : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** One parameter the fit moves (`--free PATH[=START]`). */
struct FreeParameter {
  std::string path;       ///< a platform path of --set: "network.bandwidth", "nodes.efficiency.gemm"
  std::string unit;       ///< base unit of its JSON spelling: "Bps", "s", "f", "B", or "" (a plain number)
  double start = 0;       ///< start value, in `unit`
  bool fraction = false;  ///< a fraction in (0, 1]: fitted as logit(value), else as log(value)
  std::string note;       ///< why the start differs from the platform's value, if it does
  /** The override text of `value` ("1.25e+09Bps"), exact (shortest round-trip digits). */
  std::string text(double value) const;
  /** "B/s", "s", "FLOP/s", "B" or "" for tables. */
  std::string unit_label() const;
};

/** Resolves "PATH" or "PATH=START" against a platform document read from `file`: the start is
 *  START (in the platform's units, "1Gbps"), else the value the platform has at PATH, else the
 *  documented default of an absent optional field (nodes.efficiency.CLASS: default_efficiency;
 *  nodes.call_overhead, nodes.core_bandwidth, iteration_overhead, input_per_image,
 *  network.reduction_rate: 0;
 *  network.busy_bandwidth_fraction: 1). A fraction that starts on its bound 1 starts at 0.5
 *  (a logit cannot leave 1), said in `note`.
 *  @throws InputError(origin, flag, text, reason) for a strategy option, a path the platform
 *  does not have, a value that is not a number or quantity, a START the platform refuses, or a
 *  start of 0 (log space cannot leave it: give a START). */
FreeParameter resolve_free_parameter(const nlohmann::json& document, const std::string& file, const std::string& text,
                                     const std::string& origin = "command line", const std::string& flag = "--free");

/** The platform document with values[i] (in free[i].unit) at free[i].path, parsed.
 *  @throws InputError(origin, flag, "PATH=VALUE", reason) for a value the platform refuses. */
Platform platform_with_values(const nlohmann::json& document, const std::string& file,
                              const std::vector<FreeParameter>& free, const std::vector<double>& values,
                              const std::string& origin = "command line", const std::string& flag = "--free");

/** One observed number. */
struct Observation {
  std::string source;    ///< study name, or trace file
  std::string file;      ///< the study's or trace's file (error messages)
  std::string series;    ///< study series label ("" for a trace)
  std::string quantity;  ///< "speedup", "iteration_s" or "max_speedup"
  int nodes = 0;         ///< node count (0 for a maximum speedup: its node count is predicted)
  std::string network;   ///< network name
  double observed = 0;   ///< published or measured (iteration_s in seconds)
  int measured_iterations = 0;  ///< a trace's measured iterations (0 for published numbers)
  std::string path;          ///< JSON path of the value in `file` ("/series/1/paper/speedup_at/128")
  std::string network_path;  ///< JSON path that names its network ("/series/1/network", "/metadata/network")
  /** What was run and measured: network, strategy options, batch, quantity and node count (the
   *  node list for a maximum). Two studies that publish the same number share it. */
  std::string configuration;
  /** "lee k=9 f=2: speedup at 128 nodes", "iteration time at 2 nodes (mean of 4 measured)". */
  std::string label() const;
};

/** `--only KEY=VALUE[,VALUE...]` (all given filters hold): `series` (labels), `nodes` (node
 *  counts; drops maximum speedups, which have none), `quantity` (speedup, iteration_s,
 *  max_speedup). */
struct ObservationFilter {
  std::vector<std::string> series;
  std::vector<int> nodes;
  std::vector<std::string> quantities;
  bool keeps(const std::string& series_label, const std::string& quantity, int nodes) const;
};
/** @throws InputError(origin, flag, text, reason) for an unknown key or a bad value. */
ObservationFilter parse_observation_filter(const std::vector<std::string>& texts, const std::string& origin = "command line",
                                           const std::string& flag = "--only");

/** The observations of a fit and how to predict each on a candidate platform. */
class Observations {
 public:
  explicit Observations(EngineFactory make_engine) : make_engine_(std::move(make_engine)) {}

  /** Every published number (series' `paper`) of `study` read from `file` that `filter` keeps
   *  and that lies on one of the study's node counts, in `cnnpar report`'s order.
   *  @returns how many were added. @throws InputError for a series whose network does not load. */
  std::size_t add_study(const Study& study, const std::string& file, const ObservationFilter& filter = {});
  /** The measured mean iteration time of `trace` (read from `file`), predicted on the schedule
   *  rebuilt from its metadata (network, strategy and options, batch, ranks, iterations,
   *  warm-up, im2col columns, slowed-down ranks; a `real` trace's FP32 messages).
   *  @throws InputError naming the file and the metadata path that does not do. */
  void add_trace(const Trace& trace, const std::string& file);

  const std::vector<Observation>& list() const { return observations_; }
  std::size_t size() const { return observations_.size(); }
  /** The observed values, in list order. */
  std::vector<double> observed() const;
  /** The predicted value of every observation on `platform`, in list order.
   *  @throws InputError when a configuration does not fit the platform (too few nodes). */
  std::vector<double> predict(const Platform& platform) const;

 private:
  struct StudyGroup {
    Study study;        ///< reduced to the kept paper numbers and the node counts they need
    std::size_t first;  ///< index of its first observation
    std::size_t count;
  };
  struct TraceGroup {
    Network network;
    StrategyOptions options;
    std::map<int, double> slowdown;  ///< rank -> factor (metadata.slowdown)
    bool executor_elements = false;  ///< measured by cnnpar-run: messages of FP32 elements
    std::size_t index;
  };
  EngineFactory make_engine_;
  std::vector<Observation> observations_;
  std::vector<StudyGroup> studies_;
  std::vector<TraceGroup> traces_;
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

/** Mean of |predicted / observed − 1| in percent. */
double mean_abs_error_percent(const std::vector<double>& predicted, const std::vector<double>& observed);
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
