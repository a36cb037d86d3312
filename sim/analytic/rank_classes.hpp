#pragma once
// Ranks with the same program (the same op list, or equal ops), speed and node kind form a
// class. When every collective spans all ranks, every rank of a class joins each collective
// when its class representative does, so replaying one rank per class and copying its
// timeline is exact (dp and lee: one class, or two with an uneven batch split).
#include <vector>

#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar::analytic {

struct RankClasses {
  std::vector<int> representatives;    ///< one rank per class; empty = replay every rank
  std::vector<int> representative_of;  ///< per rank: its class representative
};

/** The classes when that pays off: every collective spans all ranks, fewer classes than ranks
 *  and at most 8 of them; else empty (replay every rank). */
RankClasses find_rank_classes(const Schedule& schedule, const Platform& platform);

}  // namespace cnnpar::analytic
