#pragma once
// Why a configuration's prediction misses its measured run (the cause of a miss), and whether
// the machine computed at its calibrated speed during that run.
#include <optional>
#include <string>

#include "analysis/metrics.hpp"
#include "model/trace.hpp"

namespace cnnpar {

/** The part of the model a configuration's miss comes from. */
enum class MissCause { none, compute, effective_bandwidth, latency, progress, tcp_behaviour, contention };
const char* to_string(MissCause cause);

struct Diagnosis {
  MissCause cause = MissCause::none;
  std::string explanation;  ///< one sentence with the numbers behind the verdict
};

/** Why `predicted` misses `measured` (the same schedule) by more than `tolerance_percent` in
 *  iteration time, or MissCause::none. The iteration error is split into compute (max over
 *  ranks) and exposed communication; the larger part names the cause, refined by the ops and
 *  collectives behind it:
 *  * compute: compute ops that ran while none of the rank's collectives was in progress miss;
 *    when the miss is in ops that overlapped communication instead, it is progress (the
 *    communication's cost to compute, comm_compute_slowdown);
 *  * communication, from the collectives' T_c, predicted against measured, on the rank whose
 *    exposed communication is largest:
 *    - collectives that overlapped compute miss while those that did not match: progress;
 *    - more than two ranks, and the miss lies in collectives whose steps run between more than
 *      one pair of nodes at once while a pair alone matches: contention;
 *    - otherwise by message size per step: >= 1 MiB effective bandwidth, < 64 KiB latency, in
 *      between TCP behaviour (slow start, the shaper's burst). */
Diagnosis diagnose(const Trace& predicted, const TraceMetrics& predicted_metrics, const Trace& measured,
                   const TraceMetrics& measured_metrics, double tolerance_percent);

/** How fast the machine computed during a measured run, against the calibration. */
struct ComputeSpeedCheck {
  double ratio = 0;  ///< measured / predicted seconds of the undisturbed ops (1 = as calibrated)
  int ops = 0;       ///< undisturbed ops of the measured iterations
  double share = 0;  ///< their predicted seconds over all the measured iterations' predicted compute
};
/** Undisturbed ops are the GEMMs of the measured iterations that no collective of any rank was
 *  in flight over for more than a quarter of their time: communication cannot have slowed
 *  them, as the ranks may share the machine's cores (the testbed). GEMMs only, as calibration
 *  times them directly (its GEMM grid); the roofline of the other ops is off by up to ±60 % per
 *  op, which would make the ratio depend on which ops ran undisturbed. Each is matched to the
 *  same op of `predicted`, the same schedule predicted from the calibrated platform.
 *  @return none when those ops hold less than kMinUndisturbedShare of the predicted GEMM time. */
inline constexpr double kMinUndisturbedShare = 0.1;
std::optional<ComputeSpeedCheck> compute_speed_check(const Trace& predicted, const Trace& measured);
/** True when a check's `ratio` is further than `tolerance_percent` from 1 (a ratio < 0: not
 *  checked, never off). */
bool compute_speed_off(double ratio, double tolerance_percent);

}  // namespace cnnpar
