#include "workload/overrides.hpp"

#include <cstddef>

#include <fmt/format.h>

#include "base/error.hpp"
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
    nlohmann::json* node = &edited;
    std::string pointer;
    std::size_t begin = 0;
    for (;;) {
      const std::size_t dot = o.path.find('.', begin);
      const std::string key = o.path.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
      if (key.empty()) throw InputError(origin, flag, o.text(), "a path is keys joined by '.', e.g. network.bandwidth");
      if (node->is_array()) {
        // A list element by its index (nodes.kinds.0.peak); an override never adds one.
        const bool digits = key.size() <= 9 && key.find_first_not_of("0123456789") == std::string::npos;
        const std::size_t index = digits ? std::size_t(std::stoul(key)) : node->size();
        if (index >= node->size())
          throw InputError(origin, flag, o.text(),
                           fmt::format("{} of the platform is a list of {}, so it has no element {}", pointer,
                                       node->size(), key));
        pointer += "/" + key;
        nlohmann::json& element = (*node)[index];
        if (dot == std::string::npos) {
          element = typed_value(o.value, &element);
          break;
        }
        node = &element;
        begin = dot + 1;
        continue;
      }
      if (!node->is_object())
        throw InputError(origin, flag, o.text(),
                         fmt::format("{} of the platform is not an object, so it has no {}", pointer.empty() ? "/" : pointer, key));
      pointer += "/" + key;
      if (dot == std::string::npos) {
        const auto found = node->find(key);
        (*node)[key] = typed_value(o.value, found == node->end() ? nullptr : &*found);
        break;
      }
      if (!node->contains(key)) (*node)[key] = nlohmann::json::object();
      node = &(*node)[key];
      begin = dot + 1;
    }
    pointers.emplace_back(pointer, &o);
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
