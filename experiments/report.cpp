#include "experiments/report.hpp"

#include "analysis/components.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/output_files.hpp"
#include "model/scenarios.hpp"
#include "base/units.hpp"

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
    for (int nodes : study.nodes) validate_strategy_options(network, series_options_at(study, series, nodes));
  }
}

StudyResult run_study(const Study& study, const EngineFactory& make_engine, const SweepOptions& options) {
  const Platform platform = load_platform(study.platform);
  StudyResult result = predict_study(study, platform, make_engine, options);
  if (!study.series.empty()) {
    // The largest configuration of the first series, with every record, for the per-layer
    // breakdown and the timeline.
    const StudySeries& first = study.series.front();
    const Network network = load_network(first.network);
    const StrategyOptions options = series_options_at(study, first, study.nodes.back());
    LargestConfiguration largest;
    largest.series_label = first.label;
    largest.nodes = options.ranks;
    largest.trace = make_engine()->run(build_schedule(network, platform, options), platform);
    largest.layers = layer_breakdown(largest.trace, compute_metrics(largest.trace), &network);
    result.largest.push_back(std::move(largest));
  }
  return result;
}

StudyResult predict_study(const Study& study, const Platform& platform, const EngineFactory& make_engine,
                          const SweepOptions& options) {
  StudyResult result;
  for (const StudySeries& series : study.series) {
    const Network network = load_network(series.network);
    SeriesResult out;
    out.label = series.label;
    out.file_stem = file_stem(series.label);
    SweepOptions sweep = options;
    if (has_components(series.strategy.name)) {
      sweep.extra = [&](int, const Trace& trace) {
        return components_json(trace, &network, platform.network.element_bytes).value_or(nlohmann::json());
      };
      sweep.on_extra = [&](int nodes, nlohmann::json& components) {
        if (!components.is_null() && std::find(study.nodes.begin(), study.nodes.end(), nodes) != study.nodes.end())
          out.components[nodes] = std::move(components);
      };
    }
    if (series.weak_scaling) {
      // One sweep per node count at its own batch (each with its one-rank baseline at that batch).
      for (int nodes : study.nodes) {
        const StrategyOptions at_nodes = series_options_at(study, series, nodes);
        out.rows.push_back(predict_sweep(network, platform, at_nodes, {nodes}, make_engine, sweep).front());
        out.row_batches.push_back(at_nodes.global_batch);
      }
    } else {
      out.rows = predict_sweep(network, platform, series.strategy, study.nodes, make_engine, sweep);
    }
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

// veeriah and conv_split series: one table per series, a row per node count, a column per
// component (analysis/components.hpp), cells formatted with their units.
struct ComponentTable {
  std::string series;
  std::vector<std::string> keys;
  std::vector<std::pair<int, std::vector<std::string>>> rows;  // (nodes, cells)
};
std::vector<ComponentTable> component_tables(const StudyResult& result) {
  std::vector<ComponentTable> tables;
  for (const SeriesResult& series : result.series) {
    if (series.components.empty()) continue;
    ComponentTable table;
    table.series = series.label;
    std::vector<const nlohmann::json*> objects;
    for (const auto& [nodes, components] : series.components) objects.push_back(&components);
    table.keys = component_keys(objects);
    for (const auto& [nodes, components] : series.components) {
      std::vector<std::string> cells;
      for (const std::string& key : table.keys)
        cells.push_back(components.contains(key) && components.at(key).is_number()
                            ? format_component_value(key, components.at(key).get<double>())
                            : "");
      table.rows.emplace_back(nodes, std::move(cells));
    }
    tables.push_back(std::move(table));
  }
  return tables;
}
constexpr const char* kComponentsNote = "Per iteration, median over the measured iterations (definitions in "
                                        "analysis/components.hpp).";

std::string components_markdown(const StudyResult& result) {
  std::string md;
  for (const ComponentTable& table : component_tables(result)) {
    md += fmt::format("\n### Components: {}\n\n{}\n\n| nodes |", table.series, kComponentsNote);
    for (const std::string& key : table.keys) md += fmt::format(" {} |", key);
    md += "\n|---:|";
    for (std::size_t i = 0; i < table.keys.size(); ++i) md += "---:|";
    md += "\n";
    for (const auto& [nodes, cells] : table.rows) {
      md += fmt::format("| {} |", nodes);
      for (const std::string& cell : cells) md += fmt::format(" {} |", cell);
      md += "\n";
    }
  }
  return md.empty() ? md : "\n## Components\n" + md;
}

std::string components_html(const StudyResult& result) {
  std::string h;
  for (const ComponentTable& table : component_tables(result)) {
    h += fmt::format("<h2>Components: {}</h2>\n<p class=\"note\">{}</p>\n<table>\n<tr><th>nodes</th>",
                     html_escaped(table.series), kComponentsNote);
    for (const std::string& key : table.keys) h += fmt::format("<th>{}</th>", html_escaped(key));
    h += "</tr>\n";
    for (const auto& [nodes, cells] : table.rows) {
      h += fmt::format("<tr><td>{}</td>", nodes);
      for (const std::string& cell : cells) h += fmt::format("<td>{}</td>", html_escaped(cell));
      h += "</tr>\n";
    }
    h += "</table>\n";
  }
  return h;
}

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

std::vector<PaperComparison> paper_comparisons(const Study& study, const StudyResult& result) {
  std::vector<PaperComparison> out;
  for (std::size_t i = 0; i < study.series.size() && i < result.series.size(); ++i) {
    const StudySeries& series = study.series[i];
    const SeriesResult& predicted = result.series[i];
    for (const auto& [nodes, paper] : series.paper_speedup_at) {
      const SweepRow* row = row_at(predicted, nodes);
      if (!row) continue;
      out.push_back({series.label, fmt::format("speedup at {} nodes", nodes), paper, row->speedup, nodes,
                     100.0 * (row->speedup - paper) / paper});
    }
    for (const auto& [nodes, paper] : series.paper_iteration_s_at) {
      const SweepRow* row = row_at(predicted, nodes);
      if (!row) continue;
      out.push_back({series.label, fmt::format("iteration time at {} nodes", nodes), paper, row->iteration_s, nodes,
                     100.0 * (row->iteration_s - paper) / paper, true});
    }
    if (series.paper_max_speedup > 0 && !predicted.rows.empty()) {
      const auto best = std::max_element(predicted.rows.begin(), predicted.rows.end(),
                                         [](const SweepRow& a, const SweepRow& b) { return a.speedup < b.speedup; });
      out.push_back({series.label, "maximum speedup", series.paper_max_speedup, best->speedup, best->nodes,
                     100.0 * (best->speedup - series.paper_max_speedup) / series.paper_max_speedup});
    }
  }
  return out;
}

namespace {

const SeriesResult* series_named(const StudyResult& result, const std::string& label) {
  for (const SeriesResult& series : result.series)
    if (series.label == label) return &series;
  return nullptr;
}

double max_speedup(const SeriesResult& series) {
  double best = 0;
  for (const SweepRow& row : series.rows) best = std::max(best, row.speedup);
  return best;
}

}  // namespace

std::vector<OrderingCheck> ordering_checks(const Study& study, const StudyResult& result) {
  std::vector<OrderingCheck> out;
  for (const StudyOrdering& ordering : study.orderings) {
    OrderingCheck check{ordering.claim, false, ""};
    switch (ordering.kind) {
      case StudyOrdering::Kind::best: {
        // The series with the highest speedup at the node count (or the highest maximum).
        const SeriesResult* best = nullptr;
        double best_speedup = 0;
        std::string values;
        for (const SeriesResult& series : result.series) {
          const SweepRow* row = ordering.nodes > 0 ? row_at(series, ordering.nodes) : nullptr;
          const double speedup = ordering.nodes > 0 ? (row ? row->speedup : 0.0) : max_speedup(series);
          values += fmt::format("{}{} {:.1f}", values.empty() ? "" : ", ", series.label, speedup);
          if (!best || speedup > best_speedup) {
            best = &series;
            best_speedup = speedup;
          }
        }
        check.reproduced = best && best->label == ordering.labels[0];
        check.predicted = fmt::format("{} is best ({}{})", best ? best->label : "none", values,
                                      ordering.nodes > 0 ? fmt::format(" at {} nodes", ordering.nodes) : ", maxima");
        break;
      }
      case StudyOrdering::Kind::increasing: {
        check.reproduced = true;
        double previous = -1;
        for (const std::string& label : ordering.labels) {
          const SeriesResult* series = series_named(result, label);
          const double value = series ? max_speedup(*series) : 0.0;
          check.reproduced = check.reproduced && series && value > previous;
          previous = value;
          check.predicted += fmt::format("{}{} {:.1f}", check.predicted.empty() ? "maxima " : " < ", label, value);
        }
        break;
      }
      case StudyOrdering::Kind::flat_after: {
        const SeriesResult* series = series_named(result, ordering.labels[0]);
        const SweepRow* from = series ? row_at(*series, ordering.nodes) : nullptr;
        if (from && !series->rows.empty() && from->speedup > 0) {
          const SweepRow& last = series->rows.back();
          const double gain = last.speedup / from->speedup;
          check.reproduced = gain <= ordering.max_gain;
          check.predicted = fmt::format("{:.1f} at {} nodes, {:.1f} at {}: × {:.2f} (flat: at most × {:.2f})",
                                        from->speedup, from->nodes, last.speedup, last.nodes, gain, ordering.max_gain);
        }
        break;
      }
    }
    out.push_back(std::move(check));
  }
  return out;
}

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
  // Weak-scaling series, grouped by their batches.
  std::map<std::vector<std::int64_t>, std::vector<std::string>> weak;
  for (std::size_t i = 0; i < study.series.size() && i < result.series.size(); ++i)
    if (study.series[i].weak_scaling && !result.series[i].row_batches.empty())
      weak[result.series[i].row_batches].push_back(study.series[i].label);
  for (const auto& [batches, labels] : weak)
    md += fmt::format("\nWeak scaling ({}): the global batch grows with the nodes, {} images at {} nodes to {} at {}; "
                      "each speedup is against one rank at that node count's batch.\n",
                      fmt::join(labels, ", "), batches.front(), study.nodes.front(), batches.back(), study.nodes.back());
  for (const Coincidence& c : coinciding_series(result))
    md += fmt::format("\n{} and {} lie on top of each other in the plot: their speedups differ by at most "
                      "{:.2f} % at every node count.\n",
                      result.series[c.later].label, result.series[c.earlier].label, 100.0 * c.largest_relative);

  std::string comparison;
  for (const PaperComparison& c : paper_comparisons(study, result))
    comparison += c.seconds ? fmt::format("| {} | {} | {} | {} | {:+.1f} % |\n", c.series, c.quantity,
                                          format_seconds(c.paper), format_seconds(c.predicted), c.difference_percent)
                  : c.quantity == "maximum speedup"
                      ? fmt::format("| {} | maximum speedup | {:.2f} | {:.2f} (at {} nodes) | {:+.1f} % |\n", c.series,
                                    c.paper, c.predicted, c.predicted_nodes, c.difference_percent)
                      : fmt::format("| {} | {} | {:.2f} | {:.2f} | {:+.1f} % |\n", c.series, c.quantity, c.paper,
                                    c.predicted, c.difference_percent);
  if (!comparison.empty())
    md += "\n## Prediction against the paper\n\n| series | quantity | paper | predicted | difference |\n"
          "|---|---|---:|---:|---:|\n" + comparison;
  const std::vector<OrderingCheck> orderings = ordering_checks(study, result);
  if (!orderings.empty()) {
    md += "\n## Published orderings\n\n| the paper | predicted | reproduced |\n|---|---|---|\n";
    for (const OrderingCheck& check : orderings)
      md += fmt::format("| {} | {} | {} |\n", check.claim, check.predicted, check.reproduced ? "yes" : "**no**");
  }
  if (!study.findings.empty()) {
    md += "\n## What the prediction reproduces\n";
    for (const std::string& paragraph : study.findings) md += "\n" + paragraph + "\n";
  }
  md += components_markdown(result);
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
  script += "plot ";
  for (std::size_t i = 0; i < clauses.size(); ++i) script += (i ? ", \\\n     " : "") + clauses[i];
  return script + "\n";
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
  std::string compute, comm, waits, ytics;
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
    ytics += fmt::format("{}'rank {} compute' {}, 'rank {} comm' {}, 'rank {} wait' {}", k ? ", " : "", rank.rank, y + 2,
                         rank.rank, y + 1, rank.rank, y);
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
      (end_s - begin_s) * 1e3, 3 * shown.size(), ytics, block("compute", compute), block("comm", comm),
      block("waits", waits));
}

std::string html_escaped(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

constexpr const char* kHtmlStyle =
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}"
    "h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}"
    "table{border-collapse:collapse;margin:1em 0;font-size:.9em}"
    "th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}th{background:#f3f3f3}"
    "td.text,th.text{text-align:left}.plots{display:flex;flex-wrap:wrap;gap:1em}.plots .plot{flex:1 1 520px;min-width:0}"
    ".plot svg{max-width:100%;height:auto}.missing{color:#a00}.note{color:#555;font-size:.9em}";

// An SVG document without its XML prolog, for inlining.
std::string inline_svg(const std::string& document) {
  const std::size_t start = document.find("<svg");
  return start == std::string::npos ? std::string() : document.substr(start);
}

std::string plot_div(const std::vector<std::pair<std::string, std::string>>& svgs, const std::string& name,
                     const std::string& what) {
  for (const auto& [file, content] : svgs)
    if (file == name && !inline_svg(content).empty())
      return fmt::format("<div class=\"plot\" data-plot=\"{}\">{}</div>\n", html_escaped(name), inline_svg(content));
  return fmt::format("<p class=\"missing\">{} ({}) was not drawn: gnuplot did not run (see the .gp script).</p>\n",
                     html_escaped(what), html_escaped(name));
}

}  // namespace

std::string study_headline(const Study& study, const StudyResult& result) {
  const std::vector<PaperComparison> comparisons = paper_comparisons(study, result);
  const PaperComparison* best = nullptr;
  for (const PaperComparison& c : comparisons)
    if (!best || c.predicted_nodes > best->predicted_nodes) best = &c;
  if (best && best->seconds)
    return fmt::format("{}: {} predicted against {} published ({}, {:+.0f} %)", best->series,
                       format_seconds(best->predicted), format_seconds(best->paper), best->quantity,
                       best->difference_percent);
  if (best)
    return fmt::format("{}: {:.1f}× predicted against {:.1f}× published ({}, {:+.0f} %)", best->series, best->predicted,
                       best->paper, best->quantity, best->difference_percent);
  if (!result.series.empty() && !result.series.front().rows.empty())
    return fmt::format("{}: {:.1f}× at {} nodes", result.series.front().label, result.series.front().rows.back().speedup,
                       result.series.front().rows.back().nodes);
  return "";
}

std::string study_html(const Study& study, const StudyResult& result,
                       const std::vector<std::pair<std::string, std::string>>& svgs) {
  std::string h = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{}</style>\n"
      "</head>\n<body>\n<p><a href=\"../index.html\">all studies</a></p>\n<h1>{}</h1>\n",
      html_escaped(study.title), kHtmlStyle, html_escaped(study.title));
  if (!study.source.empty()) h += fmt::format("<p class=\"note\">Source: {}</p>\n", html_escaped(study.source));
  h += fmt::format("<p class=\"note\">Platform <code>{}</code>; predicted by <code>cnnpar report --study {}</code> "
                   "(analytic engine). Generated file: do not edit, regenerate.</p>\n",
                   html_escaped(study.platform), html_escaped(study.name));
  h += "<h2>Speedup and overlap ratio</h2>\n<div class=\"plots\">\n";
  h += plot_div(svgs, "speedup.svg", "The speedup plot");
  h += plot_div(svgs, "overlap.svg", "The overlap-ratio plot");
  h += "</div>\n<p class=\"note\">Speedup: log-log axes, so linear speedup (grey) is a straight line; lines with open "
       "markers are the prediction, filled markers the paper's published speedups. Overlap ratio R (Lee et al. "
       "Eq. 11): the share of communication time hidden behind computation, on a linear axis.</p>\n";

  h += "<h2>Predicted speedup</h2>\n<table>\n<tr><th>nodes</th>";
  for (const SeriesResult& series : result.series) h += fmt::format("<th>{}</th>", html_escaped(series.label));
  h += "</tr>\n";
  for (int nodes : study.nodes) {
    h += fmt::format("<tr><td>{}</td>", nodes);
    for (const SeriesResult& series : result.series) {
      const SweepRow* row = row_at(series, nodes);
      h += row ? fmt::format("<td>{:.2f} (R {:.0f} %)</td>", row->speedup, row->overlap_ratio_percent) : "<td></td>";
    }
    h += "</tr>\n";
  }
  h += "</table>\n";

  const std::vector<PaperComparison> comparisons = paper_comparisons(study, result);
  if (!comparisons.empty()) {
    h += "<h2>Prediction against the paper</h2>\n<table>\n<tr><th class=\"text\">series</th><th class=\"text\">quantity"
         "</th><th>paper</th><th>predicted</th><th>difference</th></tr>\n";
    for (const PaperComparison& c : comparisons)
      h += fmt::format("<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td>{}</td><td>{}{}</td>"
                       "<td>{:+.1f} %</td></tr>\n",
                       html_escaped(c.series), html_escaped(c.quantity),
                       c.seconds ? format_seconds(c.paper) : fmt::format("{:.2f}", c.paper),
                       c.seconds ? format_seconds(c.predicted) : fmt::format("{:.2f}", c.predicted),
                       c.quantity == "maximum speedup" ? fmt::format(" (at {} nodes)", c.predicted_nodes) : "",
                       c.difference_percent);
    h += "</table>\n";
  }

  const std::vector<OrderingCheck> orderings = ordering_checks(study, result);
  if (!orderings.empty()) {
    h += "<h2>Published orderings</h2>\n<table>\n<tr><th class=\"text\">the paper</th><th class=\"text\">predicted"
         "</th><th class=\"text\">reproduced</th></tr>\n";
    for (const OrderingCheck& check : orderings)
      h += fmt::format("<tr><td class=\"text\">{}</td><td class=\"text\">{}</td><td class=\"text\">{}</td></tr>\n",
                       html_escaped(check.claim), html_escaped(check.predicted), check.reproduced ? "yes" : "no");
    h += "</table>\n";
  }
  if (!study.findings.empty()) {
    h += "<h2>What the prediction reproduces</h2>\n";
    for (const std::string& paragraph : study.findings) h += fmt::format("<p>{}</p>\n", html_escaped(paragraph));
  }
  h += components_html(result);
  for (const LargestConfiguration& largest : result.largest) {
    h += fmt::format("<h2>Per layer: {} at {} nodes</h2>\n<p class=\"note\">Per iteration, each column the maximum "
                     "over ranks (so a row's columns may come from different ranks); a bucket's communication is "
                     "split between its layers by their parameter bytes.</p>\n",
                     html_escaped(largest.series_label), largest.nodes);
    const std::vector<LayerPhaseBreakdown> totals = layer_totals(largest.layers);
    double largest_s = 0;
    for (const LayerPhaseBreakdown& r : totals) largest_s = std::max({largest_s, r.compute_s, r.comm_s});
    const TimeUnit unit = time_unit_for(largest_s);
    h += fmt::format("<table>\n<tr><th class=\"text\">layer</th><th>compute ({0})</th><th>communication ({0})</th>"
                     "<th>exposed communication ({0})</th><th>bytes</th></tr>\n",
                     unit.name);
    for (const LayerPhaseBreakdown& r : totals)
      if (r.compute_s > 0 || r.comm_s > 0)
        h += fmt::format("<tr><td class=\"text\">{}</td><td>{:.3f}</td><td>{:.3f}</td><td>{:.3f}</td><td>{}</td></tr>\n",
                         html_escaped(r.name), r.compute_s * unit.per_second, r.comm_s * unit.per_second,
                         r.exposed_comm_s * unit.per_second, r.bytes > 0 ? format_bytes(r.bytes) : "0");
    h += "</table>\n<h2>One iteration</h2>\n";
    h += plot_div(svgs, "timeline.svg", "The timeline");
  }
  h += "<p class=\"note\">Per-series rows (iteration, compute, communication, exposed communication, R, speedup, "
       "efficiency) are in the CSV files beside this page.</p>\n</body>\n</html>\n";
  return h;
}

std::string reports_index_html(const std::vector<ReportIndexEntry>& entries) {
  std::string h = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>cnnpar studies</title>\n"
      "<style>{}</style>\n</head>\n<body>\n<h1>cnnpar studies: prediction beside publication</h1>\n"
      "<table>\n<tr><th class=\"text\">study</th><th class=\"text\">source</th><th class=\"text\">headline</th></tr>\n",
      kHtmlStyle);
  for (const ReportIndexEntry& e : entries)
    h += fmt::format("<tr><td class=\"text\"><a href=\"{0}/index.html\">{1}</a></td><td class=\"text\">{2}</td>"
                     "<td class=\"text\">{3}</td></tr>\n",
                     html_escaped(e.folder), html_escaped(e.title), html_escaped(e.source), html_escaped(e.headline));
  return h + "</table>\n<p class=\"note\">Generated by <code>cnnpar report</code>.</p>\n</body>\n</html>\n";
}

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
