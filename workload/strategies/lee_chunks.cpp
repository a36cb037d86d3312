#include "workload/strategies/lee_chunks.hpp"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar::strategies {

OptionSpec chunk_k_option() {
  return {.key = "k",
          .type = OptionType::integer,
          .default_text = "9",
          .min = 1,
          .unit = "counted layers",
          .help = "counted conv, pool and fc layers in the first gradient chunk, from the output end (per_layer and "
                  "hybrid: with --sync chunks)"};
}

std::int64_t chunk_k(const Network& network, const StrategyOptions& options) {
  const std::int64_t k = options.integer("k");
  // Lee's default of 9 on a network with fewer counted layers: every layer in the first chunk.
  if (!options.values.contains("k")) return std::min<std::int64_t>(k, std::int64_t(network.counted_layers().size()));
  return k;
}

std::int64_t replicated_f(const Network& network, const StrategyOptions& options) {
  const std::int64_t f = options.integer("f");
  if (!options.values.contains("f")) return std::min<std::int64_t>(f, std::int64_t(network.fc_layers().size()));
  return f;
}

void check_chunk_k(const Network& network, const StrategyOptions& options) {
  const std::int64_t k = chunk_k(network, options);
  const int counted = int(network.counted_layers().size());
  if (k < 1 || k > counted)
    throw InputError(options.origin, "/k", std::to_string(k),
                     fmt::format("k must be in [1, {}] (the counted conv, pool and fc layers of {}); set --k", counted,
                                 network.name));
}

}  // namespace cnnpar::strategies
