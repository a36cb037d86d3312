#pragma once
// Duration of one compute op on one rank, shared by every simulating engine: the single
// place that decides between a calibrated measurement and the roofline
// (docs/formats.md "Compute time of an op").
#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

/** Seconds `op` (a compute op) takes on `rank`'s node at full speed (no communication
 *  slow-down). Order: measured_op_s[op.label], then measured_gemm_flops[op.gemm] for GEMMs,
 *  then the roofline Platform::kernel_time_s. Calibrated values were measured on a node of
 *  speed 1 and are divided by the rank's speed factor. An op whose kernel class runs on the
 *  rank's device (nodes.kinds) skips calibration and also pays its operands over the host
 *  link: 4·(m·k + k·n + m·n) bytes for a GEMM, op.bytes for any other op. */
double op_time_s(const Platform& platform, const Op& op, int rank);

}  // namespace cnnpar
