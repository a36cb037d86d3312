// The fidelity report written out: its JSON document, the Markdown report (summary, where the
// error is, misses, rankings, every configuration) and the CSV.
#include "experiments/validation_render.hpp"

#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/output_files.hpp"

namespace cnnpar {

namespace {

/** Runs measured again because the machine computed off its calibrated speed, and the
 *  configurations whose kept run is still off (by key). */
nlohmann::json compute_speed_summary(const ValidationReport& report) {
  int remeasured = 0, recalibrated = 0;
  nlohmann::json still_off = nlohmann::json::array();
  for (const ConfigResult& r : report.results) {
    if (r.attempt_compute_speed_ratios.size() > 1) ++remeasured;
    if (r.compute_recalibrated) ++recalibrated;
    if (compute_speed_off(r.compute_speed_ratio, report.compute_speed_tolerance_percent)) still_off.push_back(r.key);
  }
  return {{"remeasured", remeasured}, {"recalibrated", recalibrated}, {"still_off", still_off}};
}

}  // namespace

nlohmann::json to_json(const ValidationReport& report) {
  nlohmann::json mape = nlohmann::json::object(), r_mae = nlohmann::json::object(), engines = nlohmann::json::object();
  for (const auto& [engine, s] : report.engines) {
    mape[engine] = s.mape_percent;
    r_mae[engine] = s.r_mae_points;
    engines[engine] = {{"mape_percent", s.mape_percent},
                       {"max_abs_error_percent", s.max_abs_error_percent},
                       {"r_mae_points", s.r_mae_points},
                       {"within_tolerance", s.within_tolerance},
                       {"ranking_groups_agreeing", s.ranking_groups_agreeing},
                       {"causes", s.causes}};
  }
  nlohmann::json rankings = nlohmann::json::array();
  for (const RankingGroup& g : report.rankings)
    rankings.push_back({{"group", g.label},
                        {"measured_order", g.measured_order},
                        {"predicted_order", g.predicted_order},
                        {"decided_pairs", g.decided_pairs},
                        {"agreeing_pairs", g.agreeing_pairs},
                        {"agrees", g.agrees}});
  nlohmann::json results = nlohmann::json::array();
  for (const ConfigResult& r : report.results) results.push_back(to_json(r));
  return {{"format", "cnnpar-validation-report"},
          {"grid", report.grid_name},
          {"grid_file", report.grid_file},
          {"description", report.description},
          {"configurations", report.configurations},
          {"finished", report.results.size()},
          {"tolerance", {{"iteration_percent", report.iteration_tolerance_percent},
                         {"overlap_points", report.overlap_tolerance_points},
                         {"compute_speed_percent", report.compute_speed_tolerance_percent}}},
          {"run_attempts", report.run_attempts},
          {"recalibrate_compute", report.recalibrate_compute},
          {"compute_speed_check", compute_speed_summary(report)},
          {"mape_percent", mape},
          {"r_mae_points", r_mae},
          {"engines", engines},
          {"mape_percent_by", report.mape_by},
          {"ranking_groups", report.rankings.size()},
          {"rankings", rankings},
          {"environment", report.environment},
          {"fit", report.fit.is_null() ? nlohmann::json::object() : report.fit},
          {"results", results}};
}

namespace {

std::string yes_no(bool value) { return value ? "yes" : "no"; }

}  // namespace

std::string validation_markdown(const ValidationReport& report) {
  std::string md = fmt::format("# Validation: {}\n\n", report.grid_name);
  if (!report.description.empty()) md += report.description + "\n\n";
  md += fmt::format("Grid `{}`: {} of {} configurations measured. Each was predicted by the analytic and the SimGrid "
                    "engines from a calibrated platform and measured with `cnnpar-run`; errors are predicted against "
                    "measured median iteration time (docs/design.md, \"Validation\").\n\n",
                    report.grid_file, report.results.size(), report.configurations);
  md += "## Summary\n\n";
  md += fmt::format("| engine | MAPE | max error | within {:g} % | R mean abs. error | rankings as measured |\n",
                    report.iteration_tolerance_percent);
  md += "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [engine, s] : report.engines)
    md += fmt::format("| {} | {:.1f} % | {:.1f} % | {} of {} | {:.1f} points | {} of {} |\n", engine, s.mape_percent,
                      s.max_abs_error_percent, s.within_tolerance, report.results.size(), s.r_mae_points,
                      s.ranking_groups_agreeing, report.rankings.size());
  md += fmt::format("\nAcceptance: MAPE <= {:g} % per engine, R within {:g} points, every ranking as measured.\n\n",
                    report.iteration_tolerance_percent, report.overlap_tolerance_points);
  const nlohmann::json speed = compute_speed_summary(report);
  md += fmt::format(
      "Compute speed check: a real-compute run whose GEMMs that overlapped no communication took more than {:g} % "
      "more or less than their calibrated time was measured again{}, at most {} runs per configuration, keeping the "
      "run nearest the calibration (docs/design.md, \"Validation\"). {} configuration{} measured again ({} after "
      "calibrating compute again); {} still off{}.\n\n",
      report.compute_speed_tolerance_percent,
      report.recalibrate_compute ? "; when it was a configuration's first run, compute was first calibrated again and "
                                   "the configuration predicted again, and that run was not kept"
                                 : "",
      report.run_attempts, speed["remeasured"].get<int>(), speed["remeasured"].get<int>() == 1 ? " was" : "s were",
      speed["recalibrated"].get<int>(), speed["still_off"].size(),
      speed["still_off"].empty() ? ""
                                 : fmt::format(": {}", fmt::join(speed["still_off"].get<std::vector<std::string>>(), ", ")));

  if (!report.mape_by.empty()) {
    md += "## Where the error is\n\nMAPE of iteration time by one dimension of the grid:\n\n";
    for (const auto& [dimension, values] : report.mape_by) {
      md += fmt::format("| {} |", dimension);
      for (const auto& [engine, s] : report.engines) md += fmt::format(" {} |", engine);
      md += "\n|---|";
      for (std::size_t i = 0; i < report.engines.size(); ++i) md += "---:|";
      md += "\n";
      for (const auto& [value, by_engine] : values) {
        md += fmt::format("| {} |", value);
        for (const auto& [engine, s] : report.engines) {
          const auto found = by_engine.find(engine);
          md += found == by_engine.end() ? " |" : fmt::format(" {:.1f} % |", found->second);
        }
        md += "\n";
      }
      md += "\n";
    }
  }

  md += "## Misses and their causes\n\n";
  bool any_miss = false;
  for (const ConfigResult& r : report.results)
    for (const auto& [engine, d] : r.diagnosis) {
      if (d.cause == MissCause::none) continue;
      any_miss = true;
      md += fmt::format("- **{}** ({}): {}. {}.\n", r.label, engine, to_string(d.cause), d.explanation);
    }
  if (!any_miss) md += fmt::format("None: every configuration is within {:g} %.\n", report.iteration_tolerance_percent);
  md += "\n";

  if (!report.rankings.empty()) {
    md += "## Strategy rankings\n\nFastest first. A pair counts when the measured interquartile ranges of the two "
          "strategies' iteration times do not overlap.\n\n";
    md += "| group | measured |";
    for (const auto& [engine, s] : report.engines) md += fmt::format(" {} |", engine);
    md += " decided pairs |";
    for (const auto& [engine, s] : report.engines) md += fmt::format(" {} agrees |", engine);
    md += "\n|---|---|";
    for (std::size_t i = 0; i < 2 * report.engines.size() + 1; ++i) md += "---|";
    md += "\n";
    for (const RankingGroup& g : report.rankings) {
      md += fmt::format("| {} | {} |", g.label, fmt::join(g.measured_order, " < "));
      for (const auto& [engine, s] : report.engines) md += fmt::format(" {} |", fmt::join(g.predicted_order.at(engine), " < "));
      md += fmt::format(" {} |", g.decided_pairs);
      for (const auto& [engine, s] : report.engines)
        md += fmt::format(" {} ({}/{}) |", yes_no(g.agrees.at(engine)), g.agreeing_pairs.at(engine), g.decided_pairs);
      md += "\n";
    }
    md += "\n";
  }

  md += report.fit_markdown;
  md += "## Every configuration\n\nIteration times in ms (measured: median [interquartile range] over the measured "
        "iterations); T_c, T_b and R of the measured run, then of each engine.\n\n";
  md += "| configuration | compute | load | compute speed (runs) | measured | ";
  for (const auto& [engine, s] : report.engines) md += fmt::format("{} | error | ", engine);
  md += "T_c meas | T_b meas | R meas |";
  for (const auto& [engine, s] : report.engines) md += fmt::format(" R {} |", engine);
  md += "\n|---|---|---:|---:|---:|";
  for (std::size_t i = 0; i < report.engines.size(); ++i) md += "---:|---:|";
  md += "---:|---:|---:|";
  for (std::size_t i = 0; i < report.engines.size(); ++i) md += "---:|";
  md += "\n";
  for (const ConfigResult& r : report.results) {
    md += fmt::format("| {} | {} | {} | {} | {:.2f} [{:.2f}, {:.2f}] |", r.label, r.compute,
                      r.load_average < 0 ? std::string("?") : fmt::format("{:.1f}", r.load_average),
                      r.compute_speed_ratio < 0 ? std::string("-")
                                                : fmt::format("{:.2f} ({}{})", r.compute_speed_ratio,
                                                              r.attempt_compute_speed_ratios.size(),
                                                              r.compute_recalibrated ? ", recalibrated" : ""),
                      1e3 * r.measured.iteration_s, 1e3 * r.measured.iteration_q25_s, 1e3 * r.measured.iteration_q75_s);
    for (const auto& [engine, s] : report.engines)
      md += fmt::format(" {:.2f} | {:+.1f} % |", 1e3 * r.predicted.at(engine).iteration_s, r.error_percent(engine));
    md += fmt::format(" {:.2f} | {:.2f} | {:.1f} |", 1e3 * r.measured.comm_s, 1e3 * r.measured.exposed_comm_s,
                      r.measured.overlap_ratio_percent);
    for (const auto& [engine, s] : report.engines) md += fmt::format(" {:.1f} |", r.predicted.at(engine).overlap_ratio_percent);
    md += "\n";
  }
  if (!report.environment.empty()) md += "\n## Environment\n\n```json\n" + report.environment.dump(2) + "\n```\n";
  return md;
}

std::string validation_csv(const ValidationReport& report) {
  std::string csv =
      "key,network,strategy,link,batch,ranks,compute,collectives,engine,measured_iteration_s,predicted_iteration_s,"
      "error_percent,"
      "measured_compute_s,predicted_compute_s,measured_comm_s,predicted_comm_s,measured_exposed_comm_s,"
      "predicted_exposed_comm_s,measured_overlap_ratio_percent,predicted_overlap_ratio_percent,cause,"
      "compute_speed_ratio,runs,compute_recalibrated\n";
  for (const ConfigResult& r : report.results)
    for (const auto& [engine, p] : r.predicted) {
      const auto d = r.diagnosis.find(engine);
      csv += fmt::format("{},{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.4f},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.4f},{:.4f},{},{:.4f},{},{}\n",
                         csv_field(r.key), csv_field(r.network), csv_field(r.strategy), csv_field(r.link), r.batch,
                         r.ranks, r.compute, r.collectives, engine, r.measured.iteration_s, p.iteration_s,
                         r.error_percent(engine),
                         r.measured.compute_s, p.compute_s, r.measured.comm_s, p.comm_s, r.measured.exposed_comm_s,
                         p.exposed_comm_s, r.measured.overlap_ratio_percent, p.overlap_ratio_percent,
                         csv_field(to_string(d == r.diagnosis.end() ? MissCause::none : d->second.cause)),
                         r.compute_speed_ratio, r.attempt_compute_speed_ratios.size(),
                         r.compute_recalibrated ? "true" : "false");
    }
  return csv;
}

}  // namespace cnnpar
