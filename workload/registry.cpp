#include "workload/registry.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "base/units.hpp"

namespace cnnpar {

namespace strategies {
#define CNNPAR_STRATEGY(name) StrategySpec name##_strategy();
#include "workload/strategies/registered.def"
#undef CNNPAR_STRATEGY
}  // namespace strategies

const std::vector<StrategySpec>& strategy_registry() {
  static const std::vector<StrategySpec> registry = {
#define CNNPAR_STRATEGY(name) strategies::name##_strategy(),
#include "workload/strategies/registered.def"
#undef CNNPAR_STRATEGY
  };
  return registry;
}

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const StrategySpec& spec : strategy_registry()) names.push_back(spec.name);
  return names;
}

const StrategySpec& strategy_spec(const std::string& name, const std::string& origin) {
  for (const StrategySpec& spec : strategy_registry())
    if (spec.name == name) return spec;
  std::vector<std::string> known;
  for (const StrategySpec& spec : strategy_registry()) known.push_back(spec.name);
  throw InputError(origin, "/strategy", name, fmt::format("unknown strategy (expected one of {})", fmt::join(known, ", ")));
}

const OptionSpec* StrategySpec::option(const std::string& key) const {
  for (const OptionSpec& o : options)
    if (o.key == key) return &o;
  return nullptr;
}

std::string OptionSpec::flag() const {
  std::string flag = "--" + key;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

nlohmann::json OptionSpec::parse(const std::string& text, const std::string& file, const std::string& path) const {
  const auto fail = [&](const std::string& reason) -> nlohmann::json { throw InputError(file, path, text, reason); };
  const auto in_range = [&](double value) {
    if (value < min || (max > min && value > max))
      fail(max > min ? fmt::format("must be in [{}, {}] ({})", min, max, unit)
                     : fmt::format("must be at least {} ({})", min, unit));
  };
  switch (type) {
    case OptionType::integer: {
      std::size_t used = 0;
      long long value = 0;
      try {
        value = std::stoll(text, &used);
      } catch (const std::exception&) {
        return fail("expected a whole number");
      }
      if (used != text.size()) return fail("expected a whole number");
      // Integer options are layer counts and sizes read into int: bounded even without a max.
      if (max <= min && value > limits::kMaxIndex)
        return fail(fmt::format("must be at most {} ({})", limits::kMaxIndex, unit));
      in_range(double(value));
      return value;
    }
    case OptionType::bytes: {
      double value = 0;
      try {
        value = parse_quantity(text, Unit::size_bytes, true);
      } catch (const std::invalid_argument& error) {
        return fail(error.what());
      }
      in_range(value);
      return value;
    }
    case OptionType::choice:
      if (std::find(choices.begin(), choices.end(), text) == choices.end())
        return fail(fmt::format("expected {}", fmt::join(choices, " | ")));
      return text;
    case OptionType::text:
      return text;
  }
  return fail("unknown option type");
}

nlohmann::json OptionSpec::parse_value(const nlohmann::json& value, const std::string& file, const std::string& path) const {
  if (value.is_string()) return parse(value.get<std::string>(), file, path);
  if ((type == OptionType::integer || type == OptionType::bytes) && value.is_number()) {
    const double number = value.get<double>();
    if (type == OptionType::integer && (!std::isfinite(number) || number != std::floor(number) || std::abs(number) > 9e15))
      throw InputError(file, path, value.dump(), "expected a whole number");
    return parse(type == OptionType::integer ? fmt::format("{}", std::int64_t(number)) : fmt::format("{}", number), file, path);
  }
  throw InputError(file, path, value.dump(), type == OptionType::integer || type == OptionType::bytes
                                                  ? "expected a number"
                                                  : "expected a string");
}

nlohmann::json OptionSpec::default_value() const { return parse(default_text, "<registry>", "/" + key); }

const std::vector<SharedOption>& all_strategy_options() {
  // The registry is fixed at start: gathered once (every command's flags and every sweep axis
  // ask for it).
  static const std::vector<SharedOption> shared = [] {
    std::vector<SharedOption> gathered;
    for (const StrategySpec& spec : strategy_registry())
      for (const OptionSpec& o : spec.options) {
        auto it = std::find_if(gathered.begin(), gathered.end(),
                               [&](const SharedOption& s) { return s.spec.key == o.key; });
        if (it == gathered.end()) {
          gathered.push_back({o, {spec.name}});
        } else {
          CNNPAR_ASSERT(it->spec.type == o.type && it->spec.default_text == o.default_text,
                        "option " + o.key + " means one thing in every strategy: same type and default");
          it->strategies.push_back(spec.name);
        }
      }
    return gathered;
  }();
  return shared;
}

void parse_strategy_object(const JsonNode& node, std::span<const std::string_view> own_keys, StrategyOptions& options) {
  options.name = node.at("strategy").as_string();
  const StrategySpec& spec = [&]() -> const StrategySpec& {
    try {
      return strategy_spec(options.name, node.file());
    } catch (const InputError& error) {
      node.at("strategy").fail(error.reason());
    }
  }();
  for (const std::string& key : node.keys()) {
    if (key == "strategy" || std::find(own_keys.begin(), own_keys.end(), key) != own_keys.end()) continue;
    const JsonNode value = node.at(key);
    const OptionSpec* option = spec.option(key);
    if (option == nullptr) value.fail(fmt::format("strategy {} has no option {}", spec.name, key));
    options.values[key] = option->parse_value(value.raw(), node.file(), value.path());
  }
}

// ---- StrategyOptions ------------------------------------------------------------------

namespace {
const OptionSpec& spec_of(const StrategyOptions& options, const std::string& key) {
  const OptionSpec* spec = strategy_spec(options.name, options.origin).option(key);
  CNNPAR_ASSERT(spec != nullptr, fmt::format("strategy {} has no option {}", options.name, key));
  return *spec;
}
}  // namespace

nlohmann::json StrategyOptions::value(const std::string& key) const {
  auto it = values.find(key);
  if (it != values.end()) return *it;
  return spec_of(*this, key).default_value();
}

std::int64_t StrategyOptions::integer(const std::string& key) const { return value(key).get<std::int64_t>(); }
double StrategyOptions::number(const std::string& key) const { return value(key).get<double>(); }
std::string StrategyOptions::text(const std::string& key) const { return value(key).get<std::string>(); }

StrategyOptions& StrategyOptions::set(const std::string& key, nlohmann::json v) {
  values[key] = std::move(v);
  return *this;
}

}  // namespace cnnpar
