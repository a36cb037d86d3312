#include "experiments/advice.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "engines/registry.hpp"
#include "experiments/sweep.hpp"
#include "workload/registry.hpp"

namespace cnnpar {
namespace {

/** Iteration times of `candidates` (those `chosen`) on one engine, as one batch. */
std::vector<double> iteration_times(const Network& network, const Platform& platform,
                                    const std::vector<AdviseCandidate>& candidates, const std::vector<std::size_t>& chosen,
                                    Engine& engine, const std::function<void(int, int)>& progress) {
  std::vector<EngineJob> jobs;
  for (std::size_t i : chosen)
    jobs.push_back({.schedule = [&network, &platform, &options = candidates[i].options] {
                      return std::make_shared<const Schedule>(build_schedule(network, platform, options));
                    },
                    .platform = &platform,
                    .summarize = row_metrics_summary,
                    .summarize_classed = row_metrics_summary_classed});
  std::vector<double> seconds;
  for (const nlohmann::json& summary : engine.run_all(jobs, {.progress = progress}))
    seconds.push_back(row_metrics_from_summary(summary).iteration_s);
  return seconds;
}

}  // namespace

double Advice::gain(const AdviseCandidate& candidate, const std::string& reference, bool simgrid) const {
  for (std::size_t i = first_baseline; i < candidates.size(); ++i) {
    if (candidates[i].label != reference) continue;
    const double reference_s = simgrid ? candidates[i].simgrid_s : candidates[i].analytic_s;
    const double s = simgrid ? candidate.simgrid_s : candidate.analytic_s;
    return reference_s > 0 && s > 0 ? reference_s / s : 0.0;
  }
  return 0.0;
}

Advice advise(const AdviseRequest& request) {
  const Network& network = *request.network;
  const Platform& platform = *request.platform;
  const StrategyOptions& base = request.base;
  Advice advice;
  advice.rule = advise_rule(network, platform, base.global_batch, base.ranks);
  const strategies::LayerAssignment by_rule = rule_assignment(network, advice.rule);
  strategies::LayerAssignment all_data;
  all_data.kinds.assign(network.layers.size(), PartitionKind::data);
  const std::vector<strategies::LayerAssignment> starts = {all_data, strategies::hybrid_assignment(network, base.ranks),
                                                           by_rule};
  const EngineFactory analytic = [] { return make_engine(EngineSettings{}); };
  const AssignmentScorer score = engine_scorer(network, platform, base, analytic);
  const std::size_t space = assignment_space(network);
  // Progress (with an ETA) for the exhaustive search only: the heuristic's length is unknown.
  advice.search = search_assignments(network, score, starts, std::size_t(request.keep), [&](std::size_t scored) {
    if (space <= kExhaustiveLimit && request.search_progress) request.search_progress(int(scored), int(space));
  });
  if (advice.search.best.empty())
    throw InputError("command line", "--nodes", std::to_string(base.ranks),
                     "no assignment of this network can be built on so many nodes");

  // Candidates: the best few, then the registered baselines (each with its own defaults).
  for (std::size_t i = 0; i < advice.search.best.size() && int(i) < std::max(request.recheck, 1); ++i) {
    const ScoredAssignment& scored = advice.search.best[i];
    advice.candidates.push_back({.label = fmt::format("#{}", i + 1),
                                 .options = strategies::assignment_options(base, scored.text),
                                 .analytic_s = scored.iteration_s,
                                 .assignment = &scored.assignment});
  }
  advice.first_baseline = advice.candidates.size();
  std::vector<std::size_t> baselines;
  for (const StrategySpec& spec : strategy_registry()) {
    if (spec.advise_gain_reference) advice.gain_references.push_back(spec.name);
    if (!spec.advise_baseline) continue;
    AdviseCandidate c{.label = spec.name, .options = base};
    c.options.name = spec.name;
    c.options.values = nlohmann::json::object();
    try {
      validate_strategy_options(network, c.options);
      (void)build_schedule(network, platform, c.options);
    } catch (const InputError&) {
      continue;  // e.g. lee's default k beyond a small network's layers
    }
    baselines.push_back(advice.candidates.size());
    advice.candidates.push_back(std::move(c));
  }
  // A reference that does not build here (lee on a graph network) gives no gains.
  std::erase_if(advice.gain_references, [&](const std::string& reference) {
    return std::none_of(advice.candidates.begin() + std::ptrdiff_t(advice.first_baseline), advice.candidates.end(),
                        [&](const AdviseCandidate& c) { return c.label == reference; });
  });
  const std::unique_ptr<Engine> engine = analytic();
  const std::vector<double> baseline_s = iteration_times(network, platform, advice.candidates, baselines, *engine, {});
  for (std::size_t b = 0; b < baselines.size(); ++b) advice.candidates[baselines[b]].analytic_s = baseline_s[b];

  const std::vector<std::string> engines = engine_names();
  if (request.recheck > 0 && std::find(engines.begin(), engines.end(), "simgrid") != engines.end()) {
    std::vector<std::size_t> chosen;
    for (std::size_t i = 0; i < advice.candidates.size(); ++i)
      if (i < std::size_t(request.recheck) || i >= advice.first_baseline) chosen.push_back(i);
    const std::unique_ptr<Engine> simgrid = make_engine({.name = "simgrid"});
    const std::vector<double> seconds =
        iteration_times(network, platform, advice.candidates, chosen, *simgrid, request.recheck_progress);
    for (std::size_t c = 0; c < chosen.size(); ++c) advice.candidates[chosen[c]].simgrid_s = seconds[c];
    advice.rechecked = true;
  }
  // The winner: the fastest re-checked assignment on SimGrid (links shared, the closer model),
  // else the analytic search's first.
  if (advice.rechecked)
    for (std::size_t i = 1; i < advice.first_baseline && i < std::size_t(request.recheck); ++i)
      if (advice.candidates[i].simgrid_s < advice.candidates[advice.winner].simgrid_s) advice.winner = i;
  return advice;
}

nlohmann::json advice_json(const Advice& advice, const AdviseRequest& request, const nlohmann::json& sets,
                           const std::string& out) {
  const AdviseCandidate& winner = advice.candidates[advice.winner];
  const SearchResult& search = advice.search;
  nlohmann::json json = {
      {"network", request.network->name},
      {"platform", request.platform->name},
      {"batch", request.base.global_batch},
      {"nodes", request.base.ranks},
      {"set", sets},
      {"search",
       {{"method", search.exhaustive ? "exhaustive" : "steepest descent, 1- and 2-layer moves, from all-data, hybrid and the rule"},
        {"space", search.space},
        {"scored", search.scored},
        {"infeasible", search.infeasible},
        {"seconds", search.seconds}}},
      {"winner", {{"label", winner.label}, {"assign", winner.options.values.at("assign")}, {"file", out}}}};
  nlohmann::json rule = nlohmann::json::array();
  for (const RuleRow& r : advice.rule)
    rule.push_back({{"layer", r.name}, {"data_side", r.data_side}, {"model_side", r.model_side}, {"choice", to_string(r.choice)}});
  json["rule"] = rule;
  nlohmann::json ranked = nlohmann::json::array();
  for (const ScoredAssignment& s : search.best)
    ranked.push_back({{"assign", s.text}, {"iteration_s", s.iteration_s}, {"exposed_comm_s", s.exposed_comm_s},
                      {"overlap_ratio_percent", s.overlap_ratio_percent}});
  json["ranked"] = ranked;
  nlohmann::json checked = nlohmann::json::array();
  for (const AdviseCandidate& c : advice.candidates) {
    nlohmann::json entry = {{"label", c.label}, {"strategy", c.options.name}, {"analytic_s", c.analytic_s}};
    for (const std::string& reference : advice.gain_references)
      entry[fmt::format("gain_vs_{}_analytic", reference)] = advice.gain(c, reference, false);
    if (strategies::is_assignment(c.options)) entry["assign"] = c.options.values.at("assign");
    if (c.simgrid_s > 0) {
      entry["simgrid_s"] = c.simgrid_s;
      for (const std::string& reference : advice.gain_references)
        entry[fmt::format("gain_vs_{}_simgrid", reference)] = advice.gain(c, reference, true);
    }
    checked.push_back(entry);
  }
  json["recheck"] = checked;
  return json;
}

}  // namespace cnnpar
