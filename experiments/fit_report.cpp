// The report of a fit: its JSON document, the terminal text (parameters, observations,
// leave-one-out, held-out studies) and the fitted platform with the fit in its `source`.
#include "experiments/fit_report.hpp"

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/units.hpp"

namespace cnnpar {

namespace {

nlohmann::json number_or_null(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json observation_json(const Observation& o, double observed, const std::optional<double>& start_predicted,
                                double predicted) {
  nlohmann::json row = {{"source", o.source},   {"series", o.series},         {"quantity", o.quantity},
                        {"nodes", o.nodes},     {"network", o.network},       {"label", o.label()},
                        {"observed", observed}, {"predicted", predicted},     {"relative_error", predicted / observed - 1}};
  if (start_predicted) row["start_predicted"] = *start_predicted;
  return row;
}

std::string format_value(double value, const FreeParameter& free) {
  if (free.unit == "s") return format_seconds(value);
  return free.unit.empty() ? fmt::format("{:.6g}", value) : fmt::format("{:.6g} {}", value, free.unit_label());
}

std::string format_observed(const Observation& o, double value) {
  return o.quantity == "iteration_s" ? format_seconds(value) : fmt::format("{:.3f}", value);
}

}  // namespace

nlohmann::json to_json(const FitReport& report) {
  nlohmann::json free = nlohmann::json::array();
  for (std::size_t j = 0; j < report.free.size(); ++j) {
    const FreeParameter& parameter = report.free[j];
    nlohmann::json entry = {{"path", parameter.path},
                            {"unit", parameter.unit},
                            {"transform", parameter.fraction ? "logit" : "log"},
                            {"start", parameter.start},
                            {"fitted", report.fit.values[j]},
                            {"sigma", number_or_null(report.fit.sigma[j])},
                            {"identifiable", bool(report.fit.identifiable[j])}};
    if (!parameter.note.empty()) entry["note"] = parameter.note;
    free.push_back(std::move(entry));
  }
  nlohmann::json observations = nlohmann::json::array();
  for (std::size_t i = 0; i < report.observations.size(); ++i)
    observations.push_back(observation_json(report.observations[i], report.observations[i].observed,
                                            report.start_predicted[i], report.fit.predicted[i]));
  std::vector<double> observed;
  for (const Observation& o : report.observations) observed.push_back(o.observed);
  nlohmann::json loo = {{"skipped", report.loo.skipped.empty() ? nlohmann::json(nullptr) : nlohmann::json(report.loo.skipped)}};
  if (report.loo.skipped.empty()) {
    loo["mean_abs_error_percent"] = report.loo.mean_abs_error_percent;
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < report.loo.rows.size(); ++i) {
      const LeaveOneOut::Row& row = report.loo.rows[i];
      nlohmann::json entry = {{"label", report.observations[i].label()}, {"observed", observed[i]}, {"converged", row.converged}};
      if (row.converged) {
        entry["predicted"] = row.predicted;
        entry["relative_error"] = row.relative_error;
      } else {
        entry["failure"] = row.failure;
      }
      rows.push_back(std::move(entry));
    }
    loo["rows"] = std::move(rows);
  }
  nlohmann::json held = nlohmann::json::array();
  for (const HeldOut& h : report.held_out) {
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < h.observations.size(); ++i) {
      rows.push_back(observation_json(h.observations[i], h.observations[i].observed, h.start_predicted[i], h.predicted[i]));
      rows.back()["fitted_on"] = bool(h.fitted_on[i]);
    }
    held.push_back({{"study", h.study},
                    {"platform", h.platform},
                    {"platform_note", h.platform_note},
                    {"start_mean_abs_error_percent", h.start_mean_abs_error_percent},
                    {"mean_abs_error_percent", h.mean_abs_error_percent},
                    {"unseen", h.unseen},
                    {"unseen_mean_abs_error_percent", h.unseen > 0 ? nlohmann::json(h.unseen_mean_abs_error_percent) : nlohmann::json(nullptr)},
                    {"observations", std::move(rows)}});
  }
  return {{"format", "cnnpar-fit-1"},
          {"engine", report.engine},
          {"platform", report.platform_start},
          {"set", report.sets},
          {"fitted_platform", report.platform_fitted},
          {"out", report.out},
          {"free", std::move(free)},
          {"fit",
           {{"iterations", report.fit.iterations},
            {"stop_reason", report.fit.stop_reason},
            {"refused_steps", report.fit.refused_steps},
            {"last_refusal", report.fit.last_refusal},
            {"observations", report.observations.size()},
            {"free_parameters", report.free.size()},
            {"dof", report.fit.dof},
            {"chi_square", report.fit.chi_square},
            {"start_mean_abs_error_percent", mean_abs_error_percent(report.start_predicted, observed)},
            {"mean_abs_error_percent", mean_abs_error_percent(report.fit.predicted, observed)}}},
          {"observations", std::move(observations)},
          {"leave_one_out", std::move(loo)},
          {"held_out", std::move(held)}};
}

namespace {
/** "cori-haswell" or "cori-haswell with nodes.image_parallel_kernels=true". */
std::string platform_described(const FitReport& report) {
  return report.sets.empty() ? report.platform_start
                             : fmt::format("{} with {}", report.platform_start, fmt::join(report.sets, ", "));
}
}  // namespace

std::string format_fit_report(const FitReport& report) {
  std::vector<double> observed;
  for (const Observation& o : report.observations) observed.push_back(o.observed);
  std::string text = fmt::format(
      "fitted {} free parameter{} of {} to {} observations ({} engine): {} iterations, stopped on {}\n\n",
      report.free.size(), report.free.size() == 1 ? "" : "s", platform_described(report), report.observations.size(),
      report.engine, report.fit.iterations, report.fit.stop_reason);
  text += fmt::format("{:<36} {:>16} {:>16} {:>16}\n", "parameter", "start", "fitted", "± 1σ");
  for (std::size_t j = 0; j < report.free.size(); ++j) {
    const FreeParameter& free = report.free[j];
    const std::string sigma = report.fit.sigma[j]                 ? format_value(*report.fit.sigma[j], free)
                              : !report.fit.identifiable[j]       ? "not identifiable"
                                                                  : "not estimable";
    text += fmt::format("{:<36} {:>16} {:>16} {:>16}\n", free.path, format_value(free.start, free),
                        format_value(report.fit.values[j], free), sigma);
    if (!free.note.empty()) text += fmt::format("  ({})\n", free.note);
  }
  if (report.fit.dof == 0)
    text += "σ not estimable: as many observations as free parameters leave no residual to estimate it from\n";
  if (report.fit.refused_steps > 0)
    text += fmt::format("{} trial step{} left the platform's valid range and {} rejected (the last: {}); a value "
                        "at the edge of its range means the model cannot reach the observations with it\n",
                        report.fit.refused_steps, report.fit.refused_steps == 1 ? "" : "s",
                        report.fit.refused_steps == 1 ? "was" : "were", report.fit.last_refusal);
  text += fmt::format("\n{:<52} {:>12} {:>12} {:>12} {:>9}\n", "observation", "observed", "start", "fitted", "error");
  std::string source;
  for (std::size_t i = 0; i < report.observations.size(); ++i) {
    const Observation& o = report.observations[i];
    if (o.source != source) text += fmt::format("{}:\n", source = o.source);
    text += fmt::format("  {:<50} {:>12} {:>12} {:>12} {:>+8.2f}%\n", o.label(), format_observed(o, o.observed),
                        format_observed(o, report.start_predicted[i]), format_observed(o, report.fit.predicted[i]),
                        100 * (report.fit.predicted[i] / o.observed - 1));
  }
  text += fmt::format("mean |error|: {:.2f} % fitted, {:.2f} % at the start\n",
                      mean_abs_error_percent(report.fit.predicted, observed),
                      mean_abs_error_percent(report.start_predicted, observed));
  if (!report.loo.skipped.empty()) {
    text += fmt::format("\nleave-one-out cross-validation skipped: {}\n", report.loo.skipped);
  } else {
    text += "\nleave-one-out cross-validation (refit without the observation, then predict it):\n";
    for (std::size_t i = 0; i < report.loo.rows.size(); ++i) {
      const LeaveOneOut::Row& row = report.loo.rows[i];
      const Observation& o = report.observations[i];
      text += row.converged
                  ? fmt::format("  {:<50} {:>12} {:>12} {:>+8.2f}%\n", o.label(), format_observed(o, o.observed),
                                format_observed(o, row.predicted), 100 * row.relative_error)
                  : fmt::format("  {:<50} {:>12} refit failed: {}\n", o.label(), format_observed(o, o.observed), row.failure);
    }
    text += fmt::format("leave-one-out mean |error|: {:.2f} %\n", report.loo.mean_abs_error_percent);
  }
  for (const HeldOut& h : report.held_out) {
    text += fmt::format("\nheld out: {} on {} ({})\n", h.study, h.platform, h.platform_note);
    for (std::size_t i = 0; i < h.observations.size(); ++i) {
      const Observation& o = h.observations[i];
      text += fmt::format("  {:<50} {:>12} {:>12} {:>12} {:>+8.2f}%{}\n", o.label(), format_observed(o, o.observed),
                          format_observed(o, h.start_predicted[i]), format_observed(o, h.predicted[i]),
                          100 * (h.predicted[i] / o.observed - 1), h.fitted_on[i] ? "  (fitted on: not held out)" : "");
    }
    text += fmt::format("  mean |error|: {:.2f} % fitted, {:.2f} % at the start", h.mean_abs_error_percent,
                        h.start_mean_abs_error_percent);
    if (h.unseen < int(h.observations.size()))
      text += h.unseen > 0 ? fmt::format("; {:.2f} % over the {} the fit did not see", h.unseen_mean_abs_error_percent, h.unseen)
                           : std::string("; the fit saw every one of them");
    text += "\n";
  }
  return text;
}

nlohmann::json fitted_platform_json(const Platform& fitted, const std::string& name, const FitReport& report,
                                    const std::string& when) {
  nlohmann::json document = to_json(fitted);
  document["name"] = name;
  std::vector<std::string> values, observations;
  for (std::size_t j = 0; j < report.free.size(); ++j) {
    const FreeParameter& free = report.free[j];
    values.push_back(report.fit.sigma[j] ? fmt::format("{} = {} ± {} (start {})", free.path, free.text(report.fit.values[j]),
                                                       free.text(*report.fit.sigma[j]), free.text(free.start))
                                         : fmt::format("{} = {} (start {})", free.path, free.text(report.fit.values[j]),
                                                       free.text(free.start)));
  }
  for (std::size_t i = 0; i < report.observations.size(); ++i) {
    const Observation& o = report.observations[i];
    observations.push_back(fmt::format("{} {}: observed {:.6g}, fitted {:.6g} ({:+.2f} %)", o.source, o.label(), o.observed,
                                       report.fit.predicted[i], 100 * (report.fit.predicted[i] / o.observed - 1)));
  }
  std::string fit = fmt::format("cnnpar fit at {} from {} ({} engine): {}; fitted on {} observations (relative residuals): {}",
                                when, platform_described(report), report.engine, fmt::join(values, ", "),
                                report.observations.size(), fmt::join(observations, "; "));
  fit += report.loo.skipped.empty()
             ? fmt::format("; leave-one-out mean |error| {:.2f} %", report.loo.mean_abs_error_percent)
             : "; leave-one-out skipped (" + report.loo.skipped + ")";
  const std::string before = fitted.source;
  document["source"] = before.empty() ? fit : before + "; " + fit;
  return document;
}

}  // namespace cnnpar
