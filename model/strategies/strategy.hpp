#pragma once
// Strategy builders: (network, platform, global batch N, P, options) -> Schedule.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

struct StrategyOptions {
  std::string name = "dp";         ///< dp, dp_layerwise, dp_buckets, lee, per_layer, hybrid
  std::int64_t global_batch = 256; ///< N: images per iteration over all ranks
  int ranks = 1;                   ///< P
  int iterations = 2;              ///< total iterations, warm-up included
  int warmup_iterations = 1;       ///< leading iterations excluded from metrics
  int lee_k = 9;                   ///< lee: counted layers in the first gradient chunk
  int lee_f = 2;                   ///< lee: fc layers that replicate the gradient calculation
  double bucket_bytes = 25.0 * 1024 * 1024;  ///< dp_buckets: bucket size (bytes)
  /** per_layer: layer -> data|model|replicated, "conv*=data,fc6=model" or a JSON file. */
  std::string assign;
  std::string assign_origin = "--assign";  ///< where `assign` came from (flag or study file)
  /** per_layer, hybrid: when data-parallel gradients are allreduced: end (after the whole
   *  backward, as dp), layerwise (as soon as each is ready, as dp_layerwise) or chunks (lee's
   *  two chunks split by lee_k). */
  std::string sync = "layerwise";
  /** Allow N not divisible by P: ranks 0..N%P-1 take ceil(N/P) images, the others floor(N/P);
   *  lee's allgathers are then sized for the larger share. Off: N % P != 0 is bad input. */
  bool uneven_batch = false;
  std::string origin = "<options>"; ///< where the options came from (file or "command line")
};

/** Names of the builders available. */
std::vector<std::string> strategy_names();

/** Builds the Schedule of `options.name`.
 *  @throws InputError (file = options.origin, path = "/k", "/f", "/batch", ...) for options
 *  out of range, e.g. N not divisible by P, k or f out of range. */
Schedule build_schedule(const Network& network, const Platform& platform, const StrategyOptions& options);

/** JSON form of the options (stored in Schedule::options and Trace metadata). */
nlohmann::json to_json(const StrategyOptions& options);

}  // namespace cnnpar
