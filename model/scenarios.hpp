#pragma once
// Finding scenario files (networks, platforms, studies) by name or path.
//
// A name such as "vgg-a" is looked up as scenarios/networks/vgg-a.json, first in the
// directory named by $CNNPAR_SCENARIOS (if set), then among the files embedded in the
// binary at build time. Anything containing '/' or ending in ".json" is a path.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/platform.hpp"

namespace cnnpar {

struct EmbeddedScenario {
  const char* relative_path;  ///< e.g. "networks/vgg-a.json"
  const char* content;        ///< the JSON text
};
/** Generated at build time from the files listed in model/CMakeLists.txt. */
const std::vector<EmbeddedScenario>& embedded_scenarios();

/** A loaded JSON document and where it came from (used in error messages). */
struct ScenarioDocument {
  nlohmann::json json;
  std::string origin;  ///< file path, or "<embedded>/networks/vgg-a.json"
};

/** `folder` is "networks", "platforms" or "studies".
 *  @throws InputError if the name is unknown or the file unreadable/malformed. */
ScenarioDocument load_scenario(const std::string& folder, const std::string& name_or_path);
/** Names available in `folder` (embedded and $CNNPAR_SCENARIOS), sorted. */
std::vector<std::string> scenario_names(const std::string& folder);

Network load_network(const std::string& name_or_path);
Platform load_platform(const std::string& name_or_path);

}  // namespace cnnpar
