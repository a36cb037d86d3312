// `cnnpar report`: predicts every study of scenarios/studies (or the ones named) and writes
// reports/<study>/ — CSV per series, report.md beside the paper's numbers, speedup.svg.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/report.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "model/error.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"

namespace cnnpar::cli {

namespace {

struct ReportOptions {
  std::vector<std::string> studies;  ///< names or paths; empty: every known study
  std::string out = "reports";
  bool no_plot = false;
  bool serial = false;
  bool quiet = false;
  bool progress = false;
};

int run_report(const ReportOptions& o) {
  if (o.out.empty()) throw InputError("command line", "--out", "", "an output folder is needed");
  std::vector<std::string> names = o.studies.empty() ? scenario_names("studies") : o.studies;
  if (names.empty()) throw InputError("command line", "--study", "", "no studies found (scenarios/studies)");
  // Every study is read and checked before anything is written.
  std::vector<Study> studies;
  for (const std::string& name : names) studies.push_back(load_study(name));

  int unplotted = 0;
  for (const Study& study : studies) {
    Progress progress(fmt::format("study {}", study.name), o.progress, o.quiet);
    SweepOptions sweep;
    sweep.parallel = !o.serial;
    const StudyResult result = run_study(study, [] { return make_analytic_engine(); }, sweep);
    progress.finish();
    const std::string dir = (std::filesystem::path(o.out) / study.name).string();
    const bool plotted = write_study_report(study, result, dir, !o.no_plot);
    if (!o.no_plot && !plotted) ++unplotted;
    if (!o.quiet) {
      std::printf("%s: %zu series over %zu node counts -> %s/report.md%s\n", study.name.c_str(), result.series.size(),
                  study.nodes.size(), dir.c_str(), !o.no_plot && plotted ? " and speedup.svg" : "");
    }
  }
  if (unplotted > 0 && !o.quiet)
    std::fprintf(stderr, "cnnpar: gnuplot did not run for %d study(ies); the speedup.gp scripts are written\n", unplotted);
  return 0;
}

}  // namespace

Runner add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "predict the studies of scenarios/studies and write reports beside the papers' numbers");
  sub->add_option("--study", options->studies, "study name (scenarios/studies) or JSON path; repeatable (default: all)");
  sub->add_option("--out", options->out, "folder that receives one sub-folder per study (default: reports)");
  sub->add_flag("--no-plot", options->no_plot, "do not run gnuplot (the .gp script is still written)");
  sub->add_flag("--serial", options->serial, "one node count at a time (no threads)");
  sub->add_flag("-q,--quiet", options->quiet, "print nothing on success");
  sub->add_flag("--progress", options->progress, "show progress even when stderr is not a terminal");
  return [options] { return run_report(*options); };
}

}  // namespace cnnpar::cli
