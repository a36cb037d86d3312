// `cnnpar report`: predicts every study of scenarios/studies (or the ones named) and writes
// reports/<study>/ — CSV per series, report.md beside the paper's numbers, speedup.svg.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/report.hpp"
#include "cli/commands.hpp"
#include "cli/flags.hpp"
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

  for (const Study& study : studies) check_study(study);
  std::vector<std::string> dirs;
  for (const Study& study : studies) {
    dirs.push_back((std::filesystem::path(o.out) / study.name).string());
    if (std::count(dirs.begin(), dirs.end(), dirs.back()) > 1)
      throw InputError("command line", "--study", study.name, "the same study is named twice");
  }
  // All studies are predicted and written to staged folders; only then do they replace the
  // earlier reports, so an error or Ctrl-C leaves those as they were. A --out that does not
  // exist yet is staged whole.
  OutputTransaction outputs;
  std::error_code error;
  const bool new_out = !std::filesystem::exists(o.out, error);
  std::string staged_out;
  if (new_out) {
    check_output_folder(o.out, "--out");
  } else {
    for (const std::string& dir : dirs) check_output_folder(dir, "--out");
  }
  const auto staged_folder = [&](std::size_t i) {
    if (!new_out) return outputs.folder(dirs[i]);
    if (staged_out.empty()) staged_out = outputs.folder(o.out);
    const std::string dir = (std::filesystem::path(staged_out) / studies[i].name).string();
    std::filesystem::create_directory(dir);
    return dir;
  };

  int unplotted = 0;
  std::vector<std::string> summaries;
  for (std::size_t i = 0; i < studies.size(); ++i) {
    const Study& study = studies[i];
    Progress progress(fmt::format("study {}", study.name), o.progress, o.quiet);
    SweepOptions sweep;
    sweep.parallel = !o.serial;
    const StudyResult result = run_study(study, [] { return make_analytic_engine(); }, sweep);
    progress.finish();
    const bool plotted = write_study_report(study, result, staged_folder(i), !o.no_plot);
    if (!o.no_plot && !plotted) ++unplotted;
    summaries.push_back(fmt::format("{}: {} series over {} node counts -> {}/report.md{}\n", study.name,
                                    result.series.size(), study.nodes.size(), dirs[i],
                                    !o.no_plot && plotted ? " and speedup.svg" : ""));
  }
  outputs.commit();
  if (!o.quiet)
    for (const std::string& line : summaries) std::fputs(line.c_str(), stdout);
  if (unplotted > 0 && !o.quiet)
    std::fprintf(stderr, "cnnpar: gnuplot did not run for %d study(ies); the speedup.gp scripts are written\n", unplotted);
  return 0;
}

}  // namespace

Runner add_report_command(CLI::App& app) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "predict the studies of scenarios/studies and write reports beside the papers' numbers");
  sub->add_option("--study", options->studies, "study name (scenarios/studies) or JSON path; repeatable (default: all)");
  sub->add_option("--out", options->out, "write one sub-folder per study into this folder (default: reports)");
  sub->add_flag("--no-plot", options->no_plot, "do not run gnuplot (the .gp script is still written)");
  sub->add_flag("--serial", options->serial, "one node count at a time (no threads)");
  flags::quiet(*sub, options->quiet);
  flags::progress(*sub, options->progress);
  return [options] { return run_report(*options); };
}

}  // namespace cnnpar::cli
