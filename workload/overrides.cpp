#include "workload/overrides.hpp"

#include <cstddef>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/text.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

Override parse_override(const std::string& text, const std::string& origin, const std::string& flag) {
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    throw InputError(origin, flag, text, "expected PATH=VALUE, e.g. network.bandwidth=10Gbps or k=9");
  return {text.substr(0, equals), text.substr(equals + 1)};
}

bool is_strategy_option(const std::string& path) {
  for (const SharedOption& option : all_strategy_options())
    if (option.spec.key == path) return true;
  return false;
}

nlohmann::json::json_pointer platform_pointer(const std::string& path) {
  nlohmann::json::json_pointer pointer;
  for (const std::string& key : split(path, '.')) pointer /= key;
  return pointer;
}

const nlohmann::json* value_at(const nlohmann::json& document, const nlohmann::json::json_pointer& pointer) {
  try {
    return document.contains(pointer) ? &document.at(pointer) : nullptr;
  } catch (const nlohmann::json::exception&) {
    return nullptr;  // contains() throws for a list index that is no number ("", more digits than fit)
  }
}

namespace {

// The text as the JSON type of `existing` (or guessed for a new field).
nlohmann::json typed_value(const std::string& text, const nlohmann::json* existing) {
  const auto as_number = [&]() -> nlohmann::json {
    const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    return parsed.is_number() ? parsed : nlohmann::json(text);  // a non-number stays text for the parser to refuse
  };
  if (existing != nullptr) {
    if (existing->is_number()) return as_number();
    if (existing->is_boolean()) return text == "true" ? nlohmann::json(true) : text == "false" ? nlohmann::json(false) : nlohmann::json(text);
    if (existing->is_string()) return text;
  }
  if (!text.empty() && (text.front() == '[' || text.front() == '{')) {
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  if (text == "true" || text == "false") return text == "true";
  const nlohmann::json number = nlohmann::json::parse(text, nullptr, false);
  return number.is_number() ? number : nlohmann::json(text);
}

}  // namespace

nlohmann::json platform_document_with_overrides(const nlohmann::json& document, const std::string& file,
                                                const std::vector<Override>& overrides, const std::string& origin,
                                                const std::string& flag) {
  nlohmann::json edited = document;
  std::vector<std::pair<std::string, const Override*>> pointers;  // "/network/bandwidth" -> override
  for (const Override& o : overrides) {
    if (is_strategy_option(o.path)) continue;
    const nlohmann::json::json_pointer target = platform_pointer(o.path);
    // Walked from the root, so an error names the first key that cannot be there.
    std::vector<nlohmann::json::json_pointer> steps;
    for (nlohmann::json::json_pointer p = target; !p.empty(); p = p.parent_pointer()) steps.insert(steps.begin(), p);
    for (const nlohmann::json::json_pointer& step : steps) {
      const std::string& key = step.back();
      if (key.empty()) throw InputError(origin, flag, o.text(), "a path is keys joined by '.', e.g. network.bandwidth");
      if (value_at(edited, step) != nullptr) continue;
      const nlohmann::json::json_pointer parent = step.parent_pointer();
      const nlohmann::json& node = edited.at(parent);
      if (node.is_array())  // a list element by its index (nodes.kinds.0.peak); an override never adds one
        throw InputError(origin, flag, o.text(),
                         fmt::format("{} of the platform is a list of {}, so it has no element {}", parent.to_string(),
                                     node.size(), key));
      if (!node.is_object())
        throw InputError(origin, flag, o.text(),
                         fmt::format("{} of the platform is not an object, so it has no {}",
                                     parent.empty() ? "/" : parent.to_string(), key));
      if (step != target) edited[step] = nlohmann::json::object();  // a key on the way that the file leaves out
    }
    const nlohmann::json value = typed_value(o.value, value_at(edited, target));
    edited[target] = value;
    pointers.emplace_back(target.to_string(), &o);
  }
  try {
    parse_platform(edited, file);
    return edited;
  } catch (const InputError& error) {
    // The parser's complaint, told as the override that caused it (the deepest path that
    // encloses the error's path, e.g. "/network/bandwidth" for an error there).
    const Override* cause = nullptr;
    std::size_t best = 0;
    for (const auto& [pointer, o] : pointers) {
      const std::string& at = error.json_path();
      const bool encloses = at == pointer || (at.size() > pointer.size() && at.compare(0, pointer.size(), pointer) == 0 &&
                                              at[pointer.size()] == '/');
      const bool inside = pointer.size() > at.size() && pointer.compare(0, at.size(), at) == 0;  // an unknown key below `at`
      if ((encloses || inside) && pointer.size() >= best) cause = o, best = pointer.size();
    }
    if (cause == nullptr) throw;
    throw InputError(origin, flag, cause->text(), fmt::format("{}: {}", cause->path, error.reason()));
  }
}

Platform platform_with_overrides(const nlohmann::json& document, const std::string& file,
                                 const std::vector<Override>& overrides, const std::string& origin,
                                 const std::string& flag) {
  return parse_platform(platform_document_with_overrides(document, file, overrides, origin, flag), file);
}

void apply_strategy_overrides(StrategyOptions& options, const std::vector<Override>& overrides,
                              const std::string& origin, const std::string& flag) {
  const StrategySpec& spec = strategy_spec(options.name, origin);
  for (const Override& o : overrides) {
    if (!is_strategy_option(o.path)) continue;
    const OptionSpec* option = spec.option(o.path);
    if (option == nullptr)
      throw InputError(origin, flag, o.text(), fmt::format("strategy {} has no option {}", options.name, o.path));
    try {
      options.values[o.path] = option->parse(o.value, origin, flag);
    } catch (const InputError& error) {
      throw InputError(origin, flag, o.text(), fmt::format("{}: {}", o.path, error.reason()));
    }
  }
}

nlohmann::json to_json(const std::vector<Override>& overrides) {
  nlohmann::json out = nlohmann::json::array();
  for (const Override& o : overrides) out.push_back(o.text());
  return out;
}

}  // namespace cnnpar
