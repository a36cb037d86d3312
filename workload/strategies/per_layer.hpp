#pragma once
// per_layer and hybrid: each parameterised layer data-, model-parallel or replicated, with the
// transitions between them inserted by the builder (see per_layer.cpp for the rules).
#include <string>
#include <vector>

#include "model/partition.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::strategies {

/** Per network layer (index as in Network::layers) the chosen partition; only conv and fc
 *  entries matter, layers without parameters follow their input. */
struct LayerAssignment {
  std::vector<PartitionKind> kinds;
};

/** Parses "conv*=data,fc6=model,fc8=replicated" (glob patterns over layer names; unnamed
 *  conv/fc layers are data, so "" is pure data parallelism) or, when `text` names a JSON file, {"assign": {PATTERN: KIND}}.
 *  @throws InputError (file = `origin` or the JSON file, the path, the value) for an unknown
 *  layer or kind, a layer assigned twice or a layer without parameters named explicitly. */
LayerAssignment parse_assignment(const Network& network, const std::string& text, const std::string& origin);

/** "conv1=data,...,fc8=replicated": every conv and fc layer, in layer order. */
std::string to_string(const Network& network, const LayerAssignment& assignment);

/** The Intel note's and Krizhevsky's hybrid: conv layers data-parallel, fc layers
 *  model-parallel, except an fc layer with fewer output neurons than ranks (replicated). */
LayerAssignment hybrid_assignment(const Network& network, int ranks);

/** per_layer's `sync` option, which hybrid shares. */
OptionSpec sync_option();
/** The checks per_layer and hybrid share (k with --sync chunks). */
void validate_per_layer(const Network& network, const StrategyOptions& options);

/** `options` as the per_layer strategy with the assignment `assign` ("conv1=data,..."): what
 *  `cnnpar advise` scores, re-checks and writes. */
StrategyOptions assignment_options(StrategyOptions options, const std::string& assign);
/** True for options of the per_layer strategy (their `assign` names the assignment). */
bool is_assignment(const StrategyOptions& options);

/** Builds the schedule of `assignment`. @throws InputError (file `origin`) when a model split
 *  has more ranks than the layer has output units, or a Lee-style replicated layer has fewer
 *  than 2 iterations to delay its update into. */
Schedule build_per_layer_assignment(const Network& network, const Platform& platform, const StrategyOptions& options,
                                    const LayerAssignment& assignment, const std::string& origin);

}  // namespace cnnpar::strategies
