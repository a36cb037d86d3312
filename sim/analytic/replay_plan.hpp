#pragma once
// What a replay derives from its schedule and the platform's nodes before it runs: which ranks
// it replays (rank_classes.hpp), their compute ops' and iteration overheads' durations, and how
// its collectives are priced. None of it reads the network's rates, latencies or topology, so
// the jobs of a batch that share a schedule share one plan (model/schedule_memo.hpp).
#include <vector>

#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "sim/analytic/collective_durations.hpp"
#include "sim/analytic/rank_classes.hpp"

namespace cnnpar::analytic {

enum class ReplayMode {
  automatic,     ///< run-ahead when valid, else time-ordered; rank classes when valid
  time_ordered,  ///< always the general replay of every rank (reference for tests)
};

struct ReplayPlan {
  RankClasses classes;  ///< empty representatives: every rank is replayed
  /** Per rank, replayed ones only (else empty): per op of its program, op_time_s for a compute
   *  op, 0 for the others (seconds). */
  std::vector<std::vector<double>> op_s;
  std::vector<double> overhead_s;  ///< per rank, replayed ones only: iteration_overhead_s
  /** Per rank, replayed ones only: its compute, post and mark ops (the records to reserve). */
  struct OpCounts {
    std::size_t computes = 0, posts = 0, marks = 0;
  };
  std::vector<OpCounts> op_counts;
  CollectivePrices prices;

  bool replayed(int rank) const {
    return classes.representatives.empty() || classes.representative_of[std::size_t(rank)] == rank;
  }
};

/** @throws InputError if the schedule has more ranks than the platform has nodes. */
ReplayPlan make_replay_plan(const Schedule& schedule, const Platform& platform, ReplayMode mode);

}  // namespace cnnpar::analytic
