#include "analysis/report.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>

#include "model/child_process.hpp"
#include "model/error.hpp"
#include "model/json_node.hpp"
#include "model/output_files.hpp"
#include "model/scenarios.hpp"

namespace cnnpar {

std::string file_stem(const std::string& label) {
  std::string stem;
  for (char c : label) {
    if (std::isalnum(static_cast<unsigned char>(c))) stem += char(std::tolower(static_cast<unsigned char>(c)));
    else if (!stem.empty() && stem.back() != '-') stem += '-';
  }
  while (!stem.empty() && stem.back() == '-') stem.pop_back();
  return stem.empty() ? "series" : stem;
}

void check_study(const Study& study) {
  const Platform platform = load_platform(study.platform);
  if (study.nodes.back() > platform.nodes.count)
    throw InputError(study.series.front().strategy.origin, "/nodes", std::to_string(study.nodes.back()),
                     fmt::format("platform {} has {} nodes", platform.name, platform.nodes.count));
  for (const StudySeries& series : study.series) {
    const Network network = load_network(series.network);
    for (int nodes : study.nodes) {
      StrategyOptions at_nodes = series.strategy;
      at_nodes.ranks = nodes;
      validate_strategy_options(network, at_nodes);
    }
  }
}

StudyResult run_study(const Study& study, const EngineFactory& make_engine, const SweepOptions& options) {
  const Platform platform = load_platform(study.platform);
  StudyResult result;
  for (const StudySeries& series : study.series) {
    const Network network = load_network(series.network);
    SeriesResult out;
    out.label = series.label;
    out.file_stem = file_stem(series.label);
    out.rows = predict_sweep(network, platform, series.strategy, study.nodes, make_engine, options);
    out.config = config_columns(to_json(series.strategy), network.name, platform.name, make_engine()->name());
    result.series.push_back(std::move(out));
  }
  return result;
}

namespace {

const SweepRow* row_at(const SeriesResult& series, int nodes) {
  for (const SweepRow& row : series.rows)
    if (row.nodes == nodes) return &row;
  return nullptr;
}

}  // namespace

std::string study_markdown(const Study& study, const StudyResult& result) {
  std::string md = fmt::format("# {}\n\n", study.title);
  if (!study.source.empty()) md += fmt::format("Source: {}\n\n", study.source);
  md += fmt::format("Platform `{}`; predicted by `cnnpar report --study {}` (analytic engine). "
                    "Generated file: do not edit, regenerate.\n\n![speedup](speedup.svg)\n\n",
                    study.platform, study.name);

  md += "## Predicted speedup\n\n| nodes |";
  for (const SeriesResult& series : result.series) md += fmt::format(" {} |", series.label);
  md += "\n|---:|";
  for (std::size_t i = 0; i < result.series.size(); ++i) md += "---:|";
  md += "\n";
  for (int nodes : study.nodes) {
    md += fmt::format("| {} |", nodes);
    for (const SeriesResult& series : result.series) {
      const SweepRow* row = row_at(series, nodes);
      md += row ? fmt::format(" {:.2f} (R {:.0f} %) |", row->speedup, row->overlap_ratio_percent) : " |";
    }
    md += "\n";
  }

  std::string comparison;
  for (std::size_t i = 0; i < study.series.size(); ++i) {
    const StudySeries& series = study.series[i];
    const SeriesResult& predicted = result.series[i];
    for (const auto& [nodes, paper] : series.paper_speedup_at) {
      const SweepRow* row = row_at(predicted, nodes);
      if (!row) continue;
      comparison += fmt::format("| {} | speedup at {} nodes | {:.2f} | {:.2f} | {:+.1f} % |\n", series.label, nodes,
                                paper, row->speedup, 100.0 * (row->speedup - paper) / paper);
    }
    if (series.paper_max_speedup > 0 && !predicted.rows.empty()) {
      const auto best = std::max_element(predicted.rows.begin(), predicted.rows.end(),
                                         [](const SweepRow& a, const SweepRow& b) { return a.speedup < b.speedup; });
      comparison += fmt::format("| {} | maximum speedup | {:.2f} | {:.2f} (at {} nodes) | {:+.1f} % |\n", series.label,
                                series.paper_max_speedup, best->speedup, best->nodes,
                                100.0 * (best->speedup - series.paper_max_speedup) / series.paper_max_speedup);
    }
  }
  if (!comparison.empty())
    md += "\n## Prediction against the paper\n\n| series | quantity | paper | predicted | difference |\n"
          "|---|---|---:|---:|---:|\n" + comparison;
  md += "\nPer-series rows (iteration, compute, communication, exposed communication, R, speedup, "
        "efficiency) are in the CSV files beside this report.\n";
  return md;
}

// A gnuplot string literal: labels and titles are input, and gnuplot evaluates what escapes
// its quotes (system() included). In single quotes only '' needs escaping.
namespace {
std::string gnuplot_quoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += "''";
    else if (c != '\n' && c != '\r') quoted += c;
  }
  return quoted + "'";
}
}  // namespace

std::string study_gnuplot(const Study& study, const StudyResult& result, const std::string& svg_name) {
  const int most = study.nodes.back();
  std::string script = fmt::format(
      "set terminal svg size 720,480 dynamic font 'sans,12'\nset output {}\n"
      "set title {} noenhanced font ',10'\nset xlabel 'nodes'\nset ylabel 'speedup'\nset logscale x 2\n"
      "set key top left noenhanced\nset grid\nset datafile separator ','\nset xrange [1:{}]\n",
      gnuplot_quoted(svg_name), gnuplot_quoted(study.title), most);
  script += fmt::format("plot x title 'linear' with lines dashtype 2 lc rgb '#888888'");
  for (const SeriesResult& series : result.series)
    script += fmt::format(", {} using 7:13 skip 1 title {} with linespoints", gnuplot_quoted(series.file_stem + ".csv"),
                          gnuplot_quoted(series.label));
  script += "\n";
  return script;
}

bool write_study_report(const Study& study, const StudyResult& result, const std::string& dir, bool plot) {
  namespace fs = std::filesystem;
  for (const SeriesResult& series : result.series)
    write_file_atomic((fs::path(dir) / (series.file_stem + ".csv")).string(), sweep_csv(series.config, series.rows));
  write_file_atomic((fs::path(dir) / "report.md").string(), study_markdown(study, result));
  write_file_atomic((fs::path(dir) / "speedup.gp").string(), study_gnuplot(study, result, "speedup.svg"));
  if (!plot) return true;
  // gnuplot reads the CSVs relative to the report folder. An interruption (InterruptedError)
  // propagates: the caller's OutputTransaction removes the whole staged folder.
  const fs::path absolute = fs::absolute(dir), svg = absolute / "speedup.svg";
  bool plotted = false;
  try {
    plotted = run_child({"gnuplot", "speedup.gp"}, {absolute.string(), true}) == 0 && fs::exists(svg);
  } catch (const InterruptedError&) {
    throw;
  } catch (const std::runtime_error&) {  // gnuplot is not installed: the .gp script stays
    plotted = false;
  }
  std::error_code ignored;
  if (!plotted) fs::remove(svg, ignored);
  return plotted;
}

}  // namespace cnnpar
