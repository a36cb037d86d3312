#include "analysis/report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <string_view>

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
                    "Generated file: do not edit, regenerate.\n\n![speedup](speedup.svg)\n\n"
                    "The plot has log-log axes, so linear speedup (grey) is a straight line; lines with open "
                    "markers are the prediction, filled markers the paper's published speedups",
                    study.platform, study.name);
  const bool has_max = std::any_of(study.series.begin(), study.series.end(),
                                   [](const StudySeries& series) { return series.paper_max_speedup > 0; });
  md += has_max ? " and dotted horizontal lines a published maximum whose node count the paper does not state.\n\n"
                : ".\n\n";

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
  for (const Coincidence& c : coinciding_series(result))
    md += fmt::format("\n{} and {} lie on top of each other in the plot: their speedups differ by at most "
                      "{:.2f} % at every node count.\n",
                      result.series[c.later].label, result.series[c.earlier].label, 100.0 * c.largest_relative);

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

// Okabe–Ito without its yellow (#F0E442), which is hard to read on white: distinguishable for
// colour-blind readers too.
constexpr std::array<std::string_view, 7> kPalette = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                      "#E69F00", "#56B4E9", "#000000"};
// Open shapes for predictions, so two series on the same values both show their outlines; the
// paper's markers are the filled twins (gnuplot point type + 1).
constexpr std::array<int, 6> kOpenPointType = {6, 4, 8, 12, 10, 14};
constexpr int kDashTypes = 5;  // gnuplot's dash types 1 (solid) to 5
constexpr std::string_view kLinearColour = "#777777";
// Ranges reach this factor past the data, so markers at the ends are not cut by the border.
constexpr double kAxisMargin = 1.25;
}  // namespace

PlotStyle plot_style(std::size_t series_index) {
  PlotStyle style;
  style.colour = std::string(kPalette[series_index % kPalette.size()]);
  style.dash_type = int(series_index % kDashTypes) + 1;
  style.point_type = kOpenPointType[series_index % kOpenPointType.size()];
  style.paper_point_type = style.point_type + 1;
  return style;
}

std::string gnuplot_preamble(const std::string& title, const std::string& svg_name, const std::string& ylabel,
                             int most_nodes, bool log_y) {
  // Log base 2 over nodes: node counts usually double, so they fall evenly. Log-log makes
  // linear speedup a straight line.
  return fmt::format(
      "set terminal svg size 760,520 dynamic font 'sans,12' background '#ffffff'\nset output {}\n"
      "set title {} noenhanced font ',10'\nset xlabel 'nodes'\nset ylabel {}\n"
      "set logscale x 2\n{}set xrange [{}:{}]\n"
      "set key top left Left reverse noenhanced box opaque spacing 1.1\n"
      "set grid lc rgb '#dddddd'\nset border lc rgb '#333333'\n"
      "set datafile separator ','\n",
      gnuplot_quoted(svg_name), gnuplot_quoted(title), gnuplot_quoted(ylabel), log_y ? "set logscale y 2\n" : "",
      1 / kAxisMargin, kAxisMargin * std::max(most_nodes, 2));
}

std::vector<Coincidence> coinciding_series(const StudyResult& result) {
  std::vector<Coincidence> found;
  for (std::size_t later = 1; later < result.series.size(); ++later) {
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      const std::vector<SweepRow>& a = result.series[earlier].rows;
      const std::vector<SweepRow>& b = result.series[later].rows;
      if (a.empty() || a.size() != b.size()) continue;
      double largest = 0;
      bool same_nodes = true;
      for (std::size_t i = 0; i < a.size() && same_nodes; ++i) {
        same_nodes = a[i].nodes == b[i].nodes;
        const double scale = std::max(std::abs(a[i].speedup), std::abs(b[i].speedup));
        if (scale > 0) largest = std::max(largest, std::abs(a[i].speedup - b[i].speedup) / scale);
      }
      if (same_nodes && largest <= kCoincideRelative) {
        found.push_back({earlier, later, largest});
        break;  // one partner is enough to say the line is hidden
      }
    }
  }
  return found;
}

std::string study_gnuplot(const Study& study, const StudyResult& result, const std::string& svg_name) {
  const int most = study.nodes.back();
  std::string script = gnuplot_preamble(study.title, svg_name, "speedup", most, true);
  // Every speedup drawn, the paper's included, fits (log axis: only positive ones can).
  double low = 1, high = most;
  const auto cover = [&](double speedup) {
    if (speedup > 0 && std::isfinite(speedup)) low = std::min(low, speedup), high = std::max(high, speedup);
  };
  for (const SeriesResult& series : result.series)
    for (const SweepRow& row : series.rows) cover(row.speedup);
  for (const StudySeries& series : study.series) {
    for (const auto& [nodes, paper] : series.paper_speedup_at) cover(paper);
    cover(series.paper_max_speedup);
  }
  script += fmt::format("set yrange [{:.6g}:{:.6g}]\n", low / kAxisMargin, high * kAxisMargin);
  // The paper's numbers as inline data, one block per series (only node counts the study has,
  // as in the Markdown's comparison).
  std::string plots = fmt::format("$linear << EOD\n1,1\n{0},{0}\nEOD\n", most);
  std::vector<std::string> clauses = {
      fmt::format("$linear using 1:2 title 'linear' with lines lw 1.5 dt 1 lc rgb '{}'", kLinearColour)};
  const std::vector<Coincidence> coincide = coinciding_series(result);
  for (std::size_t i = 0; i < result.series.size(); ++i) {
    const PlotStyle style = plot_style(i);
    std::string title = result.series[i].label;
    for (const Coincidence& c : coincide)
      if (c.later == i) title += fmt::format(" (= {} within 1 %)", result.series[c.earlier].label);
    // Columns by name: the CSV's column order is not the plot's business.
    clauses.push_back(fmt::format("{} using 'nodes':'speedup' title {} with linespoints lw 2 dt {} pt {} ps 1.3 "
                                  "lc rgb '{}'",
                                  gnuplot_quoted(result.series[i].file_stem + ".csv"), gnuplot_quoted(title),
                                  style.dash_type, style.point_type, style.colour));
  }
  for (std::size_t i = 0; i < study.series.size() && i < result.series.size(); ++i) {
    const StudySeries& series = study.series[i];
    const PlotStyle style = plot_style(i);
    std::string points;
    for (const auto& [nodes, paper] : series.paper_speedup_at)
      if (row_at(result.series[i], nodes)) points += fmt::format("{},{}\n", nodes, paper);
    if (!points.empty()) {
      plots += fmt::format("$paper{} << EOD\n{}EOD\n", i, points);
      // Filled, larger, drawn last and 60 % opaque (alpha byte 0x66 is transparency): the
      // prediction beneath stays visible.
      clauses.push_back(fmt::format("$paper{} using 1:2 title {} with points pt {} ps 2.2 lc rgb '#66{}'", i,
                                    gnuplot_quoted("paper: " + series.label), style.paper_point_type,
                                    style.colour.substr(1)));
    }
    // A published maximum names no node count: a horizontal line, not a marker at a guessed one;
    // sparse dots, unlike any series' dash type.
    if (series.paper_max_speedup > 0)
      clauses.push_back(fmt::format("{} title {} with lines lw 1.5 dt (2,5) lc rgb '{}'", series.paper_max_speedup,
                                    gnuplot_quoted(fmt::format("paper: {} (maximum, nodes not stated)", series.label)),
                                    style.colour));
  }
  script += plots + "plot ";
  for (std::size_t i = 0; i < clauses.size(); ++i) script += (i ? ", \\\n     " : "") + clauses[i];
  return script + "\n";
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
