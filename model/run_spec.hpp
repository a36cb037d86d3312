#pragma once
// The run-spec: everything `cnnpar run` hands to `cnnpar-run` in one JSON file (instead of
// re-spelling flags as argv), so both executables read a run the same way.
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/strategies/strategy.hpp"

namespace cnnpar {

struct RunSpec {
  std::string network;                 ///< name or JSON path
  std::string platform = "local";      ///< name or JSON path
  StrategyOptions strategy;            ///< name, batch, iterations, warm-up, the strategy's options
  std::uint64_t seed = 1;
  std::optional<double> learning_rate, momentum, weight_decay;  ///< absent: cnnpar-run's defaults
  std::string dataset = "synthetic";
  std::string compute = "real";        ///< real | sleep
  std::string progress = "poll";       ///< poll | thread
  std::string collectives = "mpi";     ///< mpi | p2p (real/interpreter.hpp CollectiveMode)
  std::optional<double> poll_interval_us;
  double timeout_s = 60;
  std::string trace;                   ///< output paths ("" = none)
  std::string weights_out;
};

nlohmann::json to_json(const RunSpec& spec);
/** @throws InputError (file, JSON path, value) for a missing or malformed field, an unknown
 *  strategy or an option its schema does not have. */
RunSpec run_spec_from_json(const nlohmann::json& document, const std::string& file);

}  // namespace cnnpar
