// A study's report folder written: the series CSVs, report.md, the gnuplot scripts, the SVGs
// gnuplot draws from them, and index.html.
#include "experiments/report.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"

namespace cnnpar {

namespace {

// A weak-scaling series states each row's own batch in the batch column.
std::string series_csv(const SeriesResult& series) {
  if (series.row_batches.size() != series.rows.size()) return sweep_csv(series.config, series.rows);
  std::string out = std::string(kRowCsvHeader) + "\n";
  for (std::size_t i = 0; i < series.rows.size(); ++i) {
    ConfigColumns config = series.config;
    config.batch = series.row_batches[i];
    out += row_csv_line(config, series.rows[i]);
  }
  return out;
}

}  // namespace

bool write_study_report(const Study& study, const StudyResult& result, const std::string& dir, bool plot) {
  namespace fs = std::filesystem;
  for (const SeriesResult& series : result.series)
    write_file_atomic((fs::path(dir) / (series.file_stem + ".csv")).string(), series_csv(series));
  write_file_atomic((fs::path(dir) / "report.md").string(), study_markdown(study, result));
  std::vector<std::pair<std::string, std::string>> scripts = {
      {"speedup", study_gnuplot(study, result, "speedup.svg")}, {"overlap", overlap_gnuplot(study, result, "overlap.svg")}};
  for (const LargestConfiguration& largest : result.largest)
    scripts.push_back({"timeline", timeline_gnuplot(largest.trace,
                                                    fmt::format("{}, {} at {} nodes: one iteration, ranks 0, 1 and the last",
                                                                study.title, largest.series_label, largest.nodes),
                                                    "timeline.svg")});
  for (const auto& [name, script] : scripts) write_file_atomic((fs::path(dir) / (name + ".gp")).string(), script);
  bool plotted = plot;
  std::vector<std::pair<std::string, std::string>> svgs;
  if (plot) {
    // gnuplot reads the CSVs relative to the report folder. An interruption (InterruptedError)
    // propagates: the caller's OutputTransaction removes the whole staged folder.
    const fs::path absolute = fs::absolute(dir);
    ChildOptions gnuplot;
    gnuplot.working_directory = absolute.string();
    gnuplot.quiet = true;
    for (const auto& [name, script] : scripts) {
      const fs::path svg = absolute / (name + ".svg");
      bool ok = false;
      try {
        ok = run_child({"gnuplot", name + ".gp"}, gnuplot) == 0 && fs::exists(svg);
      } catch (const InterruptedError&) {
        throw;
      } catch (const std::runtime_error&) {  // gnuplot is not installed: the .gp scripts stay
        ok = false;
      }
      std::error_code ignored;
      if (!ok) {
        fs::remove(svg, ignored);
        plotted = false;
        continue;
      }
      std::ifstream in(svg, std::ios::binary);
      std::stringstream content;
      content << in.rdbuf();
      svgs.push_back({name + ".svg", content.str()});
    }
  }
  write_file_atomic((fs::path(dir) / "index.html").string(), study_html(study, result, svgs));
  return plotted;
}

}  // namespace cnnpar
