#pragma once
// A Trace whose ranks fall into classes with identical timelines (the analytic engine's rank
// classes, sim/analytic/rank_classes.hpp), before the representatives' records are copied to
// the other ranks. Summaries that only reduce over ranks (analysis/metrics.hpp) read it as is
// and spare the copies; expand() gives the ordinary Trace.
#include <vector>

#include "model/trace.hpp"

namespace cnnpar {

struct ClassedTrace {
  /** One RankTrace per rank with its `rank` set; only a class representative's holds records. */
  Trace trace;
  /** Per rank: the rank whose records it lived (itself for a representative). Empty: every rank
   *  holds its own records. */
  std::vector<int> representative_of;

  /** The records rank `rank` lived. */
  const RankTrace& records_of(int rank) const;
  /** The ordinary Trace: every rank's records copied from its representative. */
  Trace expand() &&;
};

}  // namespace cnnpar
