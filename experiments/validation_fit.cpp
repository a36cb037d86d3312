#include "experiments/validation_fit.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "model/platform.hpp"
#include "model/trace.hpp"

namespace cnnpar {

namespace {

double mean_abs(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += std::abs(v);
  return values.empty() ? 0 : sum / double(values.size());
}

std::vector<double> errors_percent(const std::vector<double>& predicted, const std::vector<double>& observed) {
  std::vector<double> out;
  for (std::size_t i = 0; i < predicted.size(); ++i) out.push_back(100 * (predicted[i] / observed[i] - 1));
  return out;
}

/** The runs of a group predicted on one platform file: the group's calibration, or a
 *  recalibration of its compute (calibration.recalibrate_compute). */
struct PlatformRuns {
  std::string file;
  nlohmann::json document;
  Observations seen, held;
};

/** Every platform's observations on that platform with `values` for the free parameters, in
 *  group order (`which`: the seen or the held-out runs). */
std::vector<double> predict_runs(const ValidationGrid& grid, const std::vector<PlatformRuns>& platforms,
                                 const std::vector<FreeParameter>& free, const std::vector<double>& values,
                                 Observations PlatformRuns::*which) {
  std::vector<double> out;
  for (const PlatformRuns& p : platforms) {
    if ((p.*which).size() == 0) continue;
    const std::vector<double> part =
        (p.*which).predict(platform_with_values(p.document, p.file, free, values, grid.file, "/fit/free"));
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

std::vector<double> observed_runs(const std::vector<PlatformRuns>& platforms, Observations PlatformRuns::*which) {
  std::vector<double> out;
  for (const PlatformRuns& p : platforms) {
    const std::vector<double> part = (p.*which).observed();
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

void fit_group(const ValidationGrid& grid, const std::vector<const ValidationFitInput*>& inputs,
               const EngineFactory& make_engine, ValidationFitGroup& g) {
  std::vector<PlatformRuns> platforms;
  for (const ValidationFitInput* input : inputs) {
    const std::string& file = input->result->platform;
    auto found = std::find_if(platforms.begin(), platforms.end(), [&](const PlatformRuns& p) { return p.file == file; });
    if (found == platforms.end()) {
      platforms.push_back({file, read_json_file(file), Observations(make_engine), Observations(make_engine)});
      found = platforms.end() - 1;
    }
    const Trace trace = trace_from_json(read_json_file(input->measured_trace), input->measured_trace);
    if (grid.fit.observes(input->result->strategy, input->result->batch)) {
      found->seen.add_trace(trace, input->measured_trace);
      g.observed.push_back(input->result->label);
    } else {
      found->held.add_trace(trace, input->measured_trace);
      g.held_out.push_back(input->result->label);
    }
  }
  g.platforms = int(platforms.size());
  // The fit starts from the first platform's values; recalibrations keep the group's network.
  try {
    for (std::size_t i = 0; i < grid.fit.free.size(); ++i)
      g.free.push_back(resolve_free_parameter(platforms.front().document, platforms.front().file, grid.fit.free[i],
                                              grid.file, fmt::format("/fit/free/{}", i)));
  } catch (const InputError& error) {
    // The path exists (checked on the base platform before the runs); this platform's value
    // cannot start a fit (a 0 in log space).
    g.skipped = fmt::format("{} cannot start from this platform: {}", error.value(), error.reason());
    return;
  }
  if (g.observed.size() < g.free.size()) {
    g.skipped = fmt::format("{} measured run(s) observed for {} free parameter(s)", g.observed.size(), g.free.size());
    return;
  }
  if (g.held_out.empty()) {
    g.skipped = "no run of this group is held out";
    return;
  }
  try {
    const FitResult result = fit_parameters(
        [&](const std::vector<double>& values) { return predict_runs(grid, platforms, g.free, values, &PlatformRuns::seen); },
        observed_runs(platforms, &PlatformRuns::seen), g.free, [&] {
          std::vector<double> start;
          for (const FreeParameter& p : g.free) start.push_back(p.start);
          return start;
        }());
    g.fitted = result.values;
    g.sigma = result.sigma;
  } catch (const FitNotConverged& error) {
    g.skipped = std::string("the fit did not converge: ") + error.what();
    return;
  } catch (const InputError& error) {
    // A parameter no observed run depends on (a slow-down of compute overlapped by no
    // communication): this group cannot tell it.
    g.skipped = error.reason();
    return;
  }
  // Before: each held-out run on its own calibrated platform, as the report predicted it.
  const std::vector<double> observed = observed_runs(platforms, &PlatformRuns::held);
  std::vector<double> calibrated;
  for (const PlatformRuns& p : platforms) {
    if (p.held.size() == 0) continue;
    const std::vector<double> part = p.held.predict(parse_platform(p.document, p.file));
    calibrated.insert(calibrated.end(), part.begin(), part.end());
  }
  g.before_percent = errors_percent(calibrated, observed);
  g.after_percent = errors_percent(predict_runs(grid, platforms, g.free, g.fitted, &PlatformRuns::held), observed);
}

}  // namespace

ValidationFit fit_validation(const ValidationGrid& grid, const std::vector<ValidationFitInput>& inputs,
                             const EngineFactory& make_engine) {
  ValidationFit fit;
  fit.free = grid.fit.free;
  if (!grid.fit.strategies.empty()) fit.observe.push_back(fmt::format("strategies {}", fmt::join(grid.fit.strategies, ", ")));
  if (!grid.fit.batches.empty()) fit.observe.push_back(fmt::format("batches {}", fmt::join(grid.fit.batches, ", ")));
  std::vector<std::string> order;
  std::map<std::string, std::vector<const ValidationFitInput*>> groups;
  for (const ValidationFitInput& input : inputs) {
    const std::string group = group_calibration(input.result->platform);
    if (groups.count(group) == 0) order.push_back(group);
    groups[group].push_back(&input);
  }
  std::vector<double> before, after;
  for (const std::string& platform : order) {
    ValidationFitGroup g;
    g.platform = platform;
    fit_group(grid, groups[platform], make_engine, g);
    before.insert(before.end(), g.before_percent.begin(), g.before_percent.end());
    after.insert(after.end(), g.after_percent.begin(), g.after_percent.end());
    fit.groups.push_back(std::move(g));
  }
  fit.held_out = int(after.size());
  fit.held_out_mape_before_percent = mean_abs(before);
  fit.held_out_mape_after_percent = mean_abs(after);
  return fit;
}

nlohmann::json to_json(const ValidationFit& fit) {
  nlohmann::json groups = nlohmann::json::array();
  for (const ValidationFitGroup& g : fit.groups) {
    nlohmann::json free = nlohmann::json::array();
    for (std::size_t i = 0; i < g.free.size() && i < g.fitted.size(); ++i)
      free.push_back({{"path", g.free[i].path},
                      {"unit", g.free[i].unit},
                      {"start", g.free[i].start},
                      {"fitted", g.fitted[i]},
                      {"sigma", g.sigma[i] ? nlohmann::json(*g.sigma[i]) : nlohmann::json(nullptr)}});
    groups.push_back({{"platform", g.platform},
                      {"platforms", g.platforms},
                      {"observed", g.observed},
                      {"held_out", g.held_out},
                      {"free", free},
                      {"held_out_error_before_percent", g.before_percent},
                      {"held_out_error_after_percent", g.after_percent},
                      {"skipped", g.skipped}});
  }
  return {{"free", fit.free},
          {"observe", fit.observe},
          {"held_out", fit.held_out},
          {"held_out_mape_before_percent", fit.held_out_mape_before_percent},
          {"held_out_mape_after_percent", fit.held_out_mape_after_percent},
          {"groups", groups}};
}

std::string validation_fit_markdown(const ValidationFit& fit) {
  std::string md = fmt::format(
      "## Fit on the measured runs\n\nIn every group of configurations predicted on one calibrated platform (or on "
      "a recalibration of its compute, each run on its own file), {} "
      "{} fitted to the measured runs of {} (`cnnpar fit`'s least squares on mean iteration times), and the group's "
      "other runs predicted on the fitted platform. Held out: {} runs; their MAPE against the mean measured iteration "
      "time is {:.1f} % calibrated, {:.1f} % fitted.\n\n",
      fmt::join(fit.free, ", "), fit.free.size() == 1 ? "is" : "are",
      fit.observe.empty() ? std::string("every strategy and batch") : fmt::format("{}", fmt::join(fit.observe, ", ")),
      fit.held_out, fit.held_out_mape_before_percent, fit.held_out_mape_after_percent);
  md += "| platform | observed | fitted | held out | MAPE calibrated | MAPE fitted |\n|---|---:|---|---:|---:|---:|\n";
  for (const ValidationFitGroup& g : fit.groups) {
    std::vector<std::string> fitted;
    for (std::size_t i = 0; i < g.free.size() && i < g.fitted.size(); ++i)
      fitted.push_back(fmt::format("{} = {}{}", g.free[i].path, g.free[i].text(g.fitted[i]),
                                   g.sigma[i] ? fmt::format(" ± {:.2g}", *g.sigma[i]) : std::string()));
    const std::string values = g.skipped.empty() ? fmt::format("{}", fmt::join(fitted, ", ")) : "not fitted: " + g.skipped;
    // The calibrations share the work folder's calibration/ (the report's environment names it).
    std::string platform = std::filesystem::path(g.platform).filename().string();
    if (g.platforms > 1) platform += fmt::format(" (+{} recalibrated)", g.platforms - 1);
    md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", platform, g.observed.size(), values, g.held_out.size(),
                      g.before_percent.empty() ? std::string("—") : fmt::format("{:.1f} %", mean_abs(g.before_percent)),
                      g.after_percent.empty() ? std::string("—") : fmt::format("{:.1f} %", mean_abs(g.after_percent)));
  }
  return md + "\n";
}

}  // namespace cnnpar
