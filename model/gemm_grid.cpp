#include "model/gemm_grid.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

namespace cnnpar {

namespace {

std::int64_t parse_dimension(std::string_view text, const std::string& key) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1)
    throw std::invalid_argument(fmt::format("\"{}\" is not \"gemm MxNxK[ phase]\" with dimensions >= 1", key));
  return value;
}

}  // namespace

int GemmGrid::group_of(Phase phase) {
  switch (phase) {
    case Phase::forward: return 0;
    case Phase::backward_data: return 1;
    case Phase::backward_weight: return 2;
    case Phase::update: break;
  }
  return 3;
}

GemmGridPoint parse_gemm_key(const std::string& key, double rate_flops) {
  const std::string_view text(key);
  const std::string_view prefix = "gemm ";
  if (text.substr(0, prefix.size()) != prefix)
    throw std::invalid_argument(fmt::format("\"{}\" is not \"gemm MxNxK[ phase]\"", key));
  std::string_view rest = text.substr(prefix.size());
  GemmGridPoint point;
  point.rate_flops = rate_flops;
  if (const auto space = rest.find(' '); space != std::string_view::npos) {
    const std::string phase_text(rest.substr(space + 1));
    Phase phase{};
    try {
      phase = phase_from_string(phase_text);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(fmt::format("\"{}\": the phase must be forward, backward_data or backward_weight", key));
    }
    if (phase == Phase::update)
      throw std::invalid_argument(fmt::format("\"{}\": the phase must be forward, backward_data or backward_weight", key));
    point.phase = phase;
    rest = rest.substr(0, space);
  }
  const auto x1 = rest.find('x');
  const auto x2 = x1 == std::string_view::npos ? x1 : rest.find('x', x1 + 1);
  if (x2 == std::string_view::npos) throw std::invalid_argument(fmt::format("\"{}\" is not \"gemm MxNxK[ phase]\"", key));
  point.shape.m = parse_dimension(rest.substr(0, x1), key);
  point.shape.n = parse_dimension(rest.substr(x1 + 1, x2 - x1 - 1), key);
  point.shape.k = parse_dimension(rest.substr(x2 + 1), key);
  return point;
}

std::string gemm_key(const GemmShape& shape, std::optional<Phase> phase) {
  return phase ? shape.to_string() + " " + to_string(*phase) : shape.to_string();
}

GemmGrid::GemmGrid(const std::map<std::string, double>& rates_flops) {
  for (const auto& [key, rate] : rates_flops) {
    const GemmGridPoint point = parse_gemm_key(key, rate);
    if (!(rate > 0) || !std::isfinite(rate))
      throw std::invalid_argument(fmt::format("\"{}\": the rate must be positive and finite", key));
    const int group = point.phase ? group_of(*point.phase) : 3;
    groups_[std::size_t(group)].push_back(
        Point{{std::log(double(point.shape.m)), std::log(double(point.shape.n)), std::log(double(point.shape.k))}, rate});
  }
}

}  // namespace cnnpar
