#include "real/calibration_fit.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "base/statistics.hpp"

namespace cnnpar::real {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) throw std::invalid_argument("median of no samples");
  return median(std::move(v));
}

constexpr double kScaledMad = 1.4826;  // MAD of a normal sample · this = its standard deviation
constexpr double kMinFactor = 1e-3, kMaxFactor = 1e3;  // the platform's range (model/platform.cpp)

/** The points with the smallest (or largest) x: those within `limit`, else the half of the
 *  distinct x values nearest that end (at least two). */
std::vector<std::pair<double, double>> end_points(std::vector<std::pair<double, double>> points, bool small,
                                                  double limit) {
  std::sort(points.begin(), points.end());
  if (!small) std::reverse(points.begin(), points.end());
  std::vector<double> distinct;
  for (const auto& p : points)
    if (distinct.empty() || p.first != distinct.back()) distinct.push_back(p.first);
  std::size_t within = 0;
  for (double x : distinct)
    if (small ? x <= limit : x >= limit) ++within;
  const std::size_t take = within >= 2 ? within : std::max<std::size_t>(2, (distinct.size() + 1) / 2);
  const double last = distinct[std::min(take, distinct.size()) - 1];
  std::vector<std::pair<double, double>> out;
  for (const auto& p : points)
    if (small ? p.first <= last : p.first >= last) out.push_back(p);
  return out;
}

}  // namespace

RobustSummary robust_summary(std::vector<double> samples) {
  RobustSummary out;
  out.count = int(samples.size());
  out.median = median_of(samples);
  std::vector<double> deviations;
  for (double s : samples) deviations.push_back(std::abs(s - out.median));
  const double spread = kScaledMad * median_of(deviations);
  if (spread > 0)
    for (double d : deviations)
      if (d > kOutlierMads * spread) ++out.outliers;
  return out;
}

Line theil_sen(const std::vector<std::pair<double, double>>& points) {
  std::vector<double> slopes;
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = i + 1; j < points.size(); ++j)
      if (points[j].first != points[i].first)
        slopes.push_back((points[j].second - points[i].second) / (points[j].first - points[i].first));
  if (slopes.empty()) throw std::invalid_argument("a line needs two distinct sizes");
  Line line;
  line.slope = median_of(slopes);
  std::vector<double> intercepts;
  for (const auto& [x, y] : points) intercepts.push_back(y - line.slope * x);
  line.intercept = median_of(intercepts);
  return line;
}

InputTimeFit fit_input_time(const std::vector<std::pair<double, double>>& batch_outside_s) {
  if (batch_outside_s.empty()) throw std::invalid_argument("no iteration was timed");
  std::vector<double> times;
  for (const auto& p : batch_outside_s) times.push_back(p.second);
  std::set<double> batches;
  for (const auto& p : batch_outside_s) batches.insert(p.first);
  if (batches.size() < 2) return InputTimeFit{std::max(0.0, median_of(times)), 0};
  const Line line = theil_sen(batch_outside_s);
  if (line.slope <= 0) return InputTimeFit{std::max(0.0, median_of(times)), 0};
  return InputTimeFit{std::max(0.0, line.intercept), line.slope};
}

LinkFit fit_link(const std::vector<std::pair<double, double>>& samples) {
  std::vector<std::pair<double, double>> valid;
  for (const auto& p : samples)
    if (p.first >= 0 && p.second > 0 && std::isfinite(p.second)) valid.push_back(p);
  const Line large = theil_sen(end_points(valid, false, kLargeMessageBytes));
  if (!(large.slope > 0)) throw std::invalid_argument("link fit: large messages took no longer than smaller ones");
  const Line small = theil_sen(end_points(valid, true, kSmallMessageBytes));
  // A falling small-size line is noise: the latency is then the typical small-message time.
  double latency_s = small.intercept;
  if (small.slope < 0) {
    std::vector<double> times;
    for (const auto& p : end_points(valid, true, kSmallMessageBytes)) times.push_back(p.second);
    latency_s = median_of(times);
  }
  return LinkFit{std::max(0.0, latency_s), 1.0 / large.slope};
}

std::vector<KindSizeFactor> fit_kind_size_factors(std::vector<KindSample> samples, double min_transfer_share) {
  std::sort(samples.begin(), samples.end(), [](const KindSample& a, const KindSample& b) { return a.bytes < b.bytes; });
  std::erase_if(samples, [](const KindSample& s) {
    return !(s.bytes > 0 && s.measured_s > 0 && std::isfinite(s.measured_s) && s.priced_s > 0 && s.steps > 0);
  });
  const auto qualifies = [&](const KindSample& s) {
    return s.transfer_s > 0 && s.transfer_s >= min_transfer_share * s.priced_s;
  };
  std::size_t first = samples.size();  // the qualifying sizes are [first, end), those with step overheads below
  while (first > 0 && qualifies(samples[first - 1])) --first;
  const bool run = samples.size() - first >= 2;
  // One size off its neighbours is noise or a knee the link model already prices (a 16 KiB
  // allreduce at 2.8 between 1.0 and 0.99 at 100 Mbit/s): the median of each value and its
  // two neighbours; the ends keep theirs.
  const auto smoothed = [](const std::vector<double>& raw, std::size_t from) {
    std::vector<double> values = raw;
    for (std::size_t i = std::max<std::size_t>(from, 1); i + 1 < raw.size(); ++i)
      values[i] = median({raw[i - 1], raw[i], raw[i + 1]});
    return values;
  };
  std::vector<double> overheads;
  for (std::size_t i = 0; i < first; ++i) {
    const double overhead_s = (samples[i].measured_s - samples[i].priced_s) / samples[i].steps;
    overheads.push_back(overhead_s < kNegligibleStepOverhead_s ? 0.0 : overhead_s);
  }
  overheads = smoothed(overheads, 0);
  // The factors with the factor 1 of the sizes below the run, the first one's left neighbour:
  // a run's first size is smoothed toward it.
  std::vector<double> factors(first, 1.0);
  for (std::size_t i = first; i < samples.size(); ++i) {
    const KindSample& s = samples[i];
    const double factor = run ? 1.0 + (s.measured_s - s.priced_s) / s.transfer_s : 1.0;
    factors.push_back(std::clamp(factor, kMinKindSizeFactor, kMaxKindSizeFactor));
  }
  factors = smoothed(factors, first);
  const bool slower = std::any_of(overheads.begin(), overheads.end(), [](double o) { return o > 0; });
  if (!run && !slower) return {};
  std::vector<KindSizeFactor> points;
  for (std::size_t i = 0; i < samples.size(); ++i)
    points.push_back(KindSizeFactor{.bytes = samples[i].bytes,
                                    .factor = factors[i],
                                    .step_overhead_s = i < first ? overheads[i] : 0.0});
  return points;
}

int chain_calls(double predicted_s, int min_calls, double target_s, int max_calls) {
  const int most = std::max(min_calls, max_calls);
  if (!(predicted_s > 0) || !std::isfinite(predicted_s)) return min_calls;
  const double wanted = std::ceil(target_s / predicted_s);
  return wanted >= most ? most : std::max(min_calls, int(wanted));
}

std::vector<MessageFactor> fit_message_factors(const std::vector<StepSample>& samples, double alpha_s,
                                               double beta_Bps, double tolerance) {
  if (samples.empty()) throw std::invalid_argument("message factors need samples");
  if (!(alpha_s >= 0) || !(beta_Bps > 0)) throw std::invalid_argument("message factors need alpha >= 0, beta > 0");
  std::map<double, std::vector<double>> by_size;
  for (const StepSample& s : samples)
    if (s.step_bytes > 0 && s.step_s > 0 && std::isfinite(s.step_s)) by_size[s.step_bytes].push_back(s.step_s);
  if (by_size.empty()) throw std::invalid_argument("message factors need positive samples");
  std::vector<double> size, time;
  for (auto& [bytes, seconds] : by_size) {
    size.push_back(bytes);
    time.push_back(median_of(seconds));
  }
  // A line a + b·n as alpha·lf + n/(beta·bf) needs a >= kMinFactor·alpha (alpha > 0) and
  // b >= 1/(kMaxFactor·beta). A line that cannot (a jump between two sizes gives a chord with a
  // negative start-up) is replaced by the representable one through its left point, whose
  // range it is: the right point starts the next piece.
  const double min_a = kMinFactor * alpha_s, min_b = 1.0 / (kMaxFactor * beta_Bps);
  const auto representable = [&](Line line, double left_size, double left_time) {
    line.slope = std::max(line.slope, min_b);
    line.intercept = left_time - line.slope * left_size;
    if (alpha_s > 0 && line.intercept < min_a) {
      line.intercept = min_a;
      line.slope = std::max((left_time - min_a) / left_size, min_b);
    }
    return line;
  };
  const auto factors = [&](double from, const Line& line) {
    MessageFactor f;
    f.from_bytes = from;
    if (alpha_s > 0) f.latency_factor = std::clamp(line.intercept / alpha_s, kMinFactor, kMaxFactor);
    f.bandwidth_factor = std::clamp(1.0 / (line.slope * beta_Bps), kMinFactor, kMaxFactor);
    return f;
  };
  const auto within = [&](const Line& line, std::size_t m) {
    return std::abs(line.intercept + line.slope * size[m] - time[m]) <= tolerance * time[m];
  };
  std::vector<MessageFactor> pieces;
  if (size.size() == 1) {  // one size: the latency keeps its factor of 1 where it can
    const double a = std::min(alpha_s, time[0]);
    pieces.push_back(factors(0, representable(Line{a, (time[0] - a) / size[0]}, size[0], time[0])));
    return pieces;
  }
  const auto chord = [&](std::size_t i, std::size_t j) {
    const double b = (time[j] - time[i]) / (size[j] - size[i]);
    return representable(Line{time[i] - b * size[i], b}, size[i], time[i]);
  };
  std::size_t i = 0;
  const std::size_t last = size.size() - 1;
  Line line;
  while (i < last) {
    std::size_t j = i + 1;
    while (j < last) {  // extend the chord to j+1 while every point it then spans stays within tolerance
      const Line longer = chord(i, j + 1);
      bool fits = true;
      for (std::size_t m = i + 1; m <= j && fits; ++m) fits = within(longer, m);
      if (!fits) break;
      ++j;
    }
    line = chord(i, j);
    pieces.push_back(factors(pieces.empty() ? 0.0 : size[i], line));
    i = j;
  }
  // The last piece reaches beyond the largest size; it must also hold the largest point.
  if (!within(line, last)) pieces.push_back(factors(size[last], representable(line, size[last], time[last])));
  return pieces;
}

namespace {

/** The bandwidth with which overhead + bytes / bandwidth adds up to the measured total of the
 *  (bytes, seconds) samples; none when no bytes or no time is left beyond the overhead. */
std::optional<double> total_matching_bandwidth_Bps(const std::vector<std::pair<double, double>>& samples,
                                                   double overhead_s) {
  double bytes = 0, memory_s = 0;
  for (const auto& [x, y] : samples) {
    bytes += x;
    memory_s += y - overhead_s;
  }
  if (!(bytes > 0 && memory_s > 0)) return std::nullopt;
  return bytes / memory_s;
}

}  // namespace

MemoryFit fit_memory(const std::vector<std::pair<double, double>>& samples) {
  // Overhead: the Theil–Sen intercept of the small ops, where it is most of the time and
  // one slow repeat cannot move it. Bandwidth: what makes the modelled total equal the
  // measured total over every sample.
  std::vector<std::pair<double, double>> valid;
  for (const auto& p : samples)
    if (p.first >= 0 && p.second >= 0 && std::isfinite(p.second)) valid.push_back(p);
  const Line small = theil_sen(end_points(valid, true, kSmallOpBytes));
  MemoryFit fit;
  fit.overhead_s = std::max(0.0, small.intercept);
  std::optional<double> bandwidth_Bps = total_matching_bandwidth_Bps(valid, fit.overhead_s);
  if (!bandwidth_Bps) {  // all overhead: none
    fit.overhead_s = 0;
    bandwidth_Bps = total_matching_bandwidth_Bps(valid, 0);
  }
  if (!bandwidth_Bps) throw std::invalid_argument("memory fit: no bytes or no time");
  fit.bandwidth_Bps = *bandwidth_Bps;
  std::vector<double> residuals;
  for (const auto& [x, y] : valid) residuals.push_back(y - fit.overhead_s - x / fit.bandwidth_Bps);
  fit.outliers = robust_summary(residuals).outliers;
  return fit;
}

RooflineFit fit_roofline(const std::vector<KernelSample>& samples, double peak_flops, int rounds) {
  RooflineFit fit;
  const auto bandwidth_of = [&](KernelClass kernel) {
    const auto found = fit.kernel_bandwidth_Bps.find(kernel);
    return found == fit.kernel_bandwidth_Bps.end() ? fit.memory.bandwidth_Bps : found->second;
  };
  // A class without a fitted efficiency runs at efficiency 1: its compute term is then far
  // below its memory term (a few FLOPs per byte against a peak of 1e11 FLOP/s).
  const auto modelled_s = [&](const KernelSample& k, double efficiency) {
    return std::max(k.flops / (peak_flops * efficiency), k.bytes / bandwidth_of(k.kernel)) + fit.memory.overhead_s;
  };
  const auto efficiency_of = [&](KernelClass kernel) {
    const auto found = fit.efficiency.find(kernel);
    return found == fit.efficiency.end() ? 1.0 : found->second;
  };
  std::vector<const KernelSample*> memory_bound;
  for (const KernelSample& k : samples) memory_bound.push_back(&k);
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::pair<double, double>> points;
    std::map<KernelClass, std::vector<std::pair<double, double>>> class_points;
    for (const KernelSample* k : memory_bound) {
      points.emplace_back(k->bytes, k->seconds);
      class_points[k->kernel].emplace_back(k->bytes, k->seconds);
    }
    fit.memory = fit_memory(points);
    // Each class's own bandwidth over its memory-bound ops, from the common overhead.
    fit.kernel_bandwidth_Bps.clear();
    for (const auto& [kernel, class_samples] : class_points) {
      if (int(class_samples.size()) < kMinClassBandwidthOps) continue;
      if (const auto bandwidth_Bps = total_matching_bandwidth_Bps(class_samples, fit.memory.overhead_s))
        fit.kernel_bandwidth_Bps[kernel] = *bandwidth_Bps;
    }
    std::map<KernelClass, std::vector<const KernelSample*>> by_class;
    for (const KernelSample& k : samples)
      if (k.flops > 0) by_class[k.kernel].push_back(&k);
    fit.efficiency.clear();
    for (const auto& [kernel, class_ops] : by_class) {
      const std::vector<const KernelSample*>& ops = class_ops;  // a lambda cannot capture a structured binding (clang 14)
      double measured = 0;
      for (const KernelSample* k : ops) measured += k->seconds;
      const auto total = [&](double efficiency) {
        double sum = 0;
        for (const KernelSample* k : ops) sum += modelled_s(*k, efficiency);
        return sum;
      };
      // Memory explains the class (its own bandwidth makes the totals equal, up to rounding).
      if (total(1.0) >= measured * (1 - 1e-9)) continue;
      // total(efficiency) falls as efficiency rises: total(1e-6) > measured > total(1).
      double lo = std::log(1e-6), hi = 0;
      for (int step = 0; step < 60; ++step) {
        const double mid = 0.5 * (lo + hi);
        (total(std::exp(mid)) > measured ? lo : hi) = mid;
      }
      fit.efficiency[kernel] = std::exp(0.5 * (lo + hi));
    }
    std::vector<const KernelSample*> next;
    for (const KernelSample& k : samples)
      if (k.flops / (peak_flops * efficiency_of(k.kernel)) <= k.bytes / bandwidth_of(k.kernel)) next.push_back(&k);
    if (next.size() < 2) break;
    memory_bound = std::move(next);
  }
  return fit;
}

double extrapolated_transfer_s(const std::vector<std::pair<double, double>>& measured, double bytes) {
  if (measured.empty()) throw std::invalid_argument("no measured sizes to extrapolate from");
  std::map<double, double> by_size;  // the last time given for a size wins
  for (const auto& [size, seconds] : measured) {
    if (!(size > 0)) throw std::invalid_argument("a measured size must be positive");
    by_size[size] = seconds;
  }
  const auto largest = std::prev(by_size.end());
  if (by_size.size() == 1) return largest->second * bytes / largest->first;
  const auto before = std::prev(largest);
  const double slope = (largest->second - before->second) / (largest->first - before->first);
  return std::max(largest->second, largest->second + slope * (bytes - largest->first));
}

double compute_slowdown(const std::vector<double>& alone_s, const std::vector<double>& busy_s) {
  if (alone_s.empty() || alone_s.size() != busy_s.size())
    throw std::invalid_argument("compute slowdown needs the same ops timed alone and busy");
  double alone = 0, busy = 0;
  for (std::size_t i = 0; i < alone_s.size(); ++i) {
    alone += alone_s[i];
    busy += busy_s[i];
  }
  if (!(alone > 0)) throw std::invalid_argument("compute slowdown: the ops took no time alone");
  return busy / alone - 1;
}

double busy_bandwidth_fraction(double alone_s, double busy_s, double computing_s) {
  if (!(computing_s > 0) || computing_s > busy_s)
    throw std::invalid_argument("busy fraction: the compute must overlap the collective for part of its time");
  return (alone_s - busy_s + computing_s) / computing_s;
}

}  // namespace cnnpar::real
