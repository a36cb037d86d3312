#pragma once
// A Trace whose ranks fall into classes with identical timelines (the analytic engine's rank
// classes, sim/analytic/rank_classes.hpp), before the representatives' records are copied to
// the other ranks and before the per-collective metadata is written. Summaries that only
// reduce over ranks (analysis/metrics.hpp) read it as is and spare both; expand() gives the
// ordinary Trace.
#include <vector>

#include "model/trace.hpp"

namespace cnnpar {

struct ClassedTrace {
  /** One RankTrace per rank with its `rank` set; only a class representative's holds records.
   *  The metadata lacks collective_layers (make_empty_trace_without_layers). */
  Trace trace;
  /** Per rank: the rank whose records it lived (itself for a representative). Empty: every rank
   *  holds its own records. */
  std::vector<int> representative_of;
  /** TraceDetail::timing: only for a summary (EngineJob::summarize_classed); not expanded. */
  TraceDetail detail = TraceDetail::full;

  /** The records rank `rank` lived. */
  const RankTrace& records_of(int rank) const;
  /** The ordinary Trace of `schedule`, the one replayed: every rank's records copied from its
   *  representative, and metadata.collective_layers added. */
  Trace expand(const Schedule& schedule) &&;
};

}  // namespace cnnpar
