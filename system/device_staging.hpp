#pragma once
// Copies between device and host memory around a collective whose members keep their tensors
// on a device and send through host memory (DeviceSpec::stages_messages): each such member
// copies its send buffer device -> host before the collective's first step and its receive
// buffer host -> device after its last, over its node's host link. A collective starts when
// its slowest member has staged its input and ends when the slowest holds its output, so both
// engines add the slowest member's copy each way to every member (docs/formats.md "Node kinds").
#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

struct StagingTimes {
  double before_s = 0;  ///< device -> host, before the first step (seconds)
  double after_s = 0;   ///< host -> device, after the last step (seconds)
  double total_s() const { return before_s + after_s; }
};

/** max over staging members of send bytes / (host_link · speed) and of receive bytes /
 *  (host_link · speed), FP32 buffers sized by collective_counts; zero when no member stages. */
StagingTimes staging_times(const Collective& collective, const Platform& platform);

/** True when some rank of the platform's nodes stages its messages (then staging_times can be
 *  non-zero). */
bool platform_stages_messages(const Platform& platform);

}  // namespace cnnpar
