#include "system/device_staging.hpp"

#include <algorithm>

#include "system/collective.hpp"

namespace cnnpar {

StagingTimes staging_times(const Collective& collective, const Platform& platform) {
  StagingTimes times;
  if (collective.group.size() <= 1 || !platform_stages_messages(platform)) return times;
  for (int rank : collective.group) {
    const DeviceSpec* device = platform.device_of(rank);
    if (device == nullptr || !device->stages_messages()) continue;
    const CollectiveCounts counts = collective_counts(collective, rank);
    const double link_Bps = device->host_link_Bps * platform.speed_factor(rank);
    times.before_s = std::max(times.before_s, 4.0 * double(counts.send) / link_Bps);
    times.after_s = std::max(times.after_s, 4.0 * double(counts.recv) / link_Bps);
  }
  return times;
}

bool platform_stages_messages(const Platform& platform) {
  return std::any_of(platform.nodes.kinds.begin(), platform.nodes.kinds.end(),
                     [](const NodeKind& kind) { return kind.device && kind.device->stages_messages(); });
}

}  // namespace cnnpar
