#pragma once
// The fidelity report written out: its JSON document, the Markdown report and the CSV of every
// configuration and engine.
#include <string>

#include <nlohmann/json.hpp>

#include "experiments/validation_summary.hpp"

namespace cnnpar {

nlohmann::json to_json(const ValidationReport& report);
std::string validation_markdown(const ValidationReport& report);
/** One row per configuration and engine: the configuration, measured and predicted metrics, error, cause. */
std::string validation_csv(const ValidationReport& report);

}  // namespace cnnpar
