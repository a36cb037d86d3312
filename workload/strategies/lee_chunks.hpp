#pragma once
// Lee et al.'s two parameters, shared by lee and by per_layer and hybrid (`--sync chunks`): k,
// the counted layers in the first gradient chunk, and f, the replicated fc layers.
#include <cstdint>

#include "model/network.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::strategies {

/** The `k` option; its range depends on the network, checked by check_chunk_k. */
OptionSpec chunk_k_option();
/** k as given, or the default capped at the network's counted layers (so the default works on
 *  small networks); likewise lee's f capped at its fc layers. */
std::int64_t chunk_k(const Network& network, const StrategyOptions& options);
std::int64_t replicated_f(const Network& network, const StrategyOptions& options);
/** @throws InputError (options.origin, "/k") unless 1 <= k <= the network's counted layers. */
void check_chunk_k(const Network& network, const StrategyOptions& options);

}  // namespace cnnpar::strategies
