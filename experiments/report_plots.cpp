// A study's gnuplot scripts: the series' plot styles, the speedup and overlap-ratio plots over
// the node counts, and the timeline of one iteration.
#include "experiments/report.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiments/report_tables.hpp"

namespace cnnpar {

using detail::row_at;

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
  return fmt::format("{}{}plot {}\n", script, plots, fmt::join(clauses, ", \\\n     "));
}

std::string overlap_gnuplot(const Study& study, const StudyResult& result, const std::string& svg_name) {
  // R is a percentage: a linear axis from 0 to 100 (no linear-speedup line on this plot).
  std::string script = gnuplot_preamble(study.title + ": overlap ratio R", svg_name, "overlap ratio R (%)",
                                        study.nodes.back(), false);
  script += "set yrange [-5:105]\nset key bottom left Left reverse noenhanced box opaque spacing 1.1\n";
  std::vector<std::string> clauses;
  for (std::size_t i = 0; i < result.series.size(); ++i) {
    const PlotStyle style = plot_style(i);
    // R is undefined where nothing is communicated (one node): NaN leaves that point out.
    clauses.push_back(fmt::format("{} using 'nodes':(column('comm_s') > 0 ? column('overlap_ratio_percent') : NaN) "
                                  "title {} with linespoints lw 2 dt {} pt {} "
                                  "ps 1.3 lc rgb '{}'",
                                  gnuplot_quoted(result.series[i].file_stem + ".csv"), gnuplot_quoted(result.series[i].label),
                                  style.dash_type, style.point_type, style.colour));
  }
  return fmt::format("{}plot {}\n", script, fmt::join(clauses, ", \\\n     "));
}

std::string timeline_gnuplot(const Trace& trace, const std::string& title, const std::string& svg_name) {
  // The ranks shown: 0, 1 and the last (each once).
  std::vector<std::size_t> shown;
  for (std::size_t r : {std::size_t(0), std::size_t(1), trace.ranks.empty() ? std::size_t(0) : trace.ranks.size() - 1})
    if (r < trace.ranks.size() && std::find(shown.begin(), shown.end(), r) == shown.end()) shown.push_back(r);
  const int iteration = trace.warmup_iterations;
  const auto mark = [&](const RankTrace& rank, int i, double fallback) {
    for (const MarkRecord& m : rank.marks)
      if (m.iteration == i) return m.time_s;
    return fallback;
  };
  double begin_s = 1e300, end_s = 0;
  for (std::size_t r : shown) {
    begin_s = std::min(begin_s, mark(trace.ranks[r], iteration - 1, 0.0));
    end_s = std::max(end_s, mark(trace.ranks[r], iteration, 0.0));
  }
  if (!(end_s > begin_s)) begin_s = 0, end_s = 1e-3;
  // x in ms from the iteration's start; each bar is x, y, x_low, x_high, y_low, y_high.
  std::string compute, comm, waits;
  std::vector<std::string> ytics;
  const auto bar = [&](std::string& out, double start_s, double stop_s, double y) {
    const double a = std::max(start_s, begin_s), b = std::min(stop_s, end_s);
    if (b <= a) return;
    const double x0 = (a - begin_s) * 1e3, x1 = (b - begin_s) * 1e3;
    out += fmt::format("{:.6g} {} {:.6g} {:.6g} {} {}\n", (x0 + x1) / 2, y, x0, x1, y - 0.35, y + 0.35);
  };
  for (std::size_t k = 0; k < shown.size(); ++k) {
    const RankTrace& rank = trace.ranks[shown[k]];
    const double y = 3.0 * double(shown.size() - 1 - k);  // rank 0 on top
    for (const ComputeRecord& op : rank.compute) bar(compute, op.start_s, op.end_s, y + 2);
    for (const CollectiveRecord& c : rank.collectives) {
      bar(comm, c.comm_start_s, c.comm_end_s, y + 1);
      bar(waits, c.wait_start_s, c.wait_end_s, y);
    }
    ytics.push_back(fmt::format("'rank {} compute' {}, 'rank {} comm' {}, 'rank {} wait' {}", rank.rank, y + 2, rank.rank,
                                y + 1, rank.rank, y));
  }
  // An empty block would make gnuplot stop; a zero-width bar far outside keeps the key entry.
  const auto block = [](const char* name, const std::string& rows) {
    return fmt::format("${} << EOD\n{}EOD\n", name, rows.empty() ? std::string("-1 -100 -1 -1 -100 -100\n") : rows);
  };
  return fmt::format(
      "set terminal svg size 760,{} dynamic font 'sans,12' background '#ffffff'\nset output {}\n"
      "set title {} noenhanced font ',10'\nset xlabel 'ms from the start of iteration {}'\n"
      "set xrange [0:{:.6g}]\nset yrange [-1:{}]\nset ytics ({}) noenhanced\n"
      "set key outside bottom center horizontal noenhanced\nset grid xtics lc rgb '#dddddd'\n"
      "set border lc rgb '#333333'\nset style fill solid 0.85 noborder\n{}{}{}"
      "plot $compute using 1:2:3:4:5:6 with boxxyerror lc rgb '#0072B2' title 'compute op', \\\n"
      "     $comm using 1:2:3:4:5:6 with boxxyerror lc rgb '#E69F00' title 'collective in progress (T_c)', \\\n"
      "     $waits using 1:2:3:4:5:6 with boxxyerror lc rgb '#D55E00' title 'waiting for it'\n",
      220 + 60 * shown.size(), gnuplot_quoted(svg_name), gnuplot_quoted(title), iteration,
      (end_s - begin_s) * 1e3, 3 * shown.size(), fmt::join(ytics, ", "), block("compute", compute), block("comm", comm),
      block("waits", waits));
}

}  // namespace cnnpar
