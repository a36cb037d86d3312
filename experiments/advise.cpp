#include "experiments/advise.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include <tbb/parallel_for.h>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

using strategies::LayerAssignment;

std::vector<RuleRow> advise_rule(const Network& network, const Platform& platform, std::int64_t global_batch, int nodes) {
  std::vector<RuleRow> rows;
  for (const LayerBalance& b : network_balance(network, platform, global_batch, nodes)) {
    RuleRow row;
    row.layer = b.layer;
    row.name = b.name;
    // The note's criterion (prefer_model_parallel); its two sides, for the table.
    row.data_side = 3.0 * b.in_w_px * b.in_h_px * double(global_batch);
    row.model_side = b.ofm * b.kernel_w_px * b.kernel_h_px;
    row.choice = b.prefer_model ? PartitionKind::model : PartitionKind::data;
    rows.push_back(row);
  }
  return rows;
}

LayerAssignment rule_assignment(const Network& network, const std::vector<RuleRow>& rule) {
  LayerAssignment assignment;
  assignment.kinds.assign(network.layers.size(), PartitionKind::data);
  for (const RuleRow& row : rule) assignment.kinds[std::size_t(row.layer)] = row.choice;
  return assignment;
}

AssignmentScorer engine_scorer(const Network& network, const Platform& platform, const StrategyOptions& base,
                               EngineFactory make_engine) {
  return [&network, &platform, base, make_engine](const LayerAssignment& assignment, ScoredAssignment& out) {
    const StrategyOptions options = strategies::assignment_options(base, strategies::to_string(network, assignment));
    Schedule schedule;
    try {
      schedule = build_schedule(network, platform, options);
    } catch (const InputError&) {
      return false;  // e.g. a model split over more ranks than the layer has units
    }
    const TraceMetrics m = compute_metrics(make_engine()->run(schedule, platform), MetricsDetail{false, false});
    out.assignment = assignment;
    out.text = options.values["assign"].get<std::string>();
    out.iteration_s = m.iteration_s;
    out.exposed_comm_s = m.exposed_comm_s;
    out.overlap_ratio_percent = m.overlap_ratio_percent;
    return true;
  };
}

namespace {

std::vector<int> parameter_layers(const Network& network) {
  std::vector<int> layers;
  for (std::size_t l = 0; l < network.layers.size(); ++l)
    if (network.layers[l].has_parameters()) layers.push_back(int(l));
  return layers;
}

constexpr PartitionKind kKinds[] = {PartitionKind::data, PartitionKind::model, PartitionKind::replicated};

// The assignments scored so far, by text; a candidate is scored once.
class Scoreboard {
 public:
  Scoreboard(const Network& network, const AssignmentScorer& score, const std::function<void(std::size_t)>& progress)
      : network_(network), score_(score), progress_(progress) {}

  /** Scores the candidates not seen before, in parallel; returns the best of all candidates
   *  (seen ones included), or null when none is feasible. */
  const ScoredAssignment* score(const std::vector<LayerAssignment>& candidates) {
    std::vector<LayerAssignment> fresh;
    std::vector<const ScoredAssignment*> known;
    for (const LayerAssignment& c : candidates) {
      const std::string key = strategies::to_string(network_, c);
      if (!seen_.insert(key).second) {
        const auto found = by_text_.find(key);
        if (found != by_text_.end()) known.push_back(&found->second);
        continue;
      }
      fresh.push_back(c);
    }
    std::vector<ScoredAssignment> results(fresh.size());
    std::vector<char> feasible(fresh.size(), 0);
    tbb::parallel_for(std::size_t(0), fresh.size(), [&](std::size_t i) { feasible[i] = score_(fresh[i], results[i]) ? 1 : 0; });
    const ScoredAssignment* best = nullptr;
    for (const ScoredAssignment* k : known)
      if (!best || k->iteration_s < best->iteration_s) best = k;
    for (std::size_t i = 0; i < fresh.size(); ++i) {
      ++scored_;
      if (!feasible[i]) {
        ++infeasible_;
        continue;
      }
      const ScoredAssignment& placed = by_text_.emplace(results[i].text, results[i]).first->second;
      if (!best || placed.iteration_s < best->iteration_s) best = &placed;
    }
    if (progress_) progress_(scored_);
    return best;
  }

  std::vector<ScoredAssignment> best(std::size_t keep) const {
    std::vector<ScoredAssignment> all;
    for (const auto& [text, s] : by_text_) all.push_back(s);
    // Ties go to the text order, so the answer does not depend on thread timing.
    std::sort(all.begin(), all.end(), [](const ScoredAssignment& a, const ScoredAssignment& b) {
      return a.iteration_s != b.iteration_s ? a.iteration_s < b.iteration_s : a.text < b.text;
    });
    if (all.size() > keep) all.resize(keep);
    return all;
  }
  std::size_t scored() const { return scored_; }
  std::size_t infeasible() const { return infeasible_; }

 private:
  const Network& network_;
  const AssignmentScorer& score_;
  const std::function<void(std::size_t)>& progress_;
  std::set<std::string> seen_;
  std::map<std::string, ScoredAssignment> by_text_;
  std::size_t scored_ = 0, infeasible_ = 0;
};

}  // namespace

std::size_t assignment_space(const Network& network) {
  std::size_t space = 1;
  for (std::size_t i = 0; i < parameter_layers(network).size(); ++i) space *= 3;
  return space;
}

SearchResult search_assignments(const Network& network, const AssignmentScorer& score,
                                const std::vector<LayerAssignment>& starts, std::size_t keep,
                                const std::function<void(std::size_t)>& progress) {
  const auto began = std::chrono::steady_clock::now();
  const std::vector<int> layers = parameter_layers(network);
  SearchResult result;
  result.space = assignment_space(network);
  Scoreboard board(network, score, progress);
  if (result.space <= kExhaustiveLimit) {
    result.exhaustive = true;
    std::vector<LayerAssignment> all;
    LayerAssignment a;
    a.kinds.assign(network.layers.size(), PartitionKind::data);
    std::vector<int> digit(layers.size(), 0);
    for (;;) {
      for (std::size_t i = 0; i < layers.size(); ++i) a.kinds[std::size_t(layers[i])] = kKinds[digit[i]];
      all.push_back(a);
      std::size_t i = 0;
      while (i < digit.size() && ++digit[i] == 3) digit[i++] = 0;
      if (i == digit.size()) break;
    }
    // In slices, so progress can be shown.
    for (std::size_t begin = 0; begin < all.size(); begin += 512)
      board.score(std::vector<LayerAssignment>(all.begin() + std::ptrdiff_t(begin),
                                               all.begin() + std::ptrdiff_t(std::min(all.size(), begin + 512))));
  } else {
    // Steepest descent from each start: all single-layer changes; when none helps, all
    // two-layer changes; stop when neither does.
    for (const LayerAssignment& start : starts) {
      const ScoredAssignment* current = board.score({start});
      if (!current) continue;
      for (;;) {
        std::vector<LayerAssignment> singles;
        for (int l : layers)
          for (PartitionKind k : kKinds) {
            if (current->assignment.kinds[std::size_t(l)] == k) continue;
            LayerAssignment c = current->assignment;
            c.kinds[std::size_t(l)] = k;
            singles.push_back(std::move(c));
          }
        const ScoredAssignment* next = board.score(singles);
        if (next && next->iteration_s < current->iteration_s) {
          current = next;
          continue;
        }
        std::vector<LayerAssignment> pairs;
        for (std::size_t i = 0; i < layers.size(); ++i)
          for (std::size_t j = i + 1; j < layers.size(); ++j)
            for (PartitionKind ki : kKinds)
              for (PartitionKind kj : kKinds) {
                const std::size_t li = std::size_t(layers[i]), lj = std::size_t(layers[j]);
                if (current->assignment.kinds[li] == ki || current->assignment.kinds[lj] == kj) continue;
                LayerAssignment c = current->assignment;
                c.kinds[li] = ki;
                c.kinds[lj] = kj;
                pairs.push_back(std::move(c));
              }
        next = board.score(pairs);
        if (next && next->iteration_s < current->iteration_s) {
          current = next;
          continue;
        }
        break;
      }
    }
  }
  result.best = board.best(keep);
  result.scored = board.scored();
  result.infeasible = board.infeasible();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return result;
}

nlohmann::json assignment_file(const Network& network, const LayerAssignment& assignment) {
  nlohmann::json assign = nlohmann::json::object();
  for (std::size_t l = 0; l < network.layers.size(); ++l)
    if (network.layers[l].has_parameters()) assign[network.layers[l].spec.name] = to_string(assignment.kinds[l]);
  return {{"network", network.name}, {"assign", std::move(assign)}};
}

}  // namespace cnnpar
