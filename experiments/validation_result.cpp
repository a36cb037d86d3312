// One configuration's result: its fidelity metrics and error, and its JSON result file, written
// and read back.
#include "experiments/validation_result.hpp"

#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "base/statistics.hpp"
#include "experiments/validation_causes.hpp"
#include "experiments/validation_grid.hpp"

namespace cnnpar {

using detail::kCauses;

FidelityMetrics fidelity_metrics(const TraceMetrics& metrics) {
  FidelityMetrics f;
  f.iteration_s = metrics.iteration_s;
  f.compute_s = metrics.compute_max_s;
  f.comm_s = metrics.comm_s;
  f.exposed_comm_s = metrics.exposed_comm_s;
  f.overlap_ratio_percent = metrics.overlap_ratio_percent;
  f.iteration_q25_s = quantile(metrics.iteration_times_s, 0.25);
  f.iteration_q75_s = quantile(metrics.iteration_times_s, 0.75);
  f.measured_iterations = int(metrics.iteration_times_s.size());
  return f;
}

double ConfigResult::error_percent(const std::string& engine) const {
  const auto found = predicted.find(engine);
  if (found == predicted.end() || !(measured.iteration_s > 0)) return 0;
  return 100 * (found->second.iteration_s / measured.iteration_s - 1);
}

namespace {

MissCause miss_cause_from_string(const JsonNode& node) {
  const std::string text = node.as_string();
  for (MissCause cause : kCauses)
    if (text == to_string(cause)) return cause;
  node.fail("not a cause of a miss");
}

nlohmann::json to_json(const FidelityMetrics& f) {
  return {{"iteration_s", f.iteration_s},
          {"compute_s", f.compute_s},
          {"comm_s", f.comm_s},
          {"exposed_comm_s", f.exposed_comm_s},
          {"overlap_ratio_percent", f.overlap_ratio_percent},
          {"iteration_q25_s", f.iteration_q25_s},
          {"iteration_q75_s", f.iteration_q75_s},
          {"measured_iterations", f.measured_iterations}};
}

FidelityMetrics fidelity_from_json(const JsonNode& node) {
  node.check_keys({"iteration_s", "compute_s", "comm_s", "exposed_comm_s", "overlap_ratio_percent", "iteration_q25_s",
                   "iteration_q75_s", "measured_iterations"});
  FidelityMetrics f;
  f.iteration_s = node.at("iteration_s").as_nonnegative_number();
  f.compute_s = node.at("compute_s").as_nonnegative_number();
  f.comm_s = node.at("comm_s").as_nonnegative_number();
  f.exposed_comm_s = node.at("exposed_comm_s").as_nonnegative_number();
  f.overlap_ratio_percent = node.at("overlap_ratio_percent").as_number();  // clock jitter can take it past 0 or 100
  f.iteration_q25_s = node.at("iteration_q25_s").as_nonnegative_number();
  f.iteration_q75_s = node.at("iteration_q75_s").as_nonnegative_number();
  f.measured_iterations = int(node.at("measured_iterations").as_int_in(0, limits::kMaxIterations));
  return f;
}

}  // namespace

nlohmann::json to_json(const ConfigResult& r) {
  nlohmann::json predicted = nlohmann::json::object(), diagnosis = nlohmann::json::object(),
                 errors = nlohmann::json::object();
  for (const auto& [engine, metrics] : r.predicted) {
    predicted[engine] = to_json(metrics);
    errors[engine] = r.error_percent(engine);
  }
  for (const auto& [engine, d] : r.diagnosis) diagnosis[engine] = {{"cause", to_string(d.cause)}, {"explanation", d.explanation}};
  return {{"format", "cnnpar-validation-result"},
          {"key", r.key},
          {"label", r.label},
          {"network", r.network},
          {"strategy", r.strategy},
          {"link", r.link},
          {"batch", r.batch},
          {"ranks", r.ranks},
          {"compute", r.compute},
          {"collectives", r.collectives},
          {"settings", r.settings},
          {"platform", r.platform},
          {"load_average", r.load_average},
          {"compute_speed_ratio", r.compute_speed_ratio},
          {"attempt_compute_speed_ratios", r.attempt_compute_speed_ratios},
          {"compute_recalibrated", r.compute_recalibrated},
          {"measured", to_json(r.measured)},
          {"predicted", predicted},
          {"error_percent", errors},
          {"diagnosis", diagnosis}};
}

ConfigResult config_result_from_json(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  if (!document.is_object()) root.fail("a validation result is a JSON object");
  root.check_keys({"format", "key", "label", "network", "strategy", "link", "batch", "ranks", "compute", "collectives",
                   "settings", "platform", "load_average", "compute_speed_ratio", "attempt_compute_speed_ratios",
                   "compute_recalibrated", "measured", "predicted", "error_percent", "diagnosis"});
  if (root.at("format").as_string() != "cnnpar-validation-result") root.at("format").fail("not a validation result");
  ConfigResult r;
  r.key = root.at("key").as_string();
  r.label = root.at("label").as_string();
  r.network = root.at("network").as_string();
  r.strategy = root.at("strategy").as_string();
  r.link = root.at("link").as_string();
  r.batch = root.at("batch").as_int_in(1, limits::kMaxBatch);
  r.ranks = int(root.at("ranks").as_int_in(1, limits::kMaxRanks));
  r.compute = root.at("compute").as_string();
  // Results written before collectives were a grid axis ran in the grid's one mode, p2p.
  r.collectives = root.string_or("collectives", r.collectives);
  if (!is_collectives_mode(r.collectives)) root.at("collectives").fail("expected mpi or p2p");
  r.settings = root.at("settings").as_string();
  r.platform = root.at("platform").as_string();
  r.load_average = root.at("load_average").as_number();
  // Results written before the compute speed check have neither (-1 and none: not checked).
  if (root.has("compute_speed_ratio")) r.compute_speed_ratio = root.at("compute_speed_ratio").as_number();
  if (root.has("attempt_compute_speed_ratios"))
    for (const JsonNode& ratio : root.at("attempt_compute_speed_ratios").items())
      r.attempt_compute_speed_ratios.push_back(ratio.as_number());
  if (root.has("compute_recalibrated")) r.compute_recalibrated = root.at("compute_recalibrated").as_bool();
  r.measured = fidelity_from_json(root.at("measured"));
  const JsonNode predicted = root.at("predicted");
  for (const std::string& engine : predicted.keys()) r.predicted[engine] = fidelity_from_json(predicted.at(engine));
  const JsonNode diagnosis = root.at("diagnosis");
  for (const std::string& engine : diagnosis.keys()) {
    const JsonNode d = diagnosis.at(engine);
    d.check_keys({"cause", "explanation"});
    r.diagnosis[engine] = Diagnosis{miss_cause_from_string(d.at("cause")), d.at("explanation").as_string()};
  }
  return r;
}

}  // namespace cnnpar
