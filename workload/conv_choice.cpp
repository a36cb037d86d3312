#include "workload/conv_choice.hpp"

#include <algorithm>
#include <vector>

#include "system/op_time.hpp"

namespace cnnpar {

bool prices_direct_convolutions(const Platform& platform) { return !platform.measured_conv_flops.empty(); }

ConvPaths conv_paths_priced_faster(const Network& network, const Platform& platform, const StrategyOptions& options) {
  if (!prices_direct_convolutions(platform)) return {};
  StrategyOptions im2col = options;
  im2col.conv = {};
  return conv_paths_priced_faster(network, platform, build_schedule(network, platform, im2col));
}

ConvPaths conv_paths_priced_faster(const Network& network, const Platform& platform, const Schedule& as_im2col) {
  if (!prices_direct_convolutions(platform)) return {};
  Schedule as_direct = as_im2col;
  use_direct_convolutions(as_direct, network, ConvPaths{.mode = ConvPaths::Mode::direct});
  // Seconds per layer over every rank's ops of the layer, each path's own ops.
  const auto layer_seconds = [&](const Schedule& schedule) {
    std::vector<double> seconds(network.layers.size(), 0.0);
    for (int rank = 0; rank < schedule.ranks(); ++rank)
      for (const Op& op : schedule.programs[std::size_t(rank)].ops)
        if (op.kind == OpKind::compute && op.conv_layer && op.layer >= 0)
          seconds[std::size_t(op.layer)] += op_time_s(platform, op, rank);
    return seconds;
  };
  const std::vector<double> im2col_s = layer_seconds(as_im2col);
  const std::vector<double> direct_s = layer_seconds(as_direct);
  ConvPaths chosen{.mode = ConvPaths::Mode::layers};
  for (std::size_t l = 0; l < network.layers.size(); ++l)
    if (direct_s[l] > 0 && direct_s[l] < im2col_s[l]) chosen.direct_layers.push_back(network.layers[l].spec.name);
  if (chosen.direct_layers.empty()) return {};
  std::sort(chosen.direct_layers.begin(), chosen.direct_layers.end());
  return chosen;
}

}  // namespace cnnpar
