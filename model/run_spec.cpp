#include "model/run_spec.hpp"

#include "model/error.hpp"
#include "model/json_node.hpp"
#include "model/strategies/registry.hpp"

namespace cnnpar {

nlohmann::json to_json(const RunSpec& spec) {
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [key, value] : spec.strategy.values.items()) options[key] = value;
  nlohmann::json j = {{"format", "cnnpar-run-spec"},
                      {"network", spec.network},
                      {"platform", spec.platform},
                      {"strategy", spec.strategy.name},
                      {"options", options},
                      {"batch", spec.strategy.global_batch},
                      {"iterations", spec.strategy.iterations},
                      {"warmup", spec.strategy.warmup_iterations},
                      {"seed", spec.seed},
                      {"dataset", spec.dataset},
                      {"compute", spec.compute},
                      {"progress", spec.progress},
                      {"collectives", spec.collectives},
                      {"timeout_s", spec.timeout_s},
                      {"trace", spec.trace},
                      {"weights_out", spec.weights_out}};
  if (spec.learning_rate) j["lr"] = *spec.learning_rate;
  if (spec.momentum) j["momentum"] = *spec.momentum;
  if (spec.weight_decay) j["weight_decay"] = *spec.weight_decay;
  if (spec.poll_interval_us) j["poll_interval_us"] = *spec.poll_interval_us;
  return j;
}

RunSpec run_spec_from_json(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  root.check_keys({"format", "network", "platform", "strategy", "options", "batch", "iterations", "warmup", "seed",
                   "lr", "momentum", "weight_decay", "dataset", "compute", "progress", "collectives", "poll_interval_us",
                   "timeout_s", "trace", "weights_out"});
  if (root.string_or("format", "cnnpar-run-spec") != "cnnpar-run-spec")
    root.at("format").fail("expected \"cnnpar-run-spec\"");
  RunSpec spec;
  spec.network = root.at("network").as_string();
  spec.platform = root.string_or("platform", spec.platform);
  StrategyOptions& s = spec.strategy;
  s.origin = file;
  s.name = root.at("strategy").as_string();
  const StrategySpec& strategy = [&]() -> const StrategySpec& {
    try {
      return strategy_spec(s.name, file);
    } catch (const InputError& error) {
      root.at("strategy").fail(error.what());
    }
  }();
  if (root.has("options"))
    for (const std::string& key : root.at("options").keys()) {
      const JsonNode value = root.at("options").at(key);
      const OptionSpec* option = strategy.option(key);
      if (option == nullptr) value.fail("strategy " + s.name + " has no option " + key);
      s.values[key] = option->parse_value(value.raw(), file, value.path());
    }
  s.global_batch = root.at("batch").as_positive_int();
  s.iterations = int(root.at("iterations").as_positive_int());
  s.warmup_iterations = int(root.int_or("warmup", 1));
  spec.seed = std::uint64_t(root.int_or("seed", 1));
  if (root.has("lr")) spec.learning_rate = root.at("lr").as_number();
  if (root.has("momentum")) spec.momentum = root.at("momentum").as_number();
  if (root.has("weight_decay")) spec.weight_decay = root.at("weight_decay").as_number();
  spec.dataset = root.string_or("dataset", spec.dataset);
  spec.compute = root.string_or("compute", spec.compute);
  spec.progress = root.string_or("progress", spec.progress);
  spec.collectives = root.string_or("collectives", spec.collectives);
  if (root.has("poll_interval_us")) spec.poll_interval_us = root.at("poll_interval_us").as_nonnegative_number();
  spec.timeout_s = root.has("timeout_s") ? root.at("timeout_s").as_positive_number() : spec.timeout_s;
  spec.trace = root.string_or("trace", "");
  spec.weights_out = root.string_or("weights_out", "");
  return spec;
}

}  // namespace cnnpar
