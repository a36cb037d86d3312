#include "workload/trace_configuration.hpp"

#include <fmt/format.h>

#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

namespace {
const nlohmann::json kEmpty = nlohmann::json::object();  // JsonNode keeps a pointer
}  // namespace

TraceConfiguration trace_configuration(const Trace& trace, const std::string& file) {
  TraceConfiguration c;
  c.file = file;
  const JsonNode metadata(trace.metadata.is_object() ? trace.metadata : kEmpty, file, "/metadata");
  const auto text = [&](const char* key, const char* fallback) {
    return metadata.has(key) ? metadata.at(key).as_string() : metadata.has(fallback) ? metadata.at(fallback).as_string() : "";
  };
  // The arguments as given (a path for a network or platform file) before the names.
  c.network = text("network_argument", "network");
  c.platform = text("platform_argument", "platform");
  c.strategy = metadata.has("strategy") ? metadata.at("strategy").as_string() : "";
  c.ranks = int(trace.ranks.size());
  c.warmup_iterations = trace.warmup_iterations;
  if (metadata.has("iterations")) c.iterations = int(metadata.at("iterations").as_int_in(1, limits::kMaxIterations));
  if (metadata.has("options")) c.options = metadata.at("options").raw();
  const JsonNode options(c.options.is_object() ? c.options : kEmpty, file, "/metadata/options");
  if (options.has("batch")) c.global_batch = options.at("batch").as_int_in(1, limits::kMaxBatch);
  else if (metadata.has("global_batch")) c.global_batch = metadata.at("global_batch").as_int_in(1, limits::kMaxBatch);
  c.recompute_columns =
      options.has("columns") && parse_columns(options.at("columns").as_string(), file, options.at("columns").path());
  c.uneven_batch = options.has("uneven_batch") && options.at("uneven_batch").as_bool();
  if (c.options.is_object() && c.options.contains("conv") && !c.options.at("conv").is_null())
    c.conv = conv_paths_from_json(c.options.at("conv"), file, "/metadata/options/conv");
  if (metadata.has("set"))
    for (const JsonNode& set : metadata.at("set").items()) c.sets.push_back(set.as_string());
  if (metadata.has("slowdown")) {
    const JsonNode slowed = metadata.at("slowdown");
    for (const std::string& key : slowed.keys())
      add_slowdown(c.slowdown, key + ":" + fmt::format("{}", slowed.at(key).as_number()), file, slowed.at(key).path());
  }
  return c;
}

nlohmann::json TraceConfiguration::strategy_values(const StrategySpec& spec) const {
  nlohmann::json values = nlohmann::json::object();
  const JsonNode given(options.is_object() ? options : kEmpty, file, "/metadata/options");
  for (const OptionSpec& option : spec.options)
    if (given.has(option.key)) values[option.key] = option.parse_value(given.at(option.key).raw(), file, given.at(option.key).path());
  return values;
}

}  // namespace cnnpar
