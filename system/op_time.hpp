#pragma once
// Duration of one compute op on one rank, shared by every simulating engine: the single
// place that decides between a calibrated measurement and the roofline
// (docs/formats.md "Compute time of an op").
#include <cstdint>
#include <string>
#include <vector>

#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

/** Seconds `op` (a compute op) takes on `rank`'s node at full speed (no communication
 *  slow-down). Order: measured_op_s[op.label] (an explicit override), then a conv layer's
 *  forward and weight-gradient ops on nodes.inner's threads (the GEMM at peak · threads /
 *  cores · the mode's efficiency; with dag the im2col ops take 0 s), then for GEMMs the
 *  calibrated rate of its shape (measured_gemm_flops: the exact "gemm MxNxK phase" or
 *  "gemm MxNxK" key, else interpolated on the platform's GEMM grid, system/gemm_rate.hpp),
 *  then the roofline on the cores the op keeps busy (nodes.image_parallel_kernels,
 *  nodes.core_bandwidth) + call_overhead. Calibrated values were
 *  measured on a node of speed 1 and are divided by the rank's speed factor. An op whose
 *  kernel class runs on the rank's device (nodes.kinds) skips calibration and also pays its
 *  operands over the host link: 4·(m·k + k·n + m·n) bytes for a GEMM, op.bytes for any
 *  other op. */
double op_time_s(const Platform& platform, const Op& op, int rank);

/** True when `rank`'s input arrives by a collective (a send or bcast of layer 0's activations
 *  rooted elsewhere: a conv_split worker) instead of from the dataset. */
bool input_arrives_by_collective(const Schedule& schedule, int rank);

/** Images `rank` reads from the dataset each iteration: its slice of the first layer's batch
 *  (the first forward op's batch for a program without partitions), 0 when its input arrives
 *  by a collective. The executor reads exactly these (real/runtime.cpp). */
std::int64_t input_images(const Schedule& schedule, int rank);

/** Seconds a rank that reads `images` images spends at the start of each iteration outside
 *  the schedule's ops: iteration_overhead + input_per_image · images. Unscaled by the node's
 *  speed factor, as iteration_overhead always was. */
double iteration_overhead_s(const Platform& platform, std::int64_t images);
/** The same for `rank` of `schedule`: images = input_images(schedule, rank). */
double iteration_overhead_s(const Platform& platform, const Schedule& schedule, int rank);

/** Seconds the collective posted by op `post_index` of `rank` waits for its rank's idle
 *  progress thread: the thread needs a core the rank's compute holds, and gets one when the
 *  compute op the rank runs next ends (or the iteration overhead, after a mark), or after
 *  platform.comm_start_wait_max_s, whichever is first; at once when the rank waits before it
 *  computes. Measured with 2 ranks on 2 cores: a post before a 0.2-1 ms op waited at least
 *  80 % of that op in 90 % of cases. 0 when comm_start_wait_max_s is 0. The caller
 *  decides that the thread is idle (nothing posted and unfinished): a busy thread is awake. */
double comm_start_wait_s(const Platform& platform, const Schedule& schedule, int rank, std::size_t post_index);

/** One line per kind of extrapolation in `schedule` on `platform`: GEMM shapes outside the
 *  calibrated grid (their rates clamped to its nearest end), with a count and an example.
 *  Empty without a calibrated grid or when every shape lies inside it. Model code does not
 *  print: commands show these once per prediction. */
std::vector<std::string> calibration_warnings(const Platform& platform, const Schedule& schedule);

}  // namespace cnnpar
