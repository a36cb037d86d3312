// `cnnpar validate GRID.json` (experiments/validation_run.hpp): its flags, the fit's wiring in
// builds with GSL, and the summary lines.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "apps/cnnpar/commands.hpp"
#include "apps/common/flags.hpp"
#include "engines/registry.hpp"
#include "experiments/validation_run.hpp"
#include "model/scenarios.hpp"
#include "workload/run_spec.hpp"
#ifdef CNNPAR_HAVE_FIT
#include "experiments/validation_fit.hpp"
#endif

namespace cnnpar::cli {

namespace {

struct ValidateOptions {
  std::string grid;
  std::string out;     ///< work folder: calibrations, runs, traces, logs
  std::string report;  ///< report folder (report.json, .md, .csv); default: the work folder
  std::string engines = "analytic,simgrid";
  std::string mpiexec;
  std::string hostfile;
  std::string testbed = kValidationTestbedName;
  bool keep_testbed = false;
  bool report_only = false;
  bool repredict = false;
  bool quiet = false;  ///< else a line per calibration and per configuration (stdout)
  double run_allowance_s = kRunLaunchAllowance_s;
};

int run_validate(const ValidateOptions& o) {
  check_run_number(RunNumber::timeout_s, o.run_allowance_s, "command line", "--run-allowance-s");
  ValidationGrid grid = load_validation_grid(o.grid);
  ValidationRunOptions options{.out = o.out,
                               .report = o.report,
                               .engines = parse_validation_engines(o.engines),
                               .mpiexec = o.mpiexec,
                               .hostfile = o.hostfile,
                               .testbed = o.testbed,
                               .keep_testbed = o.keep_testbed,
                               .report_only = o.report_only,
                               .repredict = o.repredict,
                               .run_allowance_s = o.run_allowance_s};
#ifdef CNNPAR_HAVE_FIT
  options.fit.check = [](const ValidationGrid& grid) {
    const ScenarioDocument base = load_scenario("platforms", grid.platform);
    for (std::size_t i = 0; i < grid.fit.free.size(); ++i)
      (void)resolve_free_parameter(base.json, base.origin, grid.fit.free[i], grid.file, fmt::format("/fit/free/{}", i));
  };
  options.fit.apply = [](const ValidationGrid& grid, ValidationReport& report, const std::string& runs) {
    std::vector<ValidationFitInput> inputs;
    for (const ConfigResult& result : report.results)
      inputs.push_back({&result, (std::filesystem::path(runs) / result.key / "measured.json").string()});
    const ValidationFit fit = fit_validation(grid, inputs, [] { return make_engine(EngineSettings{}); });
    report.fit = to_json(fit);
    report.fit_markdown = validation_fit_markdown(fit);
  };
#endif
  if (!o.quiet)
    options.say = [](const std::string& line) {
      fmt::print("{}\n", line);
      std::fflush(stdout);
    };
  ValidationRun validation(std::move(grid), std::move(options));
  validation.check();
  const ValidationOutcome outcome = validation.run();
  if (!o.quiet) {
    const ValidationReport& report = outcome.report;
    fmt::print("cnnpar validate: {} of {} configurations measured; report in {}/report.{{json,md,csv}}\n",
               report.results.size(), outcome.configurations, outcome.report_folder);
    for (const auto& [engine, s] : report.engines)
      fmt::print("  {:<8} MAPE {:.1f} % (max {:.1f} %, {} within {:g} %), R mean abs. error {:.1f} points, rankings {} of {} as measured\n",
                 engine, s.mape_percent, s.max_abs_error_percent, s.within_tolerance,
                 report.iteration_tolerance_percent, s.r_mae_points, s.ranking_groups_agreeing, report.rankings.size());
  }
  return outcome.failures > 0 ? 1 : 0;
}

}  // namespace

Runner add_validate_command(CLI::App& app) {
  auto options = std::make_shared<ValidateOptions>();
  ValidateOptions& o = *options;
  CLI::App* sub = app.add_subcommand(
      "validate", "calibrate, predict (analytic and SimGrid), run for real (testbed or cluster) and report the fidelity of every configuration of a grid");
  sub->add_option("grid", o.grid, "validation grid JSON (docs/formats.md \"Validation grid\"), e.g. scenarios/validation/validation.json")
      ->required();
  sub->add_option("--out", o.out,
                  "work folder: calibrations, every run's traces and logs, the finished results (default validation-GRIDNAME); "
                  "run again to resume");
  sub->add_option("--report", o.report, "write report.json, report.md and report.csv here (default: the work folder)");
  sub->add_option("--engines", o.engines, "engines that predict, comma-separated (default analytic,simgrid)");
  flags::mpiexec(*sub, o.mpiexec)->description(
      "run on a cluster with this launcher (e.g. \"srun --mpi=pmi2\", \"mpiexec -f hosts\") instead of the testbed; "
      "the grid's links must then be native");
  flags::hostfile(*sub, o.hostfile)->description("run on a cluster: MPICH host file (one host per rank), no testbed");
  sub->add_option("--testbed", o.testbed, "name of the testbed to create (or reuse) for the runs (default " +
                                              std::string(kValidationTestbedName) + ")");
  sub->add_flag("--keep-testbed", o.keep_testbed, "leave the testbed up after the runs (cnnpar testbed destroy removes it)");
  sub->add_flag("--report-only", o.report_only, "run nothing: write the report of the finished configurations");
  sub->add_flag("--repredict", o.repredict,
                "run nothing: predict every finished configuration again from its run's spec.json and calibration "
                "(after the engines changed), rewrite its result and the engines' traces, then the report");
  sub->add_option("--run-allowance-s", o.run_allowance_s,
                  fmt::format("a run still going this many seconds past {:g} times its predicted duration is ended "
                              "and run again (a hung launch)",
                              kRunTimeFactor))
      ->capture_default_str();
  flags::quiet(*sub, o.quiet);
  return [options] { return run_validate(*options); };
}

}  // namespace cnnpar::cli
