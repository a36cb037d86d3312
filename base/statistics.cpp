#include "base/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cnnpar {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double h = double(values.size() - 1) * std::clamp(q, 0.0, 1.0);
  const std::size_t below = std::size_t(std::floor(h));
  const std::size_t above = std::min(below + 1, values.size() - 1);
  return values[below] + (h - double(below)) * (values[above] - values[below]);
}

double median(std::vector<double> values) { return quantile(std::move(values), 0.5); }

}  // namespace cnnpar
