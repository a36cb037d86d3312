#include "model/classed_trace.hpp"

#include <cstddef>
#include <utility>

#include "base/error.hpp"

namespace cnnpar {

const RankTrace& ClassedTrace::records_of(int rank) const {
  const std::size_t r = std::size_t(rank);
  return trace.ranks[representative_of.empty() ? r : std::size_t(representative_of[r])];
}

Trace ClassedTrace::expand(const Schedule& schedule) && {
  CNNPAR_ASSERT(detail == TraceDetail::full, "ClassedTrace::expand: a timing-only trace has no labels to copy");
  for (std::size_t r = 0; r < representative_of.size(); ++r) {
    if (representative_of[r] == int(r)) continue;
    RankTrace& rt = trace.ranks[r];
    const int rank = rt.rank;
    rt = trace.ranks[std::size_t(representative_of[r])];
    rt.rank = rank;
  }
  representative_of.clear();
  add_collective_layers(trace, schedule);
  return std::move(trace);
}

}  // namespace cnnpar
