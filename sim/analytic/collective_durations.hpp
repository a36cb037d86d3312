#pragma once
// The closed-form time of every collective of a schedule, priced once per distinct collective:
// a schedule repeats the same collectives every iteration (and often across layers), and
// collective_time_s reads only the kind, size, group, root and algorithm of a collective.
#include <vector>

#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar::analytic {

/** Per collective id: collective_time_s(collective, platform), exactly. */
std::vector<double> collective_durations_s(const Schedule& schedule, const Platform& platform);

}  // namespace cnnpar::analytic
