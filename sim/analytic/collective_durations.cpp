#include "sim/analytic/collective_durations.hpp"

#include <cstddef>

#include "sim/analytic/collective_cost.hpp"

namespace cnnpar::analytic {
namespace {

// What collective_time_s reads of a collective.
bool same_price(const Collective& a, const Collective& b) {
  return a.kind == b.kind && a.bytes == b.bytes && a.root == b.root && a.algorithm == b.algorithm &&
         a.group == b.group;
}

}  // namespace

std::vector<double> collective_durations_s(const Schedule& schedule, const Platform& platform) {
  const std::vector<Collective>& collectives = schedule.collectives;
  std::vector<double> durations_s(collectives.size(), 0.0);
  std::vector<std::size_t> priced;  // ids of the first collective of each distinct price
  for (std::size_t c = 0; c < collectives.size(); ++c) {
    const Collective& collective = collectives[c];
    bool found = false;
    for (std::size_t earlier : priced) {
      if (!same_price(collectives[earlier], collective)) continue;
      durations_s[c] = durations_s[earlier];
      found = true;
      break;
    }
    if (found) continue;
    durations_s[c] = collective_time_s(collective, platform);
    priced.push_back(c);
  }
  return durations_s;
}

}  // namespace cnnpar::analytic
