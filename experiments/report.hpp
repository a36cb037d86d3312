#pragma once
// Study reports: every series of a study predicted over its node counts, written as CSV per
// series, a Markdown report that sets the prediction beside the paper's published numbers,
// gnuplot plots (SVG: speedup, overlap ratio, a timeline of one iteration) and a
// self-contained index.html with the plots inlined, the comparison with the paper, the
// per-layer breakdown and the timeline of the largest configuration.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/layer_breakdown.hpp"
#include "experiments/sweep.hpp"
#include "model/trace.hpp"
#include "workload/study.hpp"

namespace cnnpar {

struct SeriesResult {
  std::string label;
  std::string file_stem;  ///< label turned into a file name ("lee-k-9-f-2")
  std::vector<SweepRow> rows;
  ConfigColumns config;   ///< network, platform, engine, strategy and options of the rows (CSV)
  /** veeriah and conv_split: the component split per node count (analysis/components.hpp;
   *  empty for other strategies). */
  std::map<int, nlohmann::json> components;
  /** Weak scaling: each row's global batch (rows[i] ↔ row_batches[i]); empty otherwise. */
  std::vector<std::int64_t> row_batches;
};

/** The first series at the study's largest node count, replayed with every record kept. */
struct LargestConfiguration {
  std::string series_label;
  int nodes = 0;
  Trace trace;
  std::vector<LayerPhaseBreakdown> layers;  ///< its per-layer breakdown
};

struct StudyResult {
  std::vector<SeriesResult> series;
  std::vector<LargestConfiguration> largest;  ///< empty or one
};

/** One line of "prediction against the paper" (report.md and index.html). */
struct PaperComparison {
  std::string series;
  std::string quantity;      ///< "speedup at 128 nodes", "maximum speedup"
  double paper = 0;
  double predicted = 0;
  int predicted_nodes = 0;   ///< where the predicted value is (the maximum's node count)
  double difference_percent = 0;  ///< 100·(predicted − paper) / paper
  bool seconds = false;      ///< an iteration time (seconds), else a speedup
};
std::vector<PaperComparison> paper_comparisons(const Study& study, const StudyResult& result);

/** A published ordering (StudyOrdering) checked against the prediction. */
struct OrderingCheck {
  std::string claim;
  bool reproduced = false;
  std::string predicted;  ///< what the prediction shows, e.g. "f=1 is best (65.3 against 63.8)"
};
std::vector<OrderingCheck> ordering_checks(const Study& study, const StudyResult& result);

/** Checks everything a study will run before any of it runs: its platform and networks load,
 *  and every series is a valid strategy at every node count (one the platform has).
 *  @throws InputError naming the study file, path and value. */
void check_study(const Study& study);

/** Predicts every series of `study` on engines from `make_engine`.
 *  @throws InputError for a bad network, platform or strategy option of any series. */
StudyResult run_study(const Study& study, const EngineFactory& make_engine, const SweepOptions& options = {});
/** The series of `study` predicted on `platform` (not the study's own: `cnnpar fit` predicts
 *  them on candidate platforms), without the largest configuration.
 *  @throws InputError for a bad network or strategy option of any series. */
StudyResult predict_study(const Study& study, const Platform& platform, const EngineFactory& make_engine,
                          const SweepOptions& options = {});

/** "lee k=9 f=2" -> "lee-k-9-f-2". */
std::string file_stem(const std::string& label);

/** The Markdown report: speedup per series and node count, then prediction versus paper. */
std::string study_markdown(const Study& study, const StudyResult& result);

/** Two series whose speedups agree within kCoincideRelative at every node count: drawn on top
 *  of each other, which the key and the Markdown then say. */
struct Coincidence {
  std::size_t earlier = 0, later = 0;  ///< indices into StudyResult::series
  double largest_relative = 0;         ///< max |a - b| / max(a, b) over the node counts
};
/// 1 %: below a pixel on the plot's log axis over 7 doublings.
inline constexpr double kCoincideRelative = 0.01;
/** For each series, the first earlier one it coincides with (if any). */
std::vector<Coincidence> coinciding_series(const StudyResult& result);

/** How series i is drawn in every plot of a report: the first 6 differ in colour and point
 *  type, the first 5 in dash type too, so identical series stay visible. */
struct PlotStyle {
  std::string colour;        ///< "#RRGGBB", Okabe–Ito without yellow
  int dash_type = 1;         ///< gnuplot dash type
  int point_type = 6;        ///< gnuplot point type of the prediction (an open shape)
  int paper_point_type = 7;  ///< the paper's markers: the filled twin
};
PlotStyle plot_style(std::size_t series_index);

/** The common head of a report's gnuplot scripts: white SVG, log2 node axis from 1 to
 *  `most_nodes`, log2 y axis when `log_y`, key at the top left, CSV input. */
std::string gnuplot_preamble(const std::string& title, const std::string& svg_name, const std::string& ylabel,
                             int most_nodes, bool log_y);

/** A gnuplot script that plots speedup against nodes (log-log) from the CSVs beside it into
 *  `svg_name`: the linear speedup line, one line per series and the paper's published values
 *  as markers. */
std::string study_gnuplot(const Study& study, const StudyResult& result, const std::string& svg_name);

/** Overlap ratio R (percent, linear axis from 0 to 100) against nodes (log2 axis), one line per
 *  series from the CSVs beside it. */
std::string overlap_gnuplot(const Study& study, const StudyResult& result, const std::string& svg_name);

/** A timeline of the first measured iteration of `trace` on ranks 0, 1 and the last: a row of
 *  compute ops, one of collectives (comm_start to comm_end) and one of waits per rank, in ms
 *  from the iteration's start. */
std::string timeline_gnuplot(const Trace& trace, const std::string& title, const std::string& svg_name);

/** The study's page: title, source, the plots (SVG documents by file name, inlined; a plot
 *  missing from `svgs` is said to be missing), predicted speedups, the comparison with the
 *  paper, and the largest configuration's per-layer breakdown and timeline. Every text taken
 *  from input is HTML-escaped. No external resource. */
std::string study_html(const Study& study, const StudyResult& result, const std::vector<std::pair<std::string, std::string>>& svgs);

/** One entry of reports/index.html. */
struct ReportIndexEntry {
  std::string folder;  ///< the study's folder under the report root
  std::string title, source;
  std::string headline;  ///< e.g. "lee k=9 f=2: 52.6× at 128 nodes (paper 17.8×)"
};
std::string reports_index_html(const std::vector<ReportIndexEntry>& entries);
/** The headline of a study: its comparison with the paper at the largest node count, else its
 *  first series' speedup there. */
std::string study_headline(const Study& study, const StudyResult& result);

/** HTML-escaped text (& < > " '). */
std::string html_escaped(const std::string& text);

/** Writes DIR/<series>.csv, DIR/report.md, DIR/speedup.gp, DIR/overlap.gp, DIR/timeline.gp
 *  (when the result has a largest configuration), DIR/index.html and, when `plot` and gnuplot
 *  runs, the SVGs (inlined in index.html too) into DIR, a fresh folder
 *  (OutputTransaction::folder stages it).
 *  @throws InterruptedError when gnuplot is interrupted.
 *  @returns false if the plots were asked for but gnuplot failed (the rest is written). */
bool write_study_report(const Study& study, const StudyResult& result, const std::string& dir, bool plot);

}  // namespace cnnpar
