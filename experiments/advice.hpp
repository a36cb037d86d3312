#pragma once
// What `cnnpar advise` answers for one network, platform, batch and node count: the rule, the
// search over per_layer assignments on the analytic engine, and a SimGrid re-check of the best
// few beside the registered baselines (experiments/advise.hpp has the rule and the search).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiments/advise.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

struct AdviseRequest {
  const Network* network = nullptr;
  const Platform* platform = nullptr;
  /** Batch, ranks, iterations and the --set strategy options; the strategy is per_layer's. */
  StrategyOptions base;
  int keep = 10;    ///< assignments listed
  int recheck = 3;  ///< of them re-checked with SimGrid (0 = none; none in a build without it)
  std::function<void(int done, int total)> search_progress;   ///< exhaustive search only
  std::function<void(int done, int total)> recheck_progress;
};

/** One re-checked candidate: an assignment of the search or a baseline strategy. */
struct AdviseCandidate {
  std::string label;  ///< "#1", ... or the baseline's name
  StrategyOptions options;
  double analytic_s = 0;
  double simgrid_s = 0;  ///< 0 when not re-checked
  const strategies::LayerAssignment* assignment = nullptr;  ///< into Advice::search; null for a baseline
};

struct Advice {
  std::vector<RuleRow> rule;
  SearchResult search;
  std::vector<AdviseCandidate> candidates;  ///< the best assignments, then the baselines
  std::size_t first_baseline = 0;
  bool rechecked = false;
  std::size_t winner = 0;  ///< the fastest re-checked assignment on SimGrid, else the search's first
  std::vector<std::string> gain_references;  ///< the strategies gains are given against (registry order)

  /** reference's iteration time / the candidate's, on SimGrid or the analytic engine; 0 when
   *  either is missing. */
  double gain(const AdviseCandidate& candidate, const std::string& reference, bool simgrid) const;
};

/** @throws InputError("command line", "--nodes", ...) when no assignment builds on so many nodes. */
Advice advise(const AdviseRequest& request);

/** The advice as `advise --json` writes it; `sets` and `out` (the assignment file) are recorded. */
nlohmann::json advice_json(const Advice& advice, const AdviseRequest& request, const nlohmann::json& sets,
                           const std::string& out);

}  // namespace cnnpar
