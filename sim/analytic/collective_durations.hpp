#pragma once
// The closed-form time of every collective of a schedule, priced once per distinct collective:
// a schedule repeats the same collectives every iteration (and often across layers), and
// collective_time_s reads only the kind, size, group, root and algorithm of a collective.
// The part that does not depend on the network's rates (which collectives price alike, and
// their critical members' plans) is kept apart, for the replays of one schedule at many rates.
#include <cstddef>
#include <vector>

#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "system/collective.hpp"

namespace cnnpar::analytic {

struct CollectivePrices {
  std::vector<std::size_t> price_of;  ///< per collective id: its price (index into plans)
  std::vector<std::size_t> first_of;  ///< per price: the first collective id with it
  /** Per price: the critical member's plan (no steps for a group of one rank). */
  std::vector<CollectivePlan> plans;
};

/** Reads the network's algorithms only. */
CollectivePrices collective_prices(const Schedule& schedule, const Platform& platform);

/** Per collective id: collective_time_s(collective, platform), exactly; `prices` from
 *  collective_prices of this schedule on a platform with the same algorithms. */
std::vector<double> collective_durations_s(const Schedule& schedule, const Platform& platform,
                                           const CollectivePrices& prices);
std::vector<double> collective_durations_s(const Schedule& schedule, const Platform& platform);

}  // namespace cnnpar::analytic
