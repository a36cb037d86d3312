// The free parameters of a fit: a platform path resolved to its unit, start value and fit
// space (log or logit), and the platform document with given values at those paths.
#include "experiments/fit_free_parameters.hpp"

#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/text.hpp"
#include "workload/overrides.hpp"

namespace cnnpar {

std::string FreeParameter::text(double value) const { return fmt::format("{}{}", value, unit); }

std::string FreeParameter::unit_label() const {
  if (unit == "Bps") return "B/s";
  if (unit == "f") return "FLOP/s";
  return unit;
}

namespace {

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
  const nlohmann::json::json_pointer pointer = platform_pointer(path);
  const nlohmann::json* found = value_at(canonical, pointer);
  if (found == nullptr) found = value_at(document, pointer);  // fields the JSON form leaves out
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

}  // namespace cnnpar
