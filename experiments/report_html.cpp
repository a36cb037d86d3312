// A study's self-contained HTML page (plots inlined, tables, per-layer breakdown) and the index
// of all studies with each one's headline.
#include "experiments/report.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "base/units.hpp"
#include "experiments/report_tables.hpp"

namespace cnnpar {

using detail::ComponentTable;
using detail::component_tables;
using detail::kComponentsNote;
using detail::row_at;

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

}  // namespace cnnpar
