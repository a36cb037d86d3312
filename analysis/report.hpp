#pragma once
// Study reports: every series of a study predicted over its node counts, written as CSV per
// series, a Markdown report that sets the prediction beside the paper's published numbers,
// and a gnuplot speedup plot (SVG).
#include <string>
#include <vector>

#include "analysis/sweep.hpp"
#include "model/study.hpp"

namespace cnnpar {

struct SeriesResult {
  std::string label;
  std::string file_stem;  ///< label turned into a file name ("lee-k-9-f-2")
  std::vector<SweepRow> rows;
  ConfigColumns config;   ///< network, platform, engine, strategy and options of the rows (CSV)
};

struct StudyResult {
  std::vector<SeriesResult> series;
};

/** Predicts every series of `study` on engines from `make_engine`.
 *  @throws InputError for a bad network, platform or strategy option of any series. */
/** Checks everything a study will run before any of it runs: its platform and networks load,
 *  and every series is a valid strategy at every node count (one the platform has).
 *  @throws InputError naming the study file, path and value. */
void check_study(const Study& study);

StudyResult run_study(const Study& study, const EngineFactory& make_engine, const SweepOptions& options = {});

/** "lee k=9 f=2" -> "lee-k-9-f-2". */
std::string file_stem(const std::string& label);

/** The Markdown report: speedup per series and node count, then prediction versus paper. */
std::string study_markdown(const Study& study, const StudyResult& result);

/** A gnuplot script that plots speedup against nodes from the CSVs beside it into `svg_name`. */
std::string study_gnuplot(const Study& study, const StudyResult& result, const std::string& svg_name);

/** Writes DIR/<series>.csv, DIR/report.md, DIR/speedup.gp and, when `plot` and gnuplot runs,
 *  DIR/speedup.svg into DIR, a fresh folder (OutputTransaction::folder stages it).
 *  @throws InterruptedError when gnuplot is interrupted.
 *  @returns false if the plot was asked for but gnuplot failed (the rest is written). */
bool write_study_report(const Study& study, const StudyResult& result, const std::string& dir, bool plot);

}  // namespace cnnpar
