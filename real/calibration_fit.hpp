#pragma once
// The statistics of `cnnpar calibrate` (real/calibrate*.cpp), free of MPI and BLAS so they can
// be tested on synthetic samples: medians with outlier counts, Theil–Sen lines, the robust
// link fit, the piecewise message factors, the memory-bandwidth fit of non-GEMM kernels, the
// size bound of the collective curves and the two progress mechanisms.
#include <map>
#include <utility>
#include <vector>

#include "model/platform.hpp"

namespace cnnpar::real {

/** A repeat lies this many scaled MADs (1.4826·MAD, the normal-consistent spread) from the
 *  median to count as an outlier. */
inline constexpr double kOutlierMads = 3.0;

/** Median of some repeats and how many of them are outliers (kOutlierMads). */
struct RobustSummary {
  double median = 0;
  int outliers = 0;
  int count = 0;
};
/** @throws std::invalid_argument for no samples. */
RobustSummary robust_summary(std::vector<double> samples);

/** y = intercept + slope·x */
struct Line {
  double intercept = 0;
  double slope = 0;
};
/** Theil–Sen: slope = median of the pairwise slopes over distinct x, intercept = median of
 *  y − slope·x. Half the points can be wild without moving it.
 *  @throws std::invalid_argument for fewer than two distinct x. */
Line theil_sen(const std::vector<std::pair<double, double>>& points);

/** The time an iteration spends outside its ops: iteration_overhead + input_per_image · images
 *  (system/op_time.hpp). */
struct InputTimeFit {
  double overhead_s = 0;
  double per_image_s = 0;
};
/** From (per-rank batch, median seconds outside the ops) per batch: a Theil–Sen line, loading
 *  the batch being the part that grows with it (measured here: 0.1 ms at 1 image, 2.9 ms at
 *  32, 5.7 ms at 64). A negative slope is noise: then no per-image time and the median as
 *  the overhead; a negative intercept becomes 0. One batch gives its time and no slope.
 *  @throws std::invalid_argument for no points. */
InputTimeFit fit_input_time(const std::vector<std::pair<double, double>>& batch_outside_s);

/** One-message times t(n) = latency_s + n / bandwidth_Bps. */
struct LinkFit {
  double latency_s = 0;
  double bandwidth_Bps = 0;
};
/** Messages up to this size set the latency, from this size on the bandwidth (below): below
 *  MPICH's 16 KiB eager limit, and beyond the caches (1-4 MiB messages ran twice as fast as
 *  DRAM-sized ones over shared memory and moved the fitted bandwidth by 24 % between runs). */
inline constexpr double kSmallMessageBytes = 8.0 * 1024;
inline constexpr double kLargeMessageBytes = 16.0 * 1024 * 1024;

/** Robust fit of `samples` (bytes, seconds of one message, e.g. the median of repeats):
 *  bandwidth = 1 / Theil–Sen slope of the large sizes (>= kLargeMessageBytes, else the larger
 *  half of the distinct sizes), latency = Theil–Sen intercept of the small sizes
 *  (<= kSmallMessageBytes, else the smaller half), at least 0. The two ends do not pull on
 *  each other: small messages that a token bucket lets through at line rate cannot raise the
 *  bandwidth (an all-sizes fit came out 3.3× too high over a shaped 1 Gbit/s link), and a
 *  noisy large message cannot turn the latency into milliseconds.
 *  @throws std::invalid_argument for fewer than two distinct sizes or no positive slope. */
LinkFit fit_link(const std::vector<std::pair<double, double>>& samples);

/** Seconds one step of a collective took with a message of step_bytes (the larger of what
 *  it sends and receives in that step; system/collective.hpp). */
struct StepSample {
  double step_bytes = 0;
  double step_s = 0;
};
/** Pieces of NetworkSpec::message_factors (first from 0 B) with which a message of n bytes
 *  costs alpha_s·latency_factor + n/(beta_Bps·bandwidth_factor) as measured: the samples of
 *  each distinct size are reduced to their median; a piece starts at a measured size and is
 *  the chord to a later one, extended over the next sizes while it predicts each point it
 *  spans within `tolerance` (relative); the first reaches down to 0 B, the last beyond the
 *  largest size. A chord the factors cannot express (a jump between two sizes needs a
 *  negative start-up; factors lie in [0.001, 1000]) becomes the expressible line through
 *  its left point, whose range it is.
 *  @throws std::invalid_argument for no samples or alpha_s < 0, beta_Bps <= 0. */
std::vector<MessageFactor> fit_message_factors(const std::vector<StepSample>& samples, double alpha_s,
                                               double beta_Bps, double tolerance = 0.05);

/** One calibrated collective size of a kind: the median measured seconds, the seconds its
 *  steps are priced at size factor 1 and no step overhead (steps_time_s), the part of those
 *  that grows with the bytes (Σ NetworkSpec::transfer_time_s of the steps) and how many steps
 *  that pricing sums. */
struct KindSample {
  double bytes = 0;  ///< Collective::bytes
  double measured_s = 0;
  double priced_s = 0;
  double transfer_s = 0;
  int steps = 1;  ///< rounds of the priced (critical) member's plan
};
/** A kind's NetworkSpec::kind_size_factors from its samples, a point per size. The largest
 *  sizes whose transfer part is at least `min_transfer_share` of their priced time (a
 *  contiguous run from the largest down) each get the factor f with
 *  priced + (f − 1)·transfer = measured, clamped to [kMinKindSizeFactor, kMaxKindSizeFactor]
 *  (first order: the message factors of the unscaled size), when the run holds at least two
 *  sizes (else factor 1). Every size below the run (bound by its start-up, or by its
 *  reduction) keeps factor 1 and gets the step overhead o with priced + steps·o = measured, at
 *  least 0: what each of the kind's steps takes at that size beyond the link fit's message.
 *  (The reduction-bound sizes count too: MPICH's 128 KiB reduce_scatter on 4 ranks took
 *  4.2-5.3 ms against 2.0 priced, in calibration and in hybrid's runs alike.) Then every factor
 *  but the two ends takes the median of its value and its neighbours' (the run's first size
 *  has the factor 1 below it as one), and so does every overhead (one size off its neighbours
 *  is noise). Empty when no size gets a factor and none takes longer than priced. Samples need
 *  not be sorted; those without a positive size, measurement, pricing and step count are left
 *  out. */
std::vector<KindSizeFactor> fit_kind_size_factors(std::vector<KindSample> samples, double min_transfer_share);
/** A fitted step overhead below this is rounding (a size the fit reproduces exactly): 0. */
inline constexpr double kNegligibleStepOverhead_s = 1e-9;

/** Non-GEMM kernels: t = overhead_s + bytes / bandwidth_Bps. */
struct MemoryFit {
  double overhead_s = 0;
  double bandwidth_Bps = 0;
  int outliers = 0;  ///< samples whose residual is beyond kOutlierMads (reported, kept)
};
/** Non-GEMM ops up to this many bytes set the per-call overhead (below). */
inline constexpr double kSmallOpBytes = 256.0 * 1024;
/** Over (bytes, seconds) samples (each already a median of repeats): overhead = the
 *  Theil–Sen intercept of the small ops (<= kSmallOpBytes, else the smaller half of the
 *  sizes), at least 0; bandwidth = Σ bytes / (Σ seconds − count · overhead), so the fitted
 *  times of the calibrated ops add up to their measured total, which is what an iteration
 *  time needs (all overhead and no bytes' worth of time left: overhead 0).
 *  @throws std::invalid_argument for fewer than two distinct sizes or no bytes. */
MemoryFit fit_memory(const std::vector<std::pair<double, double>>& samples);

/** One non-GEMM op as calibration timed it. */
struct KernelSample {
  KernelClass kernel = KernelClass::other;
  double flops = 0;
  double bytes = 0;
  double seconds = 0;  ///< median of the repeats
};
/** The roofline of the non-GEMM kernels, t = max(flops / (peak · efficiency[class]),
 *  bytes / bandwidth[class]) + overhead (Processor::roofline_s + call_overhead). */
struct RooflineFit {
  MemoryFit memory;                                 ///< every class: overhead, and the bandwidth of classes without their own
  std::map<KernelClass, double> kernel_bandwidth_Bps;  ///< classes with enough memory-bound ops (bytes per second)
  std::map<KernelClass, double> efficiency;         ///< classes slower than memory alone explains
};
/** A class gets its own bandwidth from at least this many memory-bound ops. */
inline constexpr int kMinClassBandwidthOps = 3;
/** Alternates, `rounds` times: (1) overhead and bandwidth by fit_memory over the ops that are
 *  memory-bound under the current efficiencies (all at first); then each class with at least
 *  kMinClassBandwidthOps of them its own bandwidth, Σ bytes / (Σ seconds − count · overhead)
 *  over its ops, so the class's modelled total is its measured total (classes stream memory
 *  differently: im2col gathers with strides, element-wise ops stream); (2) for each class
 *  with FLOPs whose measured total still exceeds its modelled total, the efficiency
 *  (bisection in [1e-6, 1]) that makes the two equal; a class the memory term already covers
 *  gets none.
 *  @throws std::invalid_argument as fit_memory. */
RooflineFit fit_roofline(const std::vector<KernelSample>& samples, double peak_flops, int rounds = 3);

/** Seconds a transfer of `bytes` is predicted to take from the sizes of one curve measured so
 *  far, (bytes, seconds): the line through the two largest distinct sizes (a message time is
 *  latency + bytes / bandwidth, so its chord is what a larger size extends), never below the
 *  largest size's time; with one size, that time scaled by the size ratio (an upper bound, as
 *  the time per byte falls with the size). Calibration skips a size whose prediction exceeds
 *  its bound (CalibrateOptions::max_transfer_s).
 *  @throws std::invalid_argument for no samples or a non-positive size. */
double extrapolated_transfer_s(const std::vector<std::pair<double, double>>& measured, double bytes);

/** Calls in a calibration chain of back-to-back repeats of one size: enough to last
 *  `target_s` at `predicted_s` per call (extrapolated_transfer_s; <= 0 = unknown, then
 *  `min_calls`), at least `min_calls`, at most max(`min_calls`, `max_calls`). */
int chain_calls(double predicted_s, int min_calls, double target_s, int max_calls);

/** `comm_compute_slowdown` s from one probe: the same compute ops timed alone and while the
 *  rank's collectives progressed. The engines run compute 1 + s times slower while a
 *  collective of its rank progresses, so s = Σ busy / Σ alone − 1 (negative when the busy run
 *  was faster: noise, left to the median over repeats).
 *  @throws std::invalid_argument for no ops, lists of unequal length or Σ alone <= 0. */
double compute_slowdown(const std::vector<double>& alone_s, const std::vector<double>& busy_s);

/** `network.busy_bandwidth_fraction` f from one probe: a collective that takes `alone_s` on
 *  its own took `busy_s` when its ranks computed for the first `computing_s` of it (the rest,
 *  busy_s − computing_s, with no compute). The engines give it f of its speed while computing
 *  and all of it otherwise, so alone_s = f·computing_s + (busy_s − computing_s):
 *  f = (alone_s − busy_s + computing_s) / computing_s. Not clamped (noise can leave (0, 1]).
 *  @throws std::invalid_argument for computing_s <= 0 or computing_s > busy_s. */
double busy_bandwidth_fraction(double alone_s, double busy_s, double computing_s);

}  // namespace cnnpar::real
