// `cnnpar fit`: fits the platform parameters named by --free to observations (published study
// numbers, measured traces) by GSL's nonlinear least squares (experiments/fit.hpp); prints the
// fitted values with their uncertainty, every observation's residual, leave-one-out
// cross-validation and held-out studies; writes the fitted platform JSON.
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/output_files.hpp"
#include "base/text.hpp"
#include "engines/registry.hpp"
#include "experiments/fit.hpp"
#include "model/scenarios.hpp"
#include "workload/overrides.hpp"
#include "workload/study.hpp"

namespace cnnpar::cli {

namespace {

struct FitCommandOptions {
  std::string platform;              ///< empty: the observations' own platform
  std::vector<std::string> free;     ///< PATH[=START], comma lists allowed
  std::vector<std::string> studies;  ///< names or files
  std::vector<std::string> only;     ///< KEY=VALUE[,VALUE...]
  std::vector<std::string> traces;   ///< measured Trace JSON files
  std::vector<std::string> held_out; ///< studies predicted after the fit
  std::string network;               ///< the observations' network; "*" accepts several
  std::vector<std::string> sets;     ///< --set PATH=VALUE on the fitted (and held-out) platforms
  std::vector<std::string> also;     ///< PLATFORM=FILE: another platform written with the fitted values
  std::string out;
  std::string json_out;
  int max_iterations = 100;
  bool quiet = false;
  bool progress = false;
};

struct LoadedStudy {
  Study study;
  std::string file;
};

LoadedStudy read_study(const std::string& name_or_path) {
  ScenarioDocument document = load_scenario("studies", name_or_path);
  return {parse_study(document.json, document.origin), document.origin};
}

std::vector<std::string> comma_list(const std::vector<std::string>& texts) {
  std::vector<std::string> items;
  for (const std::string& text : texts) {
    const std::vector<std::string> parts = split(text, ',');
    items.insert(items.end(), parts.begin(), parts.end());
  }
  return items;
}

std::string trace_platform(const Trace& trace) {
  for (const char* key : {"platform_argument", "platform"})
    if (trace.metadata.is_object() && trace.metadata.contains(key) && trace.metadata.at(key).is_string())
      return trace.metadata.at(key).get<std::string>();
  return "";
}

// The observations must be of one network: --network's, else the first observation's.
void check_networks(const Observations& observations, const std::string& network_flag) {
  if (network_flag == "*") return;
  const std::string expected = network_flag.empty() ? observations.list().front().network : load_network(network_flag).name;
  for (const Observation& o : observations.list())
    if (o.network != expected)
      throw InputError(o.file, o.network_path, o.network,
                       network_flag.empty()
                           ? fmt::format("an observation of network {}, the first one is of {}: fit one network "
                                         "(--only series=..., --network NAME) or allow several with --network '*'",
                                         o.network, expected)
                           : fmt::format("an observation of network {}, not of {} (--network)", o.network, expected));
}

int run_fit(const FitCommandOptions& o) {
  check_output_path(o.out, "--out");
  check_output_path(o.json_out, "--json");
  if (o.studies.empty() && o.traces.empty())
    throw InputError("command line", "--study", "", "no observations: give --study NAME|FILE or --trace FILE");
  if (!o.only.empty() && o.studies.empty())
    throw InputError("command line", "--only", o.only.front(), "--only selects published numbers of --study");
  const ObservationFilter filter = parse_observation_filter(o.only);

  // Observations, and the platform they name.
  const EngineFactory analytic = [] { return make_engine(EngineSettings{}); };
  Observations observations(analytic);
  std::set<std::string> named_platforms;
  for (const std::string& name : o.studies) {
    const LoadedStudy loaded = read_study(name);
    if (observations.add_study(loaded.study, loaded.file, filter) == 0)
      throw InputError("command line", o.only.empty() ? "--study" : "--only", o.only.empty() ? name : fmt::format("{}", fmt::join(o.only, " ")),
                       fmt::format("study {} has no published number (series' paper){} to fit on", loaded.study.name,
                                   o.only.empty() ? "" : " that --only keeps"));
    named_platforms.insert(loaded.study.platform);
  }
  for (const std::string& path : o.traces) {
    const Trace trace = trace_from_json(read_json_file(path), path);
    observations.add_trace(trace, path);
    if (!trace_platform(trace).empty()) named_platforms.insert(trace_platform(trace));
  }
  check_networks(observations, o.network);
  std::string platform_name = o.platform;
  if (platform_name.empty()) {
    if (named_platforms.size() != 1)
      throw InputError("command line", "--platform", "",
                       named_platforms.empty()
                           ? std::string("the observations name no platform: give the one to fit with --platform")
                           : fmt::format("the observations name several platforms ({}): give the one to fit with --platform",
                                         fmt::join(named_platforms, ", ")));
    platform_name = *named_platforms.begin();
  }
  // --set changes what is fitted: a mechanism turned on, a value held at another number.
  std::vector<Override> sets;
  for (const std::string& text : o.sets) {
    sets.push_back(parse_override(text, "command line", "--set"));
    if (is_strategy_option(sets.back().path))
      throw InputError("command line", "--set", text, "fit takes platform paths only (the studies and traces give the strategies)");
  }
  const auto with_sets = [&](ScenarioDocument document) {
    document.json = platform_document_with_overrides(document.json, document.origin, sets, "command line", "--set");
    return document;
  };
  const ScenarioDocument platform = with_sets(load_scenario("platforms", platform_name));

  // Free parameters.
  std::vector<FreeParameter> free;
  for (const std::string& text : comma_list(o.free)) {
    free.push_back(resolve_free_parameter(platform.json, platform.origin, text));
    for (std::size_t j = 0; j + 1 < free.size(); ++j)
      if (free[j].path == free.back().path)
        throw InputError("command line", "--free", text, fmt::format("{} is freed twice", free.back().path));
  }
  std::vector<std::string> paths;
  for (const FreeParameter& parameter : free) paths.push_back(parameter.path);
  if (observations.size() < free.size())
    throw InputError("command line", "--free", fmt::format("{}", fmt::join(paths, ",")),
                     fmt::format("{} free parameters but {} observation{}: a fit needs at least as many observations as "
                                 "parameters (free fewer, or add --study/--trace)",
                                 free.size(), observations.size(), observations.size() == 1 ? "" : "s"));
  std::vector<double> start;
  for (const FreeParameter& parameter : free) start.push_back(parameter.start);
  const Platform start_platform = platform_with_values(platform.json, platform.origin, free, start);

  // Other platforms that take the fitted values (--also), read and checked before the fit runs.
  struct AlsoOutput {
    ScenarioDocument platform;
    std::string file;
    std::string name;  ///< the file's base name
  };
  std::vector<AlsoOutput> also;
  for (const std::string& text : o.also) {
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
      throw InputError("command line", "--also", text, "expected PLATFORM=FILE");
    ScenarioDocument document;
    try {
      document = load_scenario("platforms", text.substr(0, equals));
    } catch (const InputError& error) {
      if (error.file() != "<command line>") throw;  // a bad platform file names itself
      throw InputError("command line", "--also", text, error.reason());
    }
    AlsoOutput output{with_sets(std::move(document)), text.substr(equals + 1), {}};
    output.name = std::filesystem::path(output.file).stem().string();
    if (output.file == o.out) throw InputError("command line", "--also", text, "the file is the fitted platform's (--out)");
    // The free paths must exist there too: checked now, with the start values.
    platform_with_values(output.platform.json, output.platform.origin, free, start, "command line", "--also");
    also.push_back(std::move(output));
  }

  // Held-out studies are read (and checked) before the fit runs.
  struct HeldOutInput {
    LoadedStudy loaded;
    std::unique_ptr<Observations> observations;
    ScenarioDocument platform;
  };
  std::vector<HeldOutInput> held_inputs;
  for (const std::string& name : comma_list(o.held_out)) {
    HeldOutInput input{read_study(name), std::make_unique<Observations>(analytic), {}};
    if (input.observations->add_study(input.loaded.study, input.loaded.file) == 0)
      throw InputError("command line", "--held-out", name,
                       fmt::format("study {} has no published number (series' paper) to predict", input.loaded.study.name));
    input.platform = with_sets(load_scenario("platforms", input.loaded.study.platform));
    held_inputs.push_back(std::move(input));
  }

  const PredictFunction predict = [&](const std::vector<double>& values) {
    return observations.predict(platform_with_values(platform.json, platform.origin, free, values));
  };
  FitReport report;
  report.engine = analytic()->name();
  report.platform_start = start_platform.name;
  for (const Override& set : sets) report.sets.push_back(set.text());
  report.platform_fitted = start_platform.name + "-fitted";
  report.out = o.out;
  report.free = free;
  report.observations = observations.list();
  report.start_predicted = predict(start);  // bad input of the configurations (too few nodes) surfaces here
  FitOptions options;
  options.max_iterations = o.max_iterations;
  const std::vector<double> observed = observations.observed();
  report.fit = fit_parameters(predict, observed, free, start, options);
  {
    Progress progress("fit: leave-one-out refits", o.progress, o.quiet);
    report.loo = leave_one_out(predict, observed, free, report.fit.values, options,
                               [&](int done, int total) { progress.update(done, total); });
  }
  const Platform fitted = platform_with_values(platform.json, platform.origin, free, report.fit.values);

  for (HeldOutInput& input : held_inputs) {
    const bool same_platform = input.platform.origin == platform.origin;
    // Another platform takes the fitted values of the free paths; everything else stays its own.
    const Platform held_start = same_platform ? start_platform
                                              : platform_with_values(input.platform.json, input.platform.origin, free, start,
                                                                     "command line", "--held-out");
    const Platform held_fitted = same_platform ? fitted
                                               : platform_with_values(input.platform.json, input.platform.origin, free,
                                                                      report.fit.values, "command line", "--held-out");
    report.held_out.push_back(predict_held_out(input.loaded.study.name, *input.observations, held_start, held_fitted,
                                               report.observations, same_platform));
    report.held_out.back().platform_note =
        same_platform ? "the fitted platform" : "its own platform with the fitted values of the free paths";
  }

  OutputTransaction outputs;
  const std::string when = utc_timestamp();
  outputs.file(o.out, fitted_platform_json(fitted, report.platform_fitted, report, when).dump(2) + "\n");
  for (const AlsoOutput& output : also) {
    const Platform values = platform_with_values(output.platform.json, output.platform.origin, free, report.fit.values,
                                                 "command line", "--also");
    outputs.file(output.file, fitted_platform_json(values, output.name, report, when).dump(2) + "\n");
  }
  if (!o.json_out.empty()) outputs.file(o.json_out, to_json(report).dump(2) + "\n");
  outputs.commit();
  if (!o.quiet && o.out != "-" && o.json_out != "-")
    fmt::print("{}\nfitted platform: {}\n", format_fit_report(report), o.out);
  return 0;
}

}  // namespace

Runner add_fit_command(CLI::App& app) {
  auto o = std::make_shared<FitCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "fit", "fit platform parameters to published study numbers or measured traces (GSL nonlinear least squares)");
  sub->footer(
      "Each free parameter is one number for the whole platform. Residuals are relative errors "
      "(predicted / observed - 1), predicted by the analytic engine; positive quantities are fitted in log space, "
      "fractions (efficiencies, busy_bandwidth_fraction) as logits. Uncertainty: 1 sigma from the covariance, "
      "scaled by the residual variance (not estimable with as many observations as parameters). "
      "Leave-one-out refits without each observation and predicts it.\n"
      "Example: cnnpar fit --study lee2017-fig6-vgg-a --free network.bandwidth,nodes.efficiency.gemm "
      "--held-out lee2017-fig8-batch,lee2017-fig9-parameters --out cori-fitted.json");
  sub->add_option("--free", o->free,
                  "platform paths to fit, as --set names them, comma-separated or repeated: PATH or PATH=START "
                  "(START in the platform's units, e.g. network.reduction_rate=5GBps; needed when the value is 0); "
                  "e.g. network.bandwidth,nodes.efficiency.gemm,network.latency,nodes.call_overhead,"
                  "iteration_overhead,input_per_image,network.reduction_rate,network.busy_bandwidth_fraction")
      ->required()
      ->type_name("PATH[=START]");
  sub->add_option("--study", o->studies,
                  "fit on every published number (series' paper: speedup_at, iteration_s_at, max_speedup) of this study "
                  "(name or JSON path; repeatable)")
      ->type_name("NAME|FILE");
  sub->add_option("--only", o->only,
                  "keep only these published numbers: series=LABEL[,LABEL], nodes=N[,N] (drops maximum speedups), "
                  "quantity=speedup|iteration_s|max_speedup; repeated filters all hold")
      ->type_name("KEY=VALUE");
  sub->add_option("--trace", o->traces,
                  "fit on the measured mean iteration time of this Trace JSON (cnnpar-run --trace), predicted on the "
                  "schedule rebuilt from its metadata (repeatable)")
      ->type_name("FILE");
  sub->add_option("--held-out", o->held_out,
                  "after the fit, predict the published numbers of these studies (comma-separated) with the fitted "
                  "values, and print their errors before and after")
      ->type_name("STUDY[,STUDY]");
  sub->add_option("--platform", o->platform,
                  "platform to fit (name or JSON path); default: the one the observations name (the study's, the trace's)");
  sub->add_option("--network", o->network,
                  "the network every observation must be of (name or JSON path); default: the first observation's; "
                  "'*' allows several");
  flags::set_values(*sub, o->sets);
  sub->add_option("--out,-o", o->out, "write the fitted platform JSON here (its source records the fit)")->required();
  sub->add_option("--also", o->also,
                  "also write this platform (name or JSON path) with the fitted values of the free paths and the --set "
                  "values to FILE, named after FILE, its source recording the fit (repeatable); e.g. the platforms of "
                  "held-out studies")
      ->type_name("PLATFORM=FILE");
  flags::json_out(*sub, o->json_out, "the fit report (parameters, residuals, leave-one-out, held-out)");
  sub->add_option("--max-iterations", o->max_iterations,
                  "iterations of the least-squares solver before the fit counts as not converged (status 1)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  flags::quiet(*sub, o->quiet);
  flags::progress(*sub, o->progress);
  return [o] { return run_fit(*o); };
}

}  // namespace cnnpar::cli
