#pragma once
// `cnnpar validate GRID.json`: for every configuration of a validation grid, calibrate (once per
// network, link setting and rank count), run cnnpar-run for real on the testbed or a cluster,
// predict the same schedule with the engines from the calibrated platform, and write the
// fidelity report (experiments/validation.hpp). Resumable: a configuration whose result file
// exists with the same settings is not run again, nor a calibration that exists.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "experiments/validate_target.hpp"
#include "experiments/validation.hpp"

namespace cnnpar {

/** A run's time limit: run_allowance_s (launch, MPI_Init, set-up, the trace's write) plus
 *  kRunTimeFactor times its predicted duration. A run past it hangs (a launch that never
 *  completed was seen once in CI); it is ended and run again like a failed run. */
inline constexpr double kRunLaunchAllowance_s = 120;  ///< the default run_allowance_s
inline constexpr double kRunTimeFactor = 10;

/** The grid's fit (experiments/validation_fit.hpp), in builds that have GSL. */
struct ValidationFitHooks {
  /** Checks the fit's free paths on the grid's platform. @throws InputError. */
  std::function<void(const ValidationGrid& grid)> check;
  /** Fits the finished runs (their traces under RUNS/KEY/measured.json) into the report. */
  std::function<void(const ValidationGrid& grid, ValidationReport& report, const std::string& runs)> apply;
};

struct ValidationRunOptions {
  std::string out;     ///< work folder: calibrations, runs, traces, logs ("" = validation-GRIDNAME)
  std::string report;  ///< report.json, .md and .csv go here ("" = the work folder)
  std::vector<std::string> engines = {"analytic", "simgrid"};  ///< engines that predict
  std::string mpiexec;   ///< a cluster's launcher (no testbed)
  std::string hostfile;  ///< a cluster's MPICH host file (no testbed)
  std::string testbed = kValidationTestbedName;
  bool keep_testbed = false;
  bool report_only = false;  ///< run nothing: the report of what finished
  /** Run nothing: predict every finished run again from its spec.json and calibration (after
   *  an engine changed), rewrite its result, then the report. */
  bool repredict = false;
  double run_allowance_s = kRunLaunchAllowance_s;  ///< seconds a run may take beyond kRunTimeFactor x predicted
  ValidationFitHooks fit;    ///< none: a grid with a fit is refused
  std::function<void(const std::string& line)> say;  ///< a line per calibration and configuration
};

struct ValidationOutcome {
  ValidationReport report;
  std::size_t configurations = 0;
  int failures = 0;  ///< configurations that could not be measured
  std::string report_folder;
};

/** @throws InputError for an engine that is not analytic or simgrid (a comma-separated list,
 *  named as --engines). */
std::vector<std::string> parse_validation_engines(const std::string& text);

class ValidationRun {
 public:
  ValidationRun(ValidationGrid grid, ValidationRunOptions options);
  ~ValidationRun();
  /** What needs no run: the target (testbed or cluster) against the grid, the outputs, the fit.
   *  @throws InputError. */
  void check();
  /** Calibrates, predicts, runs and compares what is not finished, then writes the report.
   *  @throws InterruptedError on Ctrl-C (what finished is kept). */
  ValidationOutcome run();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cnnpar
