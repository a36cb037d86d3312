#pragma once
// Command-line overrides of a platform and a strategy: `--set PATH=VALUE` and the axes of
// `cnnpar sweep`. PATH is either a platform JSON path in the file's own spelling and unit
// strings ("network.bandwidth" = "1Gbps", "nodes.efficiency.gemm" = 0.45; a list element by
// its index, "nodes.kinds.0.peak" = "2Tf") or the key of a
// strategy option ("k", "bucket_bytes"). The platform parser checks the values, so a value
// means the same on the command line as in a platform file.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/platform.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

/** One PATH=VALUE. */
struct Override {
  std::string path;   ///< "network.bandwidth", "k"
  std::string value;  ///< "1Gbps", "9"
  std::string text() const { return path + "=" + value; }
};

/** "PATH=VALUE" (the value is everything after the first '=').
 *  @throws InputError(origin, flag, text, reason) without '=' or with an empty path or value. */
Override parse_override(const std::string& text, const std::string& origin, const std::string& flag);

/** True when `path` names a strategy option (a key of some registered strategy's schema). */
bool is_strategy_option(const std::string& path);

/** The JSON pointer of a platform path: "nodes.kinds.0.peak" -> /nodes/kinds/0/peak (every key
 *  kept as given, an empty one too). */
nlohmann::json::json_pointer platform_pointer(const std::string& path);

/** The value `pointer` names in `document`, or nullptr when there is none (a list index that
 *  is not one, such as "" or "01", included). */
const nlohmann::json* value_at(const nlohmann::json& document, const nlohmann::json::json_pointer& pointer);

/** The platform document with the platform paths of `overrides` applied (checked by parsing it).
 *  Each value keeps the JSON type of the field it replaces (a number for numbers, a unit
 *  string for quantities); a new field takes a number when the text is one, a boolean for true/false, JSON
 *  for "[...]" and "{...}", else a string.
 *  @throws InputError(origin, flag, "PATH=VALUE", reason) for a path the platform does not
 *  have, a value of the wrong type or unit, or a value out of range (the reason names the
 *  platform file's own complaint). */
nlohmann::json platform_document_with_overrides(const nlohmann::json& document, const std::string& file,
                                                const std::vector<Override>& overrides, const std::string& origin,
                                                const std::string& flag);
/** The same, parsed. */
Platform platform_with_overrides(const nlohmann::json& document, const std::string& file,
                                 const std::vector<Override>& overrides, const std::string& origin,
                                 const std::string& flag);

/** Sets the strategy options among `overrides` on `options` (typed by its strategy's schema).
 *  @throws InputError(origin, flag, "PATH=VALUE", reason) for an option the strategy does not
 *  take or a value that does not parse. */
void apply_strategy_overrides(StrategyOptions& options, const std::vector<Override>& overrides,
                              const std::string& origin, const std::string& flag);

/** JSON list of the overrides' texts (trace and prediction metadata). */
nlohmann::json to_json(const std::vector<Override>& overrides);

}  // namespace cnnpar
