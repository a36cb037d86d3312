// A study's Markdown report: the predicted speedups, the series that coincide, the comparison
// with the paper, the published orderings, the findings and the component tables.
#include "experiments/report.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/units.hpp"
#include "experiments/report_tables.hpp"

namespace cnnpar {

using detail::ComponentTable;
using detail::component_tables;
using detail::kComponentsNote;
using detail::row_at;

namespace {

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

}  // namespace cnnpar
