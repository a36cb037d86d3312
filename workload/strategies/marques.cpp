#include "workload/strategies/marques.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "system/op_time.hpp"
#include "workload/emit.hpp"

namespace cnnpar {

std::vector<double> probe_shares(const std::vector<double>& probe_times_s, const std::string& origin) {
  if (probe_times_s.empty()) throw InputError(origin, "/shares", "[]", "no probe times");
  for (std::size_t i = 0; i < probe_times_s.size(); ++i)
    if (!(probe_times_s[i] > 0) || !std::isfinite(probe_times_s[i]))
      throw InputError(origin, fmt::format("/shares/{}", i), fmt::format("{}", probe_times_s[i]),
                       "a probe time must be a positive number of seconds");
  const double slowest_s = *std::max_element(probe_times_s.begin(), probe_times_s.end());
  std::vector<double> shares;
  for (double t : probe_times_s) shares.push_back(slowest_s / t);
  const double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
  for (double& w : shares) w /= sum;
  return shares;
}

std::vector<std::int64_t> apportion_kernels(std::int64_t kernels, const std::vector<double>& shares) {
  const int P = int(shares.size());
  CNNPAR_ASSERT(P > 0 && kernels >= 0, "apportion over no ranks");
  std::vector<std::int64_t> counts(static_cast<std::size_t>(P), 0);
  std::vector<double> remainder(static_cast<std::size_t>(P), 0);
  std::int64_t given = 0;
  for (int i = 0; i < P; ++i) {
    const double exact = double(kernels) * shares[std::size_t(i)];
    counts[std::size_t(i)] = std::int64_t(std::floor(exact));
    remainder[std::size_t(i)] = exact - double(counts[std::size_t(i)]);
    given += counts[std::size_t(i)];
  }
  std::vector<int> order(static_cast<std::size_t>(P));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return remainder[std::size_t(a)] > remainder[std::size_t(b)]; });
  for (int i = 0; given < kernels; i = (i + 1) % P, ++given) ++counts[std::size_t(order[std::size_t(i)])];
  return counts;
}

void check_shares(const std::vector<double>& shares, const std::string& origin, const std::string& path) {
  if (shares.empty()) throw InputError(origin, path, "[]", "no shares");
  double sum = 0;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (!(shares[i] >= 0) || !std::isfinite(shares[i]))
      throw InputError(origin, fmt::format("{}/{}", path, i), fmt::format("{}", shares[i]),
                       "a share must be a number >= 0");
    sum += shares[i];
  }
  if (std::abs(sum - 1.0) > 1e-6) {
    throw InputError(origin, path, fmt::format("{}", fmt::join(shares, ",")),
                     fmt::format("the shares must sum to 1 (they sum to {})", sum));
  }
}

double upload_elements(const Layer& conv, std::int64_t batch) {
  CNNPAR_ASSERT(conv.spec.kind == LayerKind::conv, "Eq. 2 counts conv layers");
  const double in_maps = double(conv.in.h * conv.in.w * conv.in.c);
  const double out_maps = double(conv.out.h * conv.out.w * conv.out.c);
  const double kernels = double(conv.spec.kernel_h * conv.spec.kernel_w) * double(conv.out.c) * double(conv.in.c);
  return (in_maps + out_maps) * double(batch) + kernels;
}

double upload_elements(const Network& network, std::int64_t batch) {
  double total = 0;
  for (const Layer& layer : network.layers)
    if (layer.spec.kind == LayerKind::conv) total += upload_elements(layer, batch);
  return total;
}

double engine_probe_s(const Network& network, const Platform& platform, std::int64_t batch, int rank) {
  const strategies::LayerOps ops(network, batch, batch);
  double seconds = 0;
  for (std::size_t l = 0; l < network.layers.size(); ++l)
    if (network.layers[l].spec.kind == LayerKind::conv)
      for (const Op& op : ops.forward(int(l))) seconds += op_time_s(platform, op, rank);
  return seconds;
}

}  // namespace cnnpar
