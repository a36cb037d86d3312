#pragma once
// The configuration a Trace records in its metadata (docs/formats.md, "Metadata of every
// trace"): what `cnnpar trace --like` replays and what `cnnpar fit --trace` predicts. One
// reading of the metadata for both.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/trace.hpp"
#include "workload/registry.hpp"
#include "workload/run_spec.hpp"

namespace cnnpar {

struct TraceConfiguration {
  std::string file;      ///< the trace's file (error messages)
  std::string network;   ///< metadata network_argument (as given: a name or a file), else network; "" if neither
  std::string platform;  ///< metadata platform_argument, else platform; "" if neither
  std::string strategy;  ///< metadata strategy; "" if absent
  int ranks = 0;         ///< the trace's rank count
  int warmup_iterations = 0;
  std::optional<int> iterations;             ///< metadata iterations
  std::optional<std::int64_t> global_batch;  ///< metadata options.batch, else global_batch
  bool recompute_columns = false;            ///< options.columns is "recomputed"
  ConvPaths conv;                            ///< options.conv (absent: im2col)
  bool uneven_batch = false;                 ///< options.uneven_batch
  std::vector<std::string> sets;             ///< metadata set: the --set overrides it was predicted with
  Slowdowns slowdown;                        ///< metadata slowdown: ranks that computed slower
  nlohmann::json options = nlohmann::json::object();  ///< metadata options as written

  /** The options of `spec` that the metadata holds, typed by its schema (the strategy asked
   *  for may be another than the trace's own).
   *  @throws InputError(file, "/metadata/options/KEY", value, reason). */
  nlohmann::json strategy_values(const StrategySpec& spec) const;
};

/** @throws InputError(file, "/metadata/...", value, reason) for metadata of the wrong type or
 *  range; absent fields stay empty. */
TraceConfiguration trace_configuration(const Trace& trace, const std::string& file);

}  // namespace cnnpar
