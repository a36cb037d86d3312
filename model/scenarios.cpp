#include "model/scenarios.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/json_node.hpp"

namespace cnnpar {
namespace {

bool looks_like_path(const std::string& name) {
  return name.find('/') != std::string::npos || (name.size() > 5 && name.ends_with(".json"));
}

std::string override_dir() {
  const char* dir = std::getenv("CNNPAR_SCENARIOS");
  return dir ? std::string(dir) : std::string();
}

}  // namespace

ScenarioDocument load_scenario(const std::string& folder, const std::string& name_or_path) {
  if (name_or_path.empty()) throw InputError("<command line>", "/", "", fmt::format("empty {} name", folder));
  if (looks_like_path(name_or_path)) return {read_json_file(name_or_path), name_or_path};

  const std::string relative = folder + "/" + name_or_path + ".json";
  if (const std::string dir = override_dir(); !dir.empty()) {
    const std::filesystem::path candidate = std::filesystem::path(dir) / relative;
    if (std::filesystem::exists(candidate)) return {read_json_file(candidate.string()), candidate.string()};
  }
  for (const EmbeddedScenario& file : embedded_scenarios()) {
    if (relative == file.relative_path) {
      const std::string origin = std::string("<embedded>/") + file.relative_path;
      return {parse_json_text(file.content, origin), origin};
    }
  }
  throw InputError("<command line>", "/", name_or_path,
                   fmt::format("unknown {} (known: {}; or give a path to a .json file)", folder,
                               fmt::join(scenario_names(folder), ", ")));
}

std::vector<std::string> scenario_names(const std::string& folder) {
  std::set<std::string> names;
  const std::string prefix = folder + "/";
  for (const EmbeddedScenario& file : embedded_scenarios()) {
    const std::string path = file.relative_path;
    if (path.starts_with(prefix) && path.ends_with(".json"))
      names.insert(path.substr(prefix.size(), path.size() - prefix.size() - 5));
  }
  if (const std::string dir = override_dir(); !dir.empty()) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(dir) / folder, error))
      if (entry.path().extension() == ".json") names.insert(entry.path().stem().string());
  }
  return {names.begin(), names.end()};
}

Network load_network(const std::string& name_or_path) {
  const ScenarioDocument document = load_scenario("networks", name_or_path);
  Network network = parse_network(document.json, document.origin);
  infer_shapes(network, document.origin);  // idempotent; parse_network may already have done it
  return network;
}

Platform load_platform(const std::string& name_or_path) {
  const ScenarioDocument document = load_scenario("platforms", name_or_path);
  return parse_platform(document.json, document.origin);
}

}  // namespace cnnpar
