#pragma once
// `cnnpar advise`: which layers should be data-, model-parallel or replicated, for one network,
// platform, batch and node count. Three answers, kept apart:
//  * the rule: Intel's per-layer criterion 3·in_w·in_h·MB < ofm·kw·kh (model/balance.hpp);
//  * a search over per_layer assignments scored by an engine's iteration time: exhaustive up
//    to kExhaustiveLimit assignments, else steepest descent from the all-data, hybrid and rule
//    assignments with single-layer moves, then two-layer moves when single ones stop helping;
//  * (in the command) a re-check of the best few with the SimGrid engine.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/sweep.hpp"
#include "model/balance.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "workload/strategies/per_layer.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

/** 3^9: an exhaustive search up to this many assignments (about 6 s on 2 cores at 0.3 ms per
 *  VGG-A-sized replay); VGG-A's 11 layers (177,147) take the heuristic. */
inline constexpr std::size_t kExhaustiveLimit = 19683;

/** The rule for one conv or fc layer, with its deciding numbers. */
struct RuleRow {
  int layer = -1;
  std::string name;
  double data_side = 0;   ///< 3·in_w·in_h·MB
  double model_side = 0;  ///< ofm·kw·kh
  PartitionKind choice = PartitionKind::data;
};
std::vector<RuleRow> advise_rule(const Network& network, const Platform& platform, std::int64_t global_batch, int nodes);
/** The rule's choices as an assignment (layers without parameters follow their input). */
strategies::LayerAssignment rule_assignment(const Network& network, const std::vector<RuleRow>& rule);

struct ScoredAssignment {
  strategies::LayerAssignment assignment;
  std::string text;          ///< to_string(network, assignment)
  double iteration_s = 0;    ///< median iteration time on the scoring engine
  double exposed_comm_s = 0; ///< T_b per iteration
  double overlap_ratio_percent = 0;
};

/** 3^(conv and fc layers of `network`): the per_layer assignments there are. */
std::size_t assignment_space(const Network& network);

struct SearchResult {
  std::vector<ScoredAssignment> best;  ///< ascending iteration time, at most `keep`
  std::size_t space = 0;               ///< 3^(conv and fc layers)
  bool exhaustive = false;
  std::size_t scored = 0;              ///< assignments replayed
  std::size_t infeasible = 0;          ///< assignments the builder refused (e.g. more ranks than units)
  double seconds = 0;                  ///< wall time of the search
};

/** Scores one assignment: the per_layer schedule of `base` (its options, ranks) on an engine.
 *  @returns false when the builder refuses the assignment (InputError). */
using AssignmentScorer = std::function<bool(const strategies::LayerAssignment&, ScoredAssignment&)>;
/** Scores on engines from `make_engine` (one per call, so calls may run in parallel): the
 *  schedule `--strategy per_layer --assign TEXT` builds from `base`. */
AssignmentScorer engine_scorer(const Network& network, const Platform& platform, const StrategyOptions& base,
                               EngineFactory make_engine);

/** Searches the assignments of `network`'s conv and fc layers (see above); `starts` seed the
 *  heuristic. `progress(scored)` is called now and then. Parallel over candidates (oneTBB). */
SearchResult search_assignments(const Network& network, const AssignmentScorer& score,
                                const std::vector<strategies::LayerAssignment>& starts, std::size_t keep,
                                const std::function<void(std::size_t scored)>& progress = {});

/** {"assign": {"conv1": "data", ...}}: every conv and fc layer by name, which
 *  `--strategy per_layer --assign FILE` reads. */
nlohmann::json assignment_file(const Network& network, const strategies::LayerAssignment& assignment);

}  // namespace cnnpar
