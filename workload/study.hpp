#pragma once
// A study (scenarios/studies/NAME.json): one network/platform setting and several series
// (strategies, batches or networks) predicted over the same node counts, with the numbers
// the source paper reports, so `cnnpar report` can set prediction beside publication.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "workload/strategy.hpp"

namespace cnnpar {

struct StudySeries {
  std::string label;                      ///< e.g. "lee k=9 f=2"
  std::string network;                    ///< network name or path (study's unless overridden)
  StrategyOptions strategy;               ///< strategy, k, f, bucket, batch, iterations
  std::map<int, double> paper_speedup_at; ///< published speedup at a node count
  std::map<int, double> paper_iteration_s_at; ///< published iteration time (seconds) at a node count
  double paper_max_speedup = 0;           ///< published maximum speedup over the nodes (0: none)
  /** Weak scaling: the global batch grows with the nodes, batch · P / (the study's first node
   *  count), so each rank's share stays that of the first node count (Veeriah & Modi give every
   *  conv worker its own M images). Each node count's speedup is then against one rank at
   *  that node count's batch. */
  bool weak_scaling = false;
};

/** A published ordering a study's prediction should reproduce (Lee et al.: "f = 2 is best",
 *  "more parameters, higher speedup", "DP+Overlap hardly scales beyond 32 nodes"). */
struct StudyOrdering {
  enum class Kind {
    best,        ///< `labels[0]` has the highest speedup of all series at `nodes` (0: their maxima)
    increasing,  ///< the series' maximum speedups increase in the order of `labels`
    flat_after,  ///< `labels[0]`'s speedup at the last node count is at most `max_gain` × its speedup at `nodes`
  };
  Kind kind = Kind::best;
  std::string claim;                ///< the paper's words, shown in the report
  std::vector<std::string> labels;  ///< series labels
  int nodes = 0;
  double max_gain = 0;
};

struct Study {
  std::string name;
  std::string title;
  std::string source;     ///< paper, figure and where the published numbers are stated
  std::string platform;   ///< platform name or path
  std::vector<int> nodes; ///< node counts, ascending
  std::vector<StudySeries> series;
  /** What the prediction reproduces of the paper and what not, and why (Markdown paragraphs,
   *  written by the study's author; shown as they are). */
  std::vector<std::string> findings;
  std::vector<StudyOrdering> orderings;
};

/** The series' strategy options at `nodes` of `study`: ranks set, and the batch scaled for a
 *  weak-scaling series. */
StrategyOptions series_options_at(const Study& study, const StudySeries& series, int nodes);

/** @throws InputError naming file, JSON path and value. */
Study parse_study(const nlohmann::json& document, const std::string& file);
/** A study by name (scenarios/studies, embedded) or path. */
Study load_study(const std::string& name_or_path);

}  // namespace cnnpar
