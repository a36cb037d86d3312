#include "experiments/fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <memory>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "analysis/metrics.hpp"
#include "experiments/report.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "workload/overrides.hpp"
#include "model/scenarios.hpp"
#include "workload/registry.hpp"
#include "workload/trace_configuration.hpp"
#include "base/units.hpp"

namespace cnnpar {

// ---------------------------------------------------------------------------------------------
// Free parameters

std::string FreeParameter::text(double value) const { return fmt::format("{}{}", value, unit); }

std::string FreeParameter::unit_label() const {
  if (unit == "Bps") return "B/s";
  if (unit == "f") return "FLOP/s";
  return unit;
}

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  for (;;) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

// The value at a dotted platform path ("nodes.kinds.0.peak"), or null.
const nlohmann::json* find_path(const nlohmann::json& root, const std::string& path) {
  const nlohmann::json* node = &root;
  for (const std::string& key : split(path, '.')) {
    if (node->is_object()) {
      const auto found = node->find(key);
      if (found == node->end()) return nullptr;
      node = &*found;
    } else if (node->is_array()) {
      const bool digits = !key.empty() && key.size() <= 9 && key.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoul(key) >= node->size()) return nullptr;
      node = &(*node)[std::stoul(key)];
    } else {
      return nullptr;
    }
  }
  return node;
}

// Optional fields whose documented default the platform's JSON form leaves out (docs/formats.md):
// read from the parsed platform, so the default is the parser's, not a copy of it.
struct DefaultedField {
  const char* path;
  const char* unit;
  double (*value)(const Platform&);
};
const DefaultedField kDefaultedFields[] = {
    {"nodes.call_overhead", "s", [](const Platform& p) { return p.nodes.call_overhead_s; }},
    {"nodes.core_bandwidth", "Bps", [](const Platform& p) { return p.nodes.core_bandwidth_Bps; }},
    {"iteration_overhead", "s", [](const Platform& p) { return p.iteration_overhead_s; }},
    {"input_per_image", "s", [](const Platform& p) { return p.input_per_image_s; }},
    {"network.reduction_rate", "Bps", [](const Platform& p) { return p.network.reduction_rate_Bps; }},
    {"network.busy_bandwidth_fraction", "", [](const Platform& p) { return p.network.busy_bandwidth_fraction; }},
};

struct NumericValue {
  double value = 0;
  std::string unit;
};

// A value of the platform's JSON form: a plain number, or a number and the base unit the form
// spells quantities in ("1250000000Bps", "1.5e-06s", "1.2e+12f", "0B").
std::optional<NumericValue> numeric(const nlohmann::json& value, const std::string& path) {
  if (value.is_number()) {
    // Measured op times and GEMM rates are plain numbers in seconds and FLOP/s.
    if (path.rfind("calibration.op_seconds.", 0) == 0) return NumericValue{value.get<double>(), "s"};
    if (path.rfind("calibration.gemm_flops.", 0) == 0) return NumericValue{value.get<double>(), "f"};
    return NumericValue{value.get<double>(), ""};
  }
  if (!value.is_string()) return std::nullopt;
  const std::string text = value.get<std::string>();
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  if (end == text.c_str()) return std::nullopt;
  const std::string unit(end);
  for (const char* base : {"Bps", "s", "f", "B"})
    if (unit == base) return NumericValue{number, unit};
  return std::nullopt;
}

bool is_fraction(const std::string& path) {
  const std::vector<std::string> keys = split(path, '.');
  return keys.back() == "busy_bandwidth_fraction" || keys.back() == "default_efficiency" ||
         (keys.size() >= 2 && keys[keys.size() - 2] == "efficiency");
}

// The numeric value at `path` of `platform` (as parsed from `document`), its documented default
// when absent; nullopt when the platform has no such field, or has it but not as a number, in
// which case `not_numeric` is set to the field's JSON.
std::optional<NumericValue> platform_value(const Platform& platform, const nlohmann::json& document,
                                           const std::string& path, std::string* not_numeric) {
  for (const DefaultedField& field : kDefaultedFields)
    if (path == field.path) return NumericValue{field.value(platform), field.unit};
  const std::vector<std::string> keys = split(path, '.');
  if (keys.size() == 3 && keys[0] == "nodes" && keys[1] == "efficiency") {
    try {
      return NumericValue{platform.nodes.efficiency_for(kernel_class_from_string(keys[2])), ""};
    } catch (const std::invalid_argument&) {
      return std::nullopt;  // not a kernel class: "has no such path"
    }
  }
  const nlohmann::json canonical = to_json(platform);
  const nlohmann::json* found = find_path(canonical, path);
  if (found == nullptr) found = find_path(document, path);  // fields the JSON form leaves out
  if (found == nullptr) return std::nullopt;
  std::optional<NumericValue> value = numeric(*found, path);
  if (!value) *not_numeric = found->dump();
  return value;
}

}  // namespace

FreeParameter resolve_free_parameter(const nlohmann::json& document, const std::string& file, const std::string& text,
                                     const std::string& origin, const std::string& flag) {
  const std::size_t equals = text.find('=');
  const std::string path = text.substr(0, equals);
  const std::string start_text = equals == std::string::npos ? "" : text.substr(equals + 1);
  if (path.empty() || (equals != std::string::npos && start_text.empty()))
    throw InputError(origin, flag, text, "expected PATH or PATH=START, e.g. network.bandwidth or network.bandwidth=10Gbps");
  if (is_strategy_option(path))
    throw InputError(origin, flag, text,
                     fmt::format("{} is a strategy option; --free takes platform paths (network.bandwidth, "
                                 "nodes.efficiency.gemm, network.latency, ...)", path));
  const Platform platform = start_text.empty() ? parse_platform(document, file)
                                               : platform_with_overrides(document, file, {{path, start_text}}, origin, flag);
  std::string not_numeric;
  const std::optional<NumericValue> value = platform_value(platform, document, path, &not_numeric);
  if (!value && not_numeric.empty())
    throw InputError(origin, flag, text, fmt::format("the platform ({}) has no {}", file, path));
  if (!value)
    throw InputError(origin, flag, text,
                     fmt::format("{} is {}, not a number or quantity: only those can be fitted", path, not_numeric));
  FreeParameter free{path, value->unit, value->value, is_fraction(path), ""};
  if (!(free.start > 0))
    throw InputError(origin, flag, text,
                     fmt::format("{} starts at {}, which a fit in log space cannot leave: give a start, e.g. {}={}", path,
                                 free.start, path, free.fraction ? "0.5" : free.unit == "s" ? "1us" : free.unit == "Bps" ? "1GBps" : "1"));
  if (free.fraction && free.start >= 1) {
    free.note = fmt::format("starts at 0.5: the platform's {} is the bound 1, which a logit cannot leave", free.start);
    free.start = 0.5;
  }
  return free;
}

Platform platform_with_values(const nlohmann::json& document, const std::string& file,
                              const std::vector<FreeParameter>& free, const std::vector<double>& values,
                              const std::string& origin, const std::string& flag) {
  CNNPAR_ASSERT(free.size() == values.size(), "one value per free parameter");
  std::vector<Override> overrides;
  for (std::size_t j = 0; j < free.size(); ++j) overrides.push_back({free[j].path, free[j].text(values[j])});
  return platform_with_overrides(document, file, overrides, origin, flag);
}

// ---------------------------------------------------------------------------------------------
// Observations

std::string Observation::label() const {
  if (quantity == "max_speedup") return series + ": maximum speedup";
  const std::string what = quantity == "speedup" ? "speedup" : "iteration time";
  const std::string at = fmt::format("{} at {} node{}", what, nodes, nodes == 1 ? "" : "s");
  if (series.empty()) return fmt::format("{} (mean of {} measured)", at, measured_iterations);
  return fmt::format("{}: {}", series, at);
}

bool ObservationFilter::keeps(const std::string& series_label, const std::string& quantity, int at_nodes) const {
  const auto in = [](const auto& list, const auto& value) {
    return list.empty() || std::find(list.begin(), list.end(), value) != list.end();
  };
  if (!nodes.empty() && quantity == "max_speedup") return false;  // a maximum has no node count of its own
  return in(series, series_label) && in(quantities, quantity) && in(nodes, at_nodes);
}

ObservationFilter parse_observation_filter(const std::vector<std::string>& texts, const std::string& origin,
                                           const std::string& flag) {
  ObservationFilter filter;
  for (const std::string& text : texts) {
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals + 1 == text.size())
      throw InputError(origin, flag, text, "expected KEY=VALUE[,VALUE...] with KEY series, nodes or quantity");
    const std::string key = text.substr(0, equals);
    const std::vector<std::string> values = split(text.substr(equals + 1), ',');
    if (key == "series") {
      filter.series.insert(filter.series.end(), values.begin(), values.end());
    } else if (key == "nodes") {
      for (int n : parse_node_list(text.substr(equals + 1), origin, flag)) filter.nodes.push_back(n);
    } else if (key == "quantity") {
      for (const std::string& value : values) {
        if (value != "speedup" && value != "iteration_s" && value != "max_speedup")
          throw InputError(origin, flag, text, "a quantity is speedup, iteration_s or max_speedup");
        filter.quantities.push_back(value);
      }
    } else {
      throw InputError(origin, flag, text, "expected KEY=VALUE[,VALUE...] with KEY series, nodes or quantity");
    }
  }
  return filter;
}

std::size_t Observations::add_study(const Study& study, const std::string& file, const ObservationFilter& filter) {
  StudyGroup group{study, observations_.size(), 0};
  group.study.series.clear();
  std::set<int> needed = {study.nodes.front()};  // a weak-scaling series' batches count from it
  const auto on_study_nodes = [&](int nodes) {
    return std::find(study.nodes.begin(), study.nodes.end(), nodes) != study.nodes.end();
  };
  for (std::size_t i = 0; i < study.series.size(); ++i) {
    const StudySeries& series = study.series[i];
    StudySeries kept = series;
    kept.paper_speedup_at.clear();
    kept.paper_iteration_s_at.clear();
    kept.paper_max_speedup = 0;
    std::string network;  // loaded once a number of the series is kept
    const auto add = [&](const std::string& quantity, int nodes, double value, const std::string& where) {
      if (network.empty()) network = load_network(series.network).name;
      Observation o;
      o.source = study.name;
      o.file = file;
      o.series = series.label;
      o.quantity = quantity;
      o.nodes = nodes;
      o.network = network;
      o.observed = value;
      o.path = fmt::format("/series/{}/paper/{}", i, where);
      o.configuration = fmt::format("{} {} {}{} {} at {}", network, to_json(series.strategy).dump(),
                                    series.weak_scaling ? "weak scaling " : "", quantity, series.strategy.global_batch,
                                    quantity == "max_speedup" ? fmt::format("{}", fmt::join(study.nodes, ",")) : std::to_string(nodes));
      o.network_path = fmt::format("/series/{}/network", i);
      observations_.push_back(std::move(o));
    };
    // In paper_comparisons' order: speedups, iteration times, the maximum.
    for (const auto& [nodes, value] : series.paper_speedup_at)
      if (on_study_nodes(nodes) && filter.keeps(series.label, "speedup", nodes)) {
        kept.paper_speedup_at[nodes] = value;
        needed.insert(nodes);
        add("speedup", nodes, value, fmt::format("speedup_at/{}", nodes));
      }
    for (const auto& [nodes, value] : series.paper_iteration_s_at)
      if (on_study_nodes(nodes) && filter.keeps(series.label, "iteration_s", nodes)) {
        kept.paper_iteration_s_at[nodes] = value;
        needed.insert(nodes);
        add("iteration_s", nodes, value, fmt::format("iteration_s_at/{}", nodes));
      }
    if (series.paper_max_speedup > 0 && filter.keeps(series.label, "max_speedup", 0)) {
      kept.paper_max_speedup = series.paper_max_speedup;
      needed.insert(study.nodes.begin(), study.nodes.end());
      add("max_speedup", 0, series.paper_max_speedup, "max_speedup");
    }
    if (!kept.paper_speedup_at.empty() || !kept.paper_iteration_s_at.empty() || kept.paper_max_speedup > 0)
      group.study.series.push_back(std::move(kept));
  }
  group.study.nodes.assign(needed.begin(), needed.end());  // only the node counts the numbers need
  group.count = observations_.size() - group.first;
  if (group.count > 0) studies_.push_back(std::move(group));
  return observations_.size() - group.first;
}

void Observations::add_trace(const Trace& trace, const std::string& file) {
  // The configuration `cnnpar trace --like` replays; its `set` is not applied: the platform
  // being fitted is the one predicted on.
  const TraceConfiguration run = trace_configuration(trace, file);
  const auto required = [&](const std::string& value, const char* key) {
    if (value.empty())
      throw InputError(file, fmt::format("/metadata/{}", key), "(missing)",
                       fmt::format("required member \"{}\" is missing: fit takes traces that cnnpar writes", key));
  };
  required(run.network, "network");
  required(run.strategy, "strategy");
  if (!run.global_batch) required("", "global_batch");
  TraceGroup group{load_network(run.network), StrategyOptions{}, run.slowdown, trace.engine == "real", observations_.size()};
  StrategyOptions& options = group.options;
  options.origin = file;
  options.name = run.strategy;
  options.global_batch = *run.global_batch;
  options.ranks = run.ranks;
  options.warmup_iterations = run.warmup_iterations;
  options.iterations = run.iterations.value_or(run.warmup_iterations + 1);
  options.uneven_batch = run.uneven_batch;
  options.recompute_columns = run.recompute_columns;
  options.values = run.strategy_values(strategy_spec(options.name, file));
  check_slowdown_ranks(group.slowdown, options.ranks, file, "/metadata/slowdown");
  const TraceMetrics metrics = compute_metrics(trace);
  if (metrics.iteration_times_s.empty())
    throw InputError(file, "/ranks", fmt::format("{} ranks", trace.ranks.size()),
                     "the trace has no measured iteration (marks after the warm-up) to fit on");
  Observation o;
  o.source = file;
  o.file = file;
  o.quantity = "iteration_s";
  o.nodes = options.ranks;
  o.network = group.network.name;
  o.observed = std::accumulate(metrics.iteration_times_s.begin(), metrics.iteration_times_s.end(), 0.0) /
               double(metrics.iteration_times_s.size());
  o.measured_iterations = int(metrics.iteration_times_s.size());
  o.path = "/ranks";
  o.network_path = "/metadata/network";
  o.configuration = fmt::format("{} {} iteration_s {} at {}", o.network, to_json(options).dump(), options.global_batch, options.ranks);
  if (!(o.observed > 0)) throw InputError(file, "/ranks", fmt::format("{}", o.observed), "the measured iteration time is not positive");
  observations_.push_back(std::move(o));
  traces_.push_back(std::move(group));
}

std::vector<double> Observations::observed() const {
  std::vector<double> values;
  for (const Observation& o : observations_) values.push_back(o.observed);
  return values;
}

std::vector<double> Observations::predict(const Platform& platform) const {
  std::vector<double> predicted(observations_.size(), 0.0);
  for (const StudyGroup& group : studies_) {
    // The report's own path from a study to its published quantities.
    const std::vector<PaperComparison> compared =
        paper_comparisons(group.study, predict_study(group.study, platform, make_engine_));
    CNNPAR_ASSERT(compared.size() == group.count, "one comparison per kept published number");
    for (std::size_t k = 0; k < group.count; ++k) predicted[group.first + k] = compared[k].predicted;
  }
  for (const TraceGroup& group : traces_) {
    Platform measured_on = platform;
    for (const auto& [rank, factor] : group.slowdown)
      if (rank < measured_on.nodes.count) measured_on.slow_down(rank, factor);
    if (group.executor_elements) measured_on.network.element_bytes = kExecutorElementBytes;
    const Trace trace = make_engine_()->run(build_schedule(group.network, measured_on, group.options), measured_on);
    const std::vector<double>& times = compute_metrics(trace).iteration_times_s;
    CNNPAR_ASSERT(!times.empty(), "a rebuilt schedule has the trace's measured iterations");
    predicted[group.index] = std::accumulate(times.begin(), times.end(), 0.0) / double(times.size());
  }
  return predicted;
}

// ---------------------------------------------------------------------------------------------
// The least-squares fit (GSL)

namespace {

// Fit coordinates: log(value), or logit(value) for a fraction, so every step stays in range.
double to_coordinate(const FreeParameter& free, double value) {
  return free.fraction ? std::log(value / (1 - value)) : std::log(value);
}
double to_value(const FreeParameter& free, double x) { return free.fraction ? 1 / (1 + std::exp(-x)) : std::exp(x); }
double value_per_coordinate(const FreeParameter& free, double value) { return free.fraction ? value * (1 - value) : value; }

// GSL's default handler aborts the process; library code reports through return codes instead.
class GslErrorsReturned {
 public:
  GslErrorsReturned() : previous_(gsl_set_error_handler_off()) {}
  ~GslErrorsReturned() { gsl_set_error_handler(previous_); }

 private:
  gsl_error_handler_t* previous_;
};

struct VectorDeleter {
  void operator()(gsl_vector* v) const { gsl_vector_free(v); }
};
struct MatrixDeleter {
  void operator()(gsl_matrix* m) const { gsl_matrix_free(m); }
};
struct WorkspaceDeleter {
  void operator()(gsl_multifit_nlinear_workspace* w) const { gsl_multifit_nlinear_free(w); }
};

struct Problem {
  const PredictFunction* predict;
  const std::vector<double>* observed;
  const std::vector<std::size_t>* included;
  const std::vector<FreeParameter>* free;
  std::exception_ptr error;  // an exception of `predict`, carried across GSL's C frames
  bool started = false;      // the start values were evaluated (and accepted)
  std::string out_of_range;  // the platform's last refusal of a trial step
  int refused = 0;           // trial steps the platform refused
};

// The residual of a trial step whose values the platform refuses (an efficiency below 1e-6, a
// time beyond 1e9 s): far above any real relative error, so the trust region rejects the step
// and shrinks, as for any step that makes the fit worse. Accepted points are always valid.
constexpr double kRefusedResidual = 1e6;

std::vector<double> values_at(const std::vector<FreeParameter>& free, const gsl_vector* x) {
  std::vector<double> values;
  for (std::size_t j = 0; j < free.size(); ++j) values.push_back(to_value(free[j], gsl_vector_get(x, j)));
  return values;
}

// r_k = predicted / observed − 1 over the included observations.
int relative_residuals(const gsl_vector* x, void* data, gsl_vector* f) {
  Problem& problem = *static_cast<Problem*>(data);
  try {
    const std::vector<double> predicted = (*problem.predict)(values_at(*problem.free, x));
    for (std::size_t k = 0; k < problem.included->size(); ++k) {
      const std::size_t i = (*problem.included)[k];
      gsl_vector_set(f, k, predicted[i] / (*problem.observed)[i] - 1);
    }
    return GSL_SUCCESS;
  } catch (const InputError& e) {
    if (!problem.started) {  // at the start values: bad input, reported as such
      problem.error = std::current_exception();
      return GSL_EBADFUNC;
    }
    problem.out_of_range = e.reason();
    ++problem.refused;
    gsl_vector_set_all(f, kRefusedResidual);
    return GSL_SUCCESS;
  } catch (...) {
    problem.error = std::current_exception();
    return GSL_EBADFUNC;
  }
}

// A step that left the platform's valid range (the parser refuses the candidate) is the fit's
// failure, not bad input: the start values were accepted.
[[noreturn]] void rethrow_from_fit(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError& e) {
    throw FitNotConverged(fmt::format("the fit did not converge: a step left the platform's valid range ({})", e.reason()));
  }
}

double infinity_norm_of_gradient(const gsl_matrix* J, const gsl_vector* f) {
  double largest = 0;
  for (std::size_t j = 0; j < J->size2; ++j) {
    double g = 0;  // (J^T f)_j, the gradient of ½‖f‖²
    for (std::size_t k = 0; k < J->size1; ++k) g += gsl_matrix_get(J, k, j) * gsl_vector_get(f, k);
    largest = std::max(largest, std::abs(g));
  }
  return largest;
}

}  // namespace

FitResult fit_parameters(const PredictFunction& predict, const std::vector<double>& observed,
                         const std::vector<FreeParameter>& free, const std::vector<double>& start,
                         const FitOptions& options, const std::vector<std::size_t>& included_given) {
  std::vector<std::size_t> included = included_given;
  if (included.empty()) {
    included.resize(observed.size());
    std::iota(included.begin(), included.end(), std::size_t(0));
  }
  const std::size_t n = included.size(), p = free.size();
  CNNPAR_ASSERT(p > 0 && n >= p && start.size() == p, "a fit needs parameters and at least as many observations");
  const GslErrorsReturned gsl_errors;
  Problem problem{&predict, &observed, &included, &free, nullptr, false, {}, 0};

  gsl_multifit_nlinear_parameters parameters = gsl_multifit_nlinear_default_parameters();
  parameters.trs = gsl_multifit_nlinear_trs_lm;  // Levenberg–Marquardt; the Jacobian by forward differences
  const std::unique_ptr<gsl_multifit_nlinear_workspace, WorkspaceDeleter> workspace(
      gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &parameters, n, p));
  CNNPAR_ASSERT(workspace != nullptr, "GSL allocates its workspace");
  const std::unique_ptr<gsl_vector, VectorDeleter> x0(gsl_vector_alloc(p));
  for (std::size_t j = 0; j < p; ++j) gsl_vector_set(x0.get(), j, to_coordinate(free[j], start[j]));
  gsl_multifit_nlinear_fdf fdf{};
  fdf.f = relative_residuals;
  fdf.df = nullptr;
  fdf.fvv = nullptr;
  fdf.n = n;
  fdf.p = p;
  fdf.params = &problem;

  // The start values alone first: the platform's refusal of them is bad input. (The start's
  // finite-difference Jacobian may step out of range like any trial step.)
  {
    const std::unique_ptr<gsl_vector, VectorDeleter> f0(gsl_vector_alloc(n));
    relative_residuals(x0.get(), &problem, f0.get());
    if (problem.error) std::rethrow_exception(problem.error);
    problem.started = true;
  }
  int status = gsl_multifit_nlinear_init(x0.get(), &fdf, workspace.get());
  if (problem.error) rethrow_from_fit(problem.error);
  CNNPAR_ASSERT(status == GSL_SUCCESS, "GSL starts the fit");
  const gsl_matrix* J = gsl_multifit_nlinear_jac(workspace.get());
  double largest_column = 0;
  std::vector<double> column_norm(p, 0.0);
  for (std::size_t j = 0; j < p; ++j) {
    for (std::size_t k = 0; k < n; ++k) column_norm[j] += gsl_matrix_get(J, k, j) * gsl_matrix_get(J, k, j);
    column_norm[j] = std::sqrt(column_norm[j]);
    largest_column = std::max(largest_column, column_norm[j]);
  }
  for (std::size_t j = 0; j < p; ++j)
    if (!(column_norm[j] > 0))
      throw InputError("command line", "--free", free[j].path,
                       fmt::format("no observation depends on {} at its start {}{}, so the fit cannot determine it",
                                   free[j].path, start[j], free[j].unit_label().empty() ? "" : " " + free[j].unit_label()));

  int info = 0;
  status = gsl_multifit_nlinear_driver(std::size_t(options.max_iterations), options.xtol, options.gtol, 0.0, nullptr,
                                       nullptr, &info, workspace.get());
  if (problem.error) rethrow_from_fit(problem.error);
  FitResult result;
  result.iterations = int(gsl_multifit_nlinear_niter(workspace.get()));
  const gsl_vector* f = gsl_multifit_nlinear_residual(workspace.get());
  J = gsl_multifit_nlinear_jac(workspace.get());
  if (status == GSL_SUCCESS) {
    result.stop_reason = info == 1 ? "small step" : info == 2 ? "small gradient" : "converged";
  } else if (info == GSL_ENOPROG && infinity_norm_of_gradient(J, f) <= std::sqrt(options.gtol)) {
    // No step lowered the cost on the first try and the gradient vanishes: the start is
    // already the minimum (an exact start, or a leave-one-out refit from the full fit).
    result.stop_reason = "start already optimal";
  } else {
    // The platform's last refusal of a step says where the fit was heading.
    const std::string heading =
        problem.out_of_range.empty() ? "" : fmt::format("; the last step it refused: {}", problem.out_of_range);
    if (status == GSL_EMAXITER)
      throw FitNotConverged(fmt::format("the fit did not converge within {} iteration{} (--max-iterations){}",
                                        options.max_iterations, options.max_iterations == 1 ? "" : "s", heading));
    throw FitNotConverged(fmt::format("the fit did not converge: GSL stopped after {} iterations: {}{}", result.iterations,
                                      gsl_strerror(info == GSL_ENOPROG ? GSL_ENOPROG : status), heading));
  }

  result.refused_steps = problem.refused;
  result.last_refusal = problem.out_of_range;
  result.values = values_at(free, gsl_multifit_nlinear_position(workspace.get()));
  gsl_blas_ddot(f, f, &result.chi_square);
  result.dof = int(n) - int(p);
  const std::unique_ptr<gsl_matrix, MatrixDeleter> covariance(gsl_matrix_alloc(p, p));
  gsl_multifit_nlinear_covar(J, 0.0, covariance.get());
  for (std::size_t j = 0; j < p; ++j) {
    double column = 0;
    for (std::size_t k = 0; k < n; ++k) column += gsl_matrix_get(J, k, j) * gsl_matrix_get(J, k, j);
    result.identifiable.push_back(column > 0);
    if (result.dof > 0 && column > 0) {
      // σ of the coordinate, scaled by the residual variance, then in the value's unit.
      const double sigma_x = std::sqrt(gsl_matrix_get(covariance.get(), j, j) * result.chi_square / result.dof);
      result.sigma.push_back(sigma_x * value_per_coordinate(free[j], result.values[j]));
    } else {
      result.sigma.push_back(std::nullopt);
    }
  }
  try {
    result.predicted = predict(result.values);
  } catch (...) {
    rethrow_from_fit(std::current_exception());
  }
  return result;
}

double mean_abs_error_percent(const std::vector<double>& predicted, const std::vector<double>& observed) {
  if (observed.empty()) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) sum += std::abs(predicted[i] / observed[i] - 1);
  return 100 * sum / double(observed.size());
}

LeaveOneOut leave_one_out(const PredictFunction& predict, const std::vector<double>& observed,
                          const std::vector<FreeParameter>& free, const std::vector<double>& fitted,
                          const FitOptions& options, const SweepProgress& progress) {
  LeaveOneOut out;
  if (observed.size() <= free.size()) {
    out.skipped = fmt::format("{} observations for {} free parameters: leaving one out leaves fewer observations than "
                              "parameters",
                              observed.size(), free.size());
    return out;
  }
  double sum = 0;
  int counted = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    std::vector<std::size_t> others;
    for (std::size_t k = 0; k < observed.size(); ++k)
      if (k != i) others.push_back(k);
    LeaveOneOut::Row row;
    try {
      row.predicted = fit_parameters(predict, observed, free, fitted, options, others).predicted[i];
      row.relative_error = row.predicted / observed[i] - 1;
      sum += std::abs(row.relative_error);
      ++counted;
    } catch (const FitNotConverged& e) {
      row.converged = false;
      row.failure = e.what();
    } catch (const InputError& e) {  // without it, no observation depends on a parameter
      row.converged = false;
      row.failure = e.reason();
    }
    out.rows.push_back(row);
    if (progress) progress(int(i + 1), int(observed.size()));
  }
  out.mean_abs_error_percent = counted > 0 ? 100 * sum / counted : 0;
  return out;
}

HeldOut predict_held_out(const std::string& study, const Observations& held, const Platform& start, const Platform& fitted,
                         const std::vector<Observation>& seen, bool same_platform) {
  HeldOut out;
  out.study = study;
  out.platform = fitted.name;
  out.observations = held.list();
  out.start_predicted = held.predict(start);
  out.predicted = held.predict(fitted);
  const std::vector<double> observed = held.observed();
  out.start_mean_abs_error_percent = mean_abs_error_percent(out.start_predicted, observed);
  out.mean_abs_error_percent = mean_abs_error_percent(out.predicted, observed);
  std::vector<double> unseen_predicted, unseen_observed;
  for (std::size_t i = 0; i < out.observations.size(); ++i) {
    const bool fitted_on = same_platform && std::any_of(seen.begin(), seen.end(), [&](const Observation& o) {
                             return o.configuration == out.observations[i].configuration;
                           });
    out.fitted_on.push_back(fitted_on);
    if (fitted_on) continue;
    unseen_predicted.push_back(out.predicted[i]);
    unseen_observed.push_back(observed[i]);
  }
  out.unseen = int(unseen_observed.size());
  out.unseen_mean_abs_error_percent = mean_abs_error_percent(unseen_predicted, unseen_observed);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reports

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
