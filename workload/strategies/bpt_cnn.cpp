#include "workload/strategies/bpt_cnn.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar::bpt {

namespace {

/** floor(x), except that x within 1e-9 (relative) of an integer is that integer: Eq. 2 and 4
 *  divide doubles, and 749.9999999999 meant as 750 must not lose a sample. */
double forgiving_floor(double x) {
  const double nearest = std::round(x);
  if (std::abs(x - nearest) <= 1e-9 * std::max(1.0, std::abs(x))) return nearest;
  return std::floor(x);
}

/** Each value a finite number > 0, else InputError at /workers/J/FIELD. */
void check_positive(const std::vector<double>& values, const char* field, const char* what) {
  for (std::size_t j = 0; j < values.size(); ++j)
    if (!(values[j] > 0) || !std::isfinite(values[j]))
      throw InputError(kInputOrigin, fmt::format("/workers/{}/{}", j, field), fmt::format("{}", values[j]),
                       fmt::format("a worker's {} must be a finite number > 0", what));
}

void check_workers(std::int64_t samples, int workers) {
  if (workers < 1)
    throw InputError(kInputOrigin, "/workers", std::to_string(workers), "there must be at least one worker");
  if (samples < workers)
    throw InputError(kInputOrigin, "/workers", std::to_string(workers),
                     fmt::format("more workers than training samples (N = {}): every worker needs one", samples));
}

}  // namespace

void check_partition(std::int64_t samples, int increments, int workers) {
  check_workers(samples, workers);
  if (increments < 1)
    throw InputError(kInputOrigin, "/increments", std::to_string(increments),
                     "the data must be allocated in at least one increment (A >= 1)");
  if (increments > samples)
    throw InputError(kInputOrigin, "/increments", std::to_string(increments),
                     fmt::format("A beyond the data: more increments than training samples (N = {})", samples));
}

std::vector<std::int64_t> idpa_first_increment(std::int64_t samples, int increments, const std::vector<double>& speeds) {
  check_partition(samples, increments, int(speeds.size()));
  check_positive(speeds, "speed", "nominal speed");
  const std::int64_t per_increment = samples / increments;  // floor(N/A)
  const double total_speed = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  std::vector<std::int64_t> counts(speeds.size(), 0);
  std::int64_t given = 0;
  for (std::size_t j = 0; j + 1 < speeds.size(); ++j) {
    // Multiplied before dividing: with integral speeds 3 * 250 / 10 is exactly 75.
    counts[j] = std::int64_t(forgiving_floor(speeds[j] * double(per_increment) / total_speed));
    given += counts[j];
  }
  CNNPAR_ASSERT(given <= per_increment, "Eq. 2's shares of the first m-1 workers exceed floor(N/A)");
  counts.back() = per_increment - given;
  return counts;
}

std::vector<std::int64_t> idpa_next_increment(std::int64_t samples, int increments, int increment,
                                              const std::vector<double>& per_sample_s,
                                              const std::vector<std::int64_t>& allocated) {
  const int m = int(per_sample_s.size());
  check_partition(samples, increments, m);
  check_positive(per_sample_s, "per_sample_s", "time per sample (seconds)");
  CNNPAR_ASSERT(increment >= 2 && increment <= increments, "Eq. 3-5 apply to increments 2..A");
  CNNPAR_ASSERT(allocated.size() == per_sample_s.size(), "one previous allocation per worker");
  const std::int64_t per_increment = samples / increments;  // floor(N/A)
  std::int64_t held = 0;
  for (std::int64_t n : allocated) {
    CNNPAR_ASSERT(n >= 0, "a worker holds a negative number of samples");
    held += n;
  }
  CNNPAR_ASSERT(held == per_increment * (increment - 1), "the workers must hold (a-1)*floor(N/A) samples before increment a");

  const double mean_s = std::accumulate(per_sample_s.begin(), per_sample_s.end(), 0.0) / m;  // t̄
  const double target_s = double(per_increment) * increment * mean_s / m;                   // Eq. 3: T_a
  // Eq. 4-5 for the first m-1 workers: the request floor(n'_j) - allocated[j], clamped to
  // [0, floor(N/A)] (no sample taken back; more than one increment cannot be given anyway).
  std::vector<std::int64_t> counts(per_sample_s.size(), 0);
  std::int64_t requested = 0;
  for (std::size_t j = 0; j + 1 < per_sample_s.size(); ++j) {
    const double wanted = forgiving_floor(target_s / per_sample_s[j]) - double(allocated[j]);  // Eq. 4, 5
    counts[j] = wanted <= 0 ? 0 : wanted >= double(per_increment) ? per_increment : std::int64_t(wanted);
    requested += counts[j];
  }
  if (requested > per_increment) {
    // Over-subscribed (Eq. 3's arithmetic mean over-allocates): scale the requests to floor(N/A).
    // Exact in 128 bits: each request <= floor(N/A), so the product is below N².
    std::int64_t given = 0;
    for (std::size_t j = 0; j + 1 < per_sample_s.size(); ++j) {
      __extension__ using Wide = unsigned __int128;
      counts[j] = std::int64_t(Wide(counts[j]) * Wide(per_increment) / Wide(requested));
      given += counts[j];
    }
    requested = given;
  }
  counts.back() = per_increment - requested;  // Eq. 5, j = m
  CNNPAR_ASSERT(counts.back() >= 0, "the last worker's rest of Eq. 5 is negative");
  return counts;
}

std::vector<std::vector<std::int64_t>> idpa_allocation(std::int64_t samples, int increments,
                                                       const std::vector<double>& speeds,
                                                       const std::vector<double>& per_sample_s) {
  check_partition(samples, increments, int(speeds.size()));
  check_positive(speeds, "speed", "nominal speed");
  CNNPAR_ASSERT(speeds.size() == per_sample_s.size(), "one speed and one time per sample per worker");
  check_positive(per_sample_s, "per_sample_s", "time per sample (seconds)");  // checked even when A = 1
  std::vector<std::vector<std::int64_t>> held;
  held.push_back(idpa_first_increment(samples, increments, speeds));
  for (int a = 2; a <= increments; ++a) {
    const std::vector<std::int64_t> added = idpa_next_increment(samples, increments, a, per_sample_s, held.back());
    std::vector<std::int64_t> now = held.back();
    for (std::size_t j = 0; j < now.size(); ++j) now[j] += added[j];
    held.push_back(std::move(now));
  }
  return held;
}

std::vector<std::int64_t> udpa_allocation(std::int64_t samples, int workers) {
  check_workers(samples, workers);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(workers), samples / workers);
  for (std::int64_t j = 0; j < samples % workers; ++j) ++counts[std::size_t(j)];
  return counts;
}

int idpa_total_iterations(int iterations, int increments) {
  if (iterations < 1)
    throw InputError(kInputOrigin, "/iterations", std::to_string(iterations), "training needs at least one iteration (K >= 1)");
  if (increments < 1)
    throw InputError(kInputOrigin, "/increments", std::to_string(increments),
                     "the data must be allocated in at least one increment (A >= 1)");
  if (increments >= iterations)
    throw InputError(kInputOrigin, "/increments", std::to_string(increments),
                     fmt::format("the paper's IDPA needs fewer increments than iterations (A < K = {})", iterations));
  // ΔK = floor(K - (A+1)/2) = K - ceil((A+1)/2) = K - (A+2)/2 in integer division.
  const int remaining = iterations - (increments + 2) / 2;
  return increments + remaining;
}

std::vector<double> sgwu_weights(const std::vector<double>& accuracies) {
  CNNPAR_ASSERT(!accuracies.empty(), "Eq. 7 needs at least one worker's accuracy");
  double total = 0;
  for (double q : accuracies) {
    CNNPAR_ASSERT(q >= 0 && q <= 1, fmt::format("an accuracy is a fraction in [0, 1], got {}", q));
    total += q;
  }
  std::vector<double> weights(accuracies.size(), 1.0 / double(accuracies.size()));
  if (total == 0) return weights;  // nothing tells the workers apart
  for (std::size_t j = 0; j < accuracies.size(); ++j) weights[j] = accuracies[j] / total;
  return weights;
}

double sgwu_waiting_s(const std::vector<std::vector<double>>& iteration_s) {
  double waiting_s = 0;
  for (const std::vector<double>& row : iteration_s) {
    CNNPAR_ASSERT(!row.empty(), "an iteration without workers");
    double slowest_s = 0;
    for (double t : row) {
      CNNPAR_ASSERT(t >= 0 && std::isfinite(t), fmt::format("an iteration time must be finite and >= 0, got {}", t));
      slowest_s = std::max(slowest_s, t);
    }
    for (double t : row) waiting_s += slowest_s - t;
  }
  return waiting_s;
}

double agwu_attenuation(int base, int latest, const std::vector<int>& other_bases) {
  CNNPAR_ASSERT(base >= 0 && base <= latest, "a pushed version must lie in [0, latest]");
  if (other_bases.empty()) return 1.0;  // one worker: nothing to weigh it against
  // latest == 0: every version is 0 and k/(i-1) is 0/0, taken as 1.
  const auto exponent = [latest](int version) { return latest == 0 ? 1.0 : double(version) / double(latest); };
  double others = 0;
  for (int k : other_bases) {
    CNNPAR_ASSERT(k >= 0 && k <= latest, "another worker's version must lie in [0, latest]");
    others += std::exp(exponent(k));
  }
  return std::exp(exponent(base)) / others;
}

void agwu_merge(std::span<float> global, std::span<const float> increment, double gamma, double accuracy) {
  CNNPAR_ASSERT(global.size() == increment.size(), "the increment must match the global weights' size");
  CNNPAR_ASSERT(gamma >= 0 && std::isfinite(gamma), "gamma must be finite and >= 0");
  CNNPAR_ASSERT(accuracy >= 0 && accuracy <= 1, "an accuracy is a fraction in [0, 1]");
  const double scale = gamma * accuracy;
  for (std::size_t e = 0; e < global.size(); ++e) global[e] = float(double(global[e]) + scale * double(increment[e]));
}

void sgwu_merge(std::span<float> global, const std::vector<std::span<const float>>& increments,
                const std::vector<double>& weights) {
  CNNPAR_ASSERT(!increments.empty() && increments.size() == weights.size(), "one weight per increment");
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  CNNPAR_ASSERT(std::abs(total - 1.0) <= 1e-6, "Eq. 7's weights must sum to 1 to merge increments");
  for (const std::span<const float>& increment : increments)
    CNNPAR_ASSERT(increment.size() == global.size(), "every increment must match the global weights' size");
  for (std::size_t e = 0; e < global.size(); ++e) {
    double sum = global[e];
    for (std::size_t j = 0; j < increments.size(); ++j) sum += weights[j] * double(increments[j][e]);
    global[e] = float(sum);
  }
}

double ps_volume_bytes(double weight_bytes, int workers, int iterations) {
  if (workers < 1)
    throw InputError(kInputOrigin, "/workers", std::to_string(workers), "there must be at least one worker");
  if (iterations < 0)
    throw InputError(kInputOrigin, "/iterations", std::to_string(iterations), "iterations must be >= 0");
  CNNPAR_ASSERT(weight_bytes >= 0 && std::isfinite(weight_bytes), "the weight set's bytes must be finite and >= 0");
  return 2.0 * weight_bytes * double(workers) * double(iterations);
}

}  // namespace cnnpar::bpt
