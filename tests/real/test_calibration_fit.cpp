#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "model/platform.hpp"
#include "real/calibration_fit.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

namespace {
constexpr double KiB = 1024.0, MiB = 1024.0 * 1024.0;
}  // namespace

TEST_CASE("robust summary: the median of repeats, and the repeat 3 MADs away is counted") {
  // median (1.00 + 1.01)/2 = 1.005; |deviations| 0.025 0.015 0.005 0.005 0.015 1.995 -> MAD 0.015,
  // scaled 0.0222: only 3.0 lies beyond 3 · 0.0222 = 0.067.
  const RobustSummary s = robust_summary({1.0, 1.01, 0.99, 1.02, 0.98, 3.0});
  CHECK(s.median == Approx(1.005).epsilon(1e-12));
  CHECK(s.outliers == 1);
  CHECK(s.count == 6);
  CHECK(robust_summary({2.0, 2.0, 2.0}).outliers == 0);  // no spread: nothing is an outlier
  CHECK_THROWS_AS(robust_summary({}), std::invalid_argument);
}

TEST_CASE("link fit: a shaped link with burst-served small messages and outliers") {
  // A 1 Gbit/s token bucket (125 MB/s) with a 256 KiB burst: the first 256 KiB of a message
  // go at line rate (3 GB/s), the rest at the shaped rate, after a latency of 50 us:
  //   t(n) = 50 us + min(n, 256 KiB)/3 GB/s + max(0, n - 256 KiB)/125 MB/s.
  // From 16 MiB the slope is exactly 1/125 MB/s; up to 8 KiB the intercept is exactly 50 us.
  // Two medians are wild (x 20 at 4 KiB, x 5 at 16 MiB): Theil–Sen ignores them.
  constexpr double kLatency_s = 50e-6, kShaped_Bps = 125e6, kBurst_Bps = 3e9, kBurstBytes = 256 * KiB;
  constexpr double kTolerance = 0.01;  // relative
  std::vector<std::pair<double, double>> samples;
  for (double n = 1 * KiB; n <= 256 * MiB; n *= 2) {
    double t = kLatency_s + std::min(n, kBurstBytes) / kBurst_Bps + std::max(0.0, n - kBurstBytes) / kShaped_Bps;
    if (n == 4 * KiB) t *= 20;
    if (n == 16 * MiB) t *= 5;
    samples.emplace_back(n, t);
  }
  const LinkFit fit = fit_link(samples);
  CHECK(fit.bandwidth_Bps == Approx(kShaped_Bps).epsilon(kTolerance));
  CHECK(fit.latency_s == Approx(kLatency_s).epsilon(kTolerance));
}

TEST_CASE("link fit: too few sizes or no slope is an error") {
  CHECK_THROWS_AS(fit_link({{8, 1e-6}, {8, 2e-6}}), std::invalid_argument);
  CHECK_THROWS_AS(fit_link({{1 * MiB, 1e-3}, {4 * MiB, 1e-3}}), std::invalid_argument);
}

TEST_CASE("input time: the iteration's time outside its ops is a line in the per-rank batch") {
  // t(b) = 25 us + 89.5 us · b at b = 1..64 (this machine: 0.1 ms at 1 image, 5.7 ms at 64), the
  // batch-8 median 4 times too slow: Theil–Sen gives back 25 us and 89.5 us.
  constexpr double kOverhead_s = 25e-6, kPerImage_s = 89.5e-6;
  constexpr double kTolerance = 1e-9;  // relative: exact points, one wild
  std::vector<std::pair<double, double>> points;
  for (double b = 1; b <= 64; b *= 2) points.emplace_back(b, (kOverhead_s + kPerImage_s * b) * (b == 8 ? 4 : 1));
  const InputTimeFit fit = fit_input_time(points);
  CHECK(fit.overhead_s == Approx(kOverhead_s).epsilon(kTolerance));
  CHECK(fit.per_image_s == Approx(kPerImage_s).epsilon(kTolerance));
}

TEST_CASE("input time: a falling line, one batch or a negative intercept") {
  // Falling: noise, so no per-image time and the median 2 ms as the overhead.
  const InputTimeFit falling = fit_input_time({{1, 3e-3}, {2, 2e-3}, {4, 1e-3}});
  CHECK(falling.per_image_s == 0);
  CHECK(falling.overhead_s == Approx(2e-3));
  // One batch: its median time, no slope.
  const InputTimeFit one = fit_input_time({{16, 1.5e-3}, {16, 1.7e-3}, {16, 1.6e-3}});
  CHECK(one.per_image_s == 0);
  CHECK(one.overhead_s == Approx(1.6e-3));
  // t = −1e-4 + 1e-4 · b: the intercept is clamped to 0, the slope kept.
  const InputTimeFit negative = fit_input_time({{2, 1e-4}, {4, 3e-4}, {8, 7e-4}});
  CHECK(negative.overhead_s == 0);
  CHECK(negative.per_image_s == Approx(1e-4));
  CHECK_THROWS_AS(fit_input_time({}), std::invalid_argument);
}

TEST_CASE("message factors: the engines' pricing reproduces a piecewise curve") {
  // alpha = 10 us, beta = 1 GB/s; the true per-message time has three regimes:
  //   n <  64 KiB: alpha·1  + n/(beta·2)
  //   n <   4 MiB: alpha·3  + n/(beta·1)
  //   else:        alpha·20 + n/(beta·0.8)
  // Each size has three samples, one of them 1.5 times too slow (the median ignores it).
  // At every measured size the fitted factors must give the curve within the fit tolerance.
  constexpr double kAlpha_s = 10e-6, kBeta_Bps = 1e9, kFitTolerance = 0.05;
  NetworkSpec truth;
  truth.latency_s = kAlpha_s;
  truth.bandwidth_Bps = kBeta_Bps;
  truth.message_factors = {{0, 1, 2}, {64 * KiB, 3, 1}, {4 * MiB, 20, 0.8}};
  std::vector<StepSample> samples;
  for (double n = 1 * KiB; n <= 256 * MiB; n *= 2) {
    const double t = truth.message_time_s(n);
    samples.push_back({n, t});
    samples.push_back({n, 1.5 * t});
    samples.push_back({n, t * (1 + 1e-3)});
  }
  NetworkSpec fitted = truth;
  fitted.message_factors = fit_message_factors(samples, kAlpha_s, kBeta_Bps, kFitTolerance);
  REQUIRE(!fitted.message_factors.empty());
  CHECK(fitted.message_factors.front().from_bytes == 0);
  for (double n = 1 * KiB; n <= 256 * MiB; n *= 2)
    CHECK(fitted.message_time_s(n) == Approx(truth.message_time_s(n) * (1 + 1e-3)).epsilon(kFitTolerance));
  // Three straight regimes and two jumps between measured sizes: five chords at most.
  CHECK(fitted.message_factors.size() <= 5);
  for (std::size_t i = 1; i < fitted.message_factors.size(); ++i)
    CHECK(fitted.message_factors[i].from_bytes > fitted.message_factors[i - 1].from_bytes);
}

TEST_CASE("message factors: a token bucket's head start is priced within the tolerance up to the largest size") {
  // The shaped link of "link fit": beyond the 256 KiB burst
  //   t(n) = 50 us + 256 KiB/3 GB/s + (n - 256 KiB)/125 MB/s = n/125 MB/s - 1.96 ms,
  // a line with a negative start-up that no factors >= 0 give: each piece must still hold
  // every size it spans, the largest ones (where the time of a big gradient's allreduce is) too.
  constexpr double kLatency_s = 50e-6, kShaped_Bps = 125e6, kBurst_Bps = 3e9, kBurstBytes = 256 * KiB;
  constexpr double kFitTolerance = 0.03;
  NetworkSpec link;
  link.latency_s = kLatency_s;
  link.bandwidth_Bps = kShaped_Bps;
  std::vector<StepSample> samples;
  const auto truth = [&](double n) {
    return kLatency_s + std::min(n, kBurstBytes) / kBurst_Bps + std::max(0.0, n - kBurstBytes) / kShaped_Bps;
  };
  for (double n = 1 * KiB; n <= 16 * MiB; n *= 2) samples.push_back({n, truth(n)});
  link.message_factors = fit_message_factors(samples, kLatency_s, kShaped_Bps, kFitTolerance);
  for (double n = 1 * KiB; n <= 16 * MiB; n *= 2) {
    INFO("size " << n << " B: fitted " << link.message_time_s(n) << " s, true " << truth(n) << " s");
    CHECK(link.message_time_s(n) == Approx(truth(n)).epsilon(kFitTolerance));
  }
}

TEST_CASE("message factors: a pure alpha-beta link is one piece of factors 1") {
  constexpr double kAlpha_s = 5e-6, kBeta_Bps = 2e9;
  std::vector<StepSample> samples;
  for (double n = 1 * KiB; n <= 64 * MiB; n *= 4) samples.push_back({n, kAlpha_s + n / kBeta_Bps});
  const auto factors = fit_message_factors(samples, kAlpha_s, kBeta_Bps);
  REQUIRE(factors.size() == 1);
  CHECK(factors[0].latency_factor == Approx(1).epsilon(1e-9));
  CHECK(factors[0].bandwidth_factor == Approx(1).epsilon(1e-9));
  CHECK_THROWS_AS(fit_message_factors({}, kAlpha_s, kBeta_Bps), std::invalid_argument);
}

TEST_CASE("memory fit: overhead and bandwidth of non-GEMM kernels") {
  // Exact samples of t = 3 us + bytes / 8 GB/s come back to rounding.
  constexpr double kOverhead_s = 3e-6, kBandwidth_Bps = 8e9, kRounding = 1e-6;
  std::vector<std::pair<double, double>> exact, noisy;
  int sign = -1;  // the largest size ends up 5 % fast: the fitted intercept stays positive
  for (double bytes = 4 * KiB; bytes <= 64 * MiB; bytes *= 2, sign = -sign) {
    exact.emplace_back(bytes, kOverhead_s + bytes / kBandwidth_Bps);
    noisy.emplace_back(bytes, (kOverhead_s + bytes / kBandwidth_Bps) * (1 + 0.05 * sign));
  }
  const MemoryFit fit = fit_memory(exact);
  CHECK(fit.bandwidth_Bps == Approx(kBandwidth_Bps).epsilon(kRounding));
  CHECK(fit.overhead_s == Approx(kOverhead_s).epsilon(kRounding));
  // With +-5 % residuals the fitted times still add up to the measured total (the bandwidth
  // is chosen so).
  const MemoryFit rough = fit_memory(noisy);
  REQUIRE(rough.overhead_s > 0);
  double measured = 0, modelled = 0;
  for (const auto& [bytes, seconds] : noisy) {
    measured += seconds;
    modelled += rough.overhead_s + bytes / rough.bandwidth_Bps;
  }
  CHECK(modelled == Approx(measured).epsilon(1e-9));
  // A negative intercept becomes 0: t = bytes / 4 GB/s - 1 us gives overhead 0 and the
  // bandwidth of the totals, 9 MiB / (9 MiB / 4 GB/s - 2 us) > 4 GB/s.
  const MemoryFit origin = fit_memory({{1 * MiB, 1 * MiB / 4e9 - 1e-6}, {8 * MiB, 8 * MiB / 4e9 - 1e-6}});
  CHECK(origin.overhead_s == 0);
  CHECK(origin.bandwidth_Bps > 4e9);
}

TEST_CASE("roofline fit: each class with enough ops gets its own bandwidth, a class with too few an efficiency") {
  // Truth: overhead 2 us, peak 100 GFLOP/s. im2col (no FLOPs) streams 5 GB/s and eltwise (1
  // FLOP per 8 bytes) 20 GB/s: memory-bound, each at its own rate. pool does 5 FLOPs per byte
  // at efficiency 0.01: 5 / (1e11 · 0.01) = 5 ns per byte, i.e. a bandwidth of 0.2 GB/s, which
  // is how the fit prices a class with enough ops. softmax does the same with only 2 ops
  // (< kMinClassBandwidthOps): its compute term takes an efficiency of 0.01.
  constexpr double kOverhead_s = 2e-6, kPeak_flops = 100e9, kSlowEfficiency = 0.01;
  const std::map<KernelClass, double> bandwidth_Bps = {{KernelClass::im2col, 5e9}, {KernelClass::eltwise, 20e9}};
  constexpr double kPoolEquivalent_Bps = kPeak_flops * kSlowEfficiency / 5;  // 0.2 GB/s
  // The common overhead is a Theil–Sen intercept over classes of different slopes, so it is
  // not exact; at most 2 us on each of 6 ops, against a class total of at least 18 ms
  // (64 MiB at 5 GB/s alone is 13.4 ms): 1e-3 relative bounds what that moves a bandwidth.
  constexpr double kBandwidthTolerance = 1e-3;
  constexpr double kTotalTolerance = 1e-6;  // a class's modelled total against its measured one
  const auto truth = [&](KernelClass kernel, double flops, double bytes) {
    if (kernel == KernelClass::pool || kernel == KernelClass::softmax)
      return flops / (kPeak_flops * kSlowEfficiency) + kOverhead_s;
    return std::max(flops / kPeak_flops, bytes / bandwidth_Bps.at(kernel)) + kOverhead_s;
  };
  std::vector<KernelSample> samples;
  for (double bytes = 64 * KiB; bytes <= 64 * MiB; bytes *= 4) {
    samples.push_back({KernelClass::im2col, 0, bytes, truth(KernelClass::im2col, 0, bytes)});
    samples.push_back({KernelClass::eltwise, bytes / 8, bytes, truth(KernelClass::eltwise, bytes / 8, bytes)});
    samples.push_back({KernelClass::pool, bytes * 5, bytes, truth(KernelClass::pool, bytes * 5, bytes)});
  }
  for (double bytes : {64 * KiB, 1 * MiB})
    samples.push_back({KernelClass::softmax, bytes * 5, bytes, truth(KernelClass::softmax, bytes * 5, bytes)});
  const RooflineFit fit = fit_roofline(samples, kPeak_flops);

  REQUIRE(fit.kernel_bandwidth_Bps.count(KernelClass::im2col) == 1);
  REQUIRE(fit.kernel_bandwidth_Bps.count(KernelClass::eltwise) == 1);
  REQUIRE(fit.kernel_bandwidth_Bps.count(KernelClass::pool) == 1);
  CHECK(fit.kernel_bandwidth_Bps.at(KernelClass::im2col) == Approx(5e9).epsilon(kBandwidthTolerance));
  CHECK(fit.kernel_bandwidth_Bps.at(KernelClass::eltwise) == Approx(20e9).epsilon(kBandwidthTolerance));
  CHECK(fit.kernel_bandwidth_Bps.at(KernelClass::pool) == Approx(kPoolEquivalent_Bps).epsilon(kBandwidthTolerance));
  CHECK(fit.kernel_bandwidth_Bps.count(KernelClass::softmax) == 0);
  CHECK(fit.efficiency.count(KernelClass::pool) == 0);  // its own bandwidth covers it
  REQUIRE(fit.efficiency.count(KernelClass::softmax) == 1);
  CHECK(fit.efficiency.at(KernelClass::softmax) == Approx(kSlowEfficiency).epsilon(kBandwidthTolerance));

  // Every class's fitted times add up to its measured total (what an iteration time needs).
  std::map<KernelClass, std::pair<double, double>> totals;  // measured, modelled
  for (const KernelSample& k : samples) {
    const auto own = fit.kernel_bandwidth_Bps.find(k.kernel);
    const double bandwidth = own == fit.kernel_bandwidth_Bps.end() ? fit.memory.bandwidth_Bps : own->second;
    const auto e = fit.efficiency.find(k.kernel);
    const double efficiency = e == fit.efficiency.end() ? 1.0 : e->second;
    totals[k.kernel].first += k.seconds;
    totals[k.kernel].second += std::max(k.flops / (kPeak_flops * efficiency), k.bytes / bandwidth) + fit.memory.overhead_s;
  }
  for (const auto& [kernel, total] : totals) {
    INFO(to_string(kernel));
    CHECK(total.second == Approx(total.first).epsilon(kTotalTolerance));
  }
}

TEST_CASE("size bound: a transfer is predicted by the chord of the two largest sizes measured") {
  constexpr double kTolerance = 1e-12;  // relative: exact arithmetic on these values
  // A 100 Mbit/s link (12.5 MB/s) with 50 us latency: t(n) = 50e-6 + n / 12.5e6.
  // 8 MiB: 0.67113864 s, 16 MiB: 1.34222728 s; the chord extends to 32 MiB exactly:
  // 50e-6 + 33554432 / 12.5e6 = 2.68440456 s (beyond a 2 s bound, so calibration stops there).
  const auto t = [](double n) { return 50e-6 + n / 12.5e6; };
  const std::vector<std::pair<double, double>> measured = {{1 * KiB, t(1 * KiB)}, {8 * MiB, t(8 * MiB)},
                                                           {16 * MiB, t(16 * MiB)}};
  CHECK(extrapolated_transfer_s(measured, 32 * MiB) == Approx(2.68440456).epsilon(kTolerance));
  // One size: scaled by the size ratio, 0.5 s at 4 MiB -> 1.0 s at 8 MiB.
  CHECK(extrapolated_transfer_s({{4 * MiB, 0.5}}, 8 * MiB) == Approx(1.0).epsilon(kTolerance));
  // A falling chord (burst-served sizes, noise) never predicts less than the largest time.
  CHECK(extrapolated_transfer_s({{1 * MiB, 0.3}, {2 * MiB, 0.2}}, 4 * MiB) == Approx(0.2).epsilon(kTolerance));
  CHECK_THROWS_AS(extrapolated_transfer_s({}, 1 * MiB), std::invalid_argument);
  CHECK_THROWS_AS(extrapolated_transfer_s({{0, 1.0}}, 1 * MiB), std::invalid_argument);
}

TEST_CASE("chain length: enough back-to-back calls for the target time, within the bounds") {
  constexpr double kTarget_s = 2;
  constexpr int kMin = 5, kMax = 20;
  // 2 s / 0.175 s = 11.4 -> 12 calls (a 2 MiB allreduce at 100 Mbit/s).
  CHECK(chain_calls(0.175, kMin, kTarget_s, kMax) == 12);
  // 2 s / 0.7 s = 2.9 -> at least kMin (an 8 MiB one).
  CHECK(chain_calls(0.7, kMin, kTarget_s, kMax) == kMin);
  // 2 s / 0.0088 s = 228 -> at most kMax (a 1 MiB one at 1 Gbit/s); a vanishing time stays bounded.
  CHECK(chain_calls(0.0088, kMin, kTarget_s, kMax) == kMax);
  CHECK(chain_calls(1e-300, kMin, kTarget_s, kMax) == kMax);
  // 2 s / 0.1 s = 20 exactly: kMax.
  CHECK(chain_calls(0.1, kMin, kTarget_s, kMax) == 20);
  // Unknown time (no size measured yet, or not finite): the minimum.
  CHECK(chain_calls(0, kMin, kTarget_s, kMax) == kMin);
  CHECK(chain_calls(-1, kMin, kTarget_s, kMax) == kMin);
  CHECK(chain_calls(std::numeric_limits<double>::quiet_NaN(), kMin, kTarget_s, kMax) == kMin);
  // A minimum above the maximum (--repeats 30) wins.
  CHECK(chain_calls(0.001, 30, kTarget_s, kMax) == 30);
}

TEST_CASE("progress: compute slowdown is the busy ops' total over their total alone, minus 1") {
  constexpr double kTolerance = 1e-12;
  // Three ops of 0.10, 0.20 and 0.30 s alone (0.60 s) took 0.12, 0.23 and 0.40 s (0.75 s)
  // while collectives progressed: s = 0.75 / 0.60 - 1 = 0.25 (the engines then price them
  // 1.25 times longer, 0.75 s in all).
  CHECK(compute_slowdown({0.10, 0.20, 0.30}, {0.12, 0.23, 0.40}) == Approx(0.25).epsilon(kTolerance));
  CHECK(compute_slowdown({0.5}, {0.45}) == Approx(-0.1).epsilon(kTolerance));  // noise: left to the median
  CHECK_THROWS_AS(compute_slowdown({}, {}), std::invalid_argument);
  CHECK_THROWS_AS(compute_slowdown({0.1, 0.2}, {0.1}), std::invalid_argument);
  CHECK_THROWS_AS(compute_slowdown({0.0}, {0.1}), std::invalid_argument);
}

TEST_CASE("progress: busy bandwidth fraction from a collective that outlasts or ends under compute") {
  constexpr double kTolerance = 1e-12;
  // Ends under compute: 0.08 s alone, 0.80 s while its ranks computed all along:
  // 0.08 = f · 0.80 -> f = 0.1 (a polling rank moving 12.5 of 125 MB/s).
  CHECK(busy_bandwidth_fraction(0.08, 0.80, 0.80) == Approx(0.1).epsilon(kTolerance));
  // Outlasts it: 0.5 s alone, 1.4 s in all, the first 1.0 s under compute; the last 0.4 s at
  // full speed did 0.4 s of its work, so the compute second did 0.1 s: f = 0.1.
  CHECK(busy_bandwidth_fraction(0.5, 1.4, 1.0) == Approx(0.1).epsilon(kTolerance));
  // A communication thread: as fast as alone, f = 1.
  CHECK(busy_bandwidth_fraction(0.2, 0.2, 0.2) == Approx(1.0).epsilon(kTolerance));
  CHECK_THROWS_AS(busy_bandwidth_fraction(0.1, 0.5, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(busy_bandwidth_fraction(0.1, 0.5, 0.6), std::invalid_argument);
}

TEST_CASE("kind size factors: the transfer-bound sizes get the factor that prices them as measured") {
  // One step per collective on α = 100 µs, β = 1 GB/s: priced(n) = α + n/β, transfer(n) = n/β.
  // The kind measures α + 1.25·n/β: its size factor is 1.25 wherever the transfer is at least
  // half the priced time, n/β >= α, i.e. from 100 kB: from 128 KiB on. Below, 1-64 KiB are
  // start-up-bound: factor 1 and a step overhead of what they take beyond the link, 0.25·n/β.
  constexpr double kAlpha_s = 100e-6, kBeta_Bps = 1e9, kTrueFactor = 1.25, kShare = 0.5;
  std::vector<KindSample> samples;
  for (double n = 64 * MiB; n >= 1 * KiB; n /= 2)  // unsorted on purpose: largest first
    samples.push_back({n, kAlpha_s + kTrueFactor * n / kBeta_Bps, kAlpha_s + n / kBeta_Bps, n / kBeta_Bps});
  const std::vector<KindSizeFactor> points = fit_kind_size_factors(samples, kShare);
  REQUIRE(points.size() == 17);  // 1 KiB .. 64 KiB start-up-bound, then 128 KiB .. 64 MiB
  CHECK(points.front().bytes == 1 * KiB);
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (i > 0) CHECK(points[i].bytes == points[i - 1].bytes * 2);
    if (points[i].bytes <= 64 * KiB) {
      CHECK(points[i].factor == 1.0);
      CHECK(points[i].step_overhead_s == Approx(0.25 * points[i].bytes / kBeta_Bps).epsilon(1e-12));
    } else {
      // The first, 128 KiB, is the median of 1 (below it), 1.25 and 1.25.
      CHECK(points[i].factor == Approx(kTrueFactor).epsilon(1e-12));
      CHECK(points[i].step_overhead_s == 0.0);
    }
  }
  // A size in the middle that is not transfer-bound ends the run there: the sizes above it.
  std::vector<KindSample> broken = samples;
  for (KindSample& s : broken)
    if (s.bytes == 8 * MiB) s.priced_s = 4 * s.transfer_s;
  const std::vector<KindSizeFactor> upper = fit_kind_size_factors(broken, kShare);
  REQUIRE(upper.size() == 17);
  CHECK(upper[13].bytes == 8 * MiB);
  CHECK(upper[13].factor == 1.0);
  CHECK(upper[14].factor == Approx(kTrueFactor).epsilon(1e-12));
  // One size measured 2.8 times slower than its neighbours' 1.25 is a spike: the median of it
  // and its neighbours, 1.25, replaces it.
  std::vector<KindSample> spiked = samples;
  for (KindSample& s : spiked)
    if (s.bytes == 1 * MiB) s.measured_s = s.priced_s + (2.8 - 1) * s.transfer_s;
  for (const KindSizeFactor& point : fit_kind_size_factors(spiked, kShare))
    if (point.bytes == 1 * MiB) CHECK(point.factor == Approx(kTrueFactor).epsilon(1e-12));
  // A factor beyond the platform's range is clamped.
  std::vector<KindSample> slow = {{1 * MiB, 1.0, 1e-3, 1e-3}, {2 * MiB, 2.0, 2e-3, 2e-3}};
  const std::vector<KindSizeFactor> clamped = fit_kind_size_factors(slow, kShare);
  REQUIRE(clamped.size() == 2);
  CHECK(clamped[0].factor == kMaxKindSizeFactor);
}

TEST_CASE("kind size factors: start-up-bound sizes get the step overhead that prices them as measured") {
  // MPICH's allgather at 4 ranks, 1 Gbit/s (calibration of 2026-11-29): 1-16 KiB took
  // 1.137, 1.152, 1.140, 1.131, 1.138 ms, priced 0.381, 0.528, 0.526, 0.537, 0.647 ms over
  // its 2 recursive-doubling steps, transfer parts well under half. Overheads (measured −
  // priced) / 2: 378.0, 312.0, 307.0, 297.0, 245.5 µs; the inner three take the median of
  // their neighbours': 312.0, 307.0, 297.0 µs; the ends keep theirs.
  constexpr double kShare = 0.5;
  const std::vector<KindSample> samples = {
      {.bytes = 1 * KiB, .measured_s = 1.137e-3, .priced_s = 0.381e-3, .transfer_s = 1e-5, .steps = 2},
      {.bytes = 2 * KiB, .measured_s = 1.152e-3, .priced_s = 0.528e-3, .transfer_s = 2e-5, .steps = 2},
      {.bytes = 4 * KiB, .measured_s = 1.140e-3, .priced_s = 0.526e-3, .transfer_s = 4e-5, .steps = 2},
      {.bytes = 8 * KiB, .measured_s = 1.131e-3, .priced_s = 0.537e-3, .transfer_s = 8e-5, .steps = 2},
      {.bytes = 16 * KiB, .measured_s = 1.138e-3, .priced_s = 0.647e-3, .transfer_s = 16e-5, .steps = 2}};
  const std::vector<KindSizeFactor> points = fit_kind_size_factors(samples, kShare);
  REQUIRE(points.size() == 5);
  const double expected_s[] = {378.0e-6, 312.0e-6, 307.0e-6, 297.0e-6, 245.5e-6};
  for (std::size_t i = 0; i < points.size(); ++i) {
    CHECK(points[i].factor == 1.0);
    CHECK(points[i].step_overhead_s == Approx(expected_s[i]).epsilon(1e-9));
  }
  // A size its link fit reproduces but for rounding gets none.
  std::vector<KindSample> exact = samples;
  exact[0].measured_s = exact[0].priced_s + 1e-21;
  CHECK(fit_kind_size_factors(exact, kShare)[0].step_overhead_s == 0.0);
  // A kind its link fit prices slow everywhere: no overhead below 0, so no points at all.
  std::vector<KindSample> fast = samples;
  for (KindSample& s : fast) s.measured_s = 0.9 * s.priced_s;
  CHECK(fit_kind_size_factors(fast, kShare).empty());
  // One transfer-bound size above them is no run: it keeps factor 1 and no overhead.
  std::vector<KindSample> one = samples;
  one.push_back({.bytes = 1 * MiB, .measured_s = 20e-3, .priced_s = 10e-3, .transfer_s = 9e-3, .steps = 2});
  const std::vector<KindSizeFactor> with_one = fit_kind_size_factors(one, kShare);
  REQUIRE(with_one.size() == 6);
  CHECK(with_one.back().factor == 1.0);
  CHECK(with_one.back().step_overhead_s == 0.0);
  CHECK(fit_kind_size_factors({one.back()}, kShare).empty());
}
