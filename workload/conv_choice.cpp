#include "workload/conv_choice.hpp"

#include <algorithm>
#include <vector>

#include "system/op_time.hpp"

namespace cnnpar {

bool prices_direct_convolutions(const Platform& platform) {
  return !platform.measured_conv_flops.empty() || !platform.measured_winograd_flops.empty();
}

ConvPaths conv_paths_priced_faster(const Network& network, const Platform& platform, const StrategyOptions& options) {
  if (!prices_direct_convolutions(platform)) return {};
  StrategyOptions im2col = options;
  im2col.conv = {};
  return conv_paths_priced_faster(network, platform, build_schedule(network, platform, im2col));
}

ConvPaths conv_paths_priced_faster(const Network& network, const Platform& platform, const Schedule& as_im2col) {
  if (!prices_direct_convolutions(platform)) return {};
  // Seconds per layer over every rank's ops of the layer on `path`, each path's own ops.
  const auto layer_seconds = [&](ConvPaths::Mode path) {
    Schedule schedule = as_im2col;
    if (path != ConvPaths::Mode::im2col) use_direct_convolutions(schedule, network, ConvPaths{.mode = path});
    std::vector<double> seconds(network.layers.size(), 0.0);
    for (int rank = 0; rank < schedule.ranks(); ++rank)
      for (const Op& op : schedule.programs[std::size_t(rank)].ops)
        if (op.kind == OpKind::compute && op.conv_layer && op.layer >= 0)
          seconds[std::size_t(op.layer)] += op_time_s(platform, op, rank);
    return seconds;
  };
  const std::vector<double> im2col_s = layer_seconds(ConvPaths::Mode::im2col);
  // A path is a candidate only where the platform measured it.
  const bool direct_priced = !platform.measured_conv_flops.empty();
  const bool winograd_priced = !platform.measured_winograd_flops.empty();
  const std::vector<double> direct_s = direct_priced ? layer_seconds(ConvPaths::Mode::direct) : std::vector<double>{};
  const std::vector<double> winograd_s =
      winograd_priced ? layer_seconds(ConvPaths::Mode::winograd) : std::vector<double>{};
  ConvPaths chosen{.mode = ConvPaths::Mode::layers};
  for (std::size_t l = 0; l < network.layers.size(); ++l) {
    const LayerSpec& layer = network.layers[l].spec;
    if (layer.kind != LayerKind::conv) continue;
    ConvPath fastest = ConvPath::im2col;
    double fastest_s = im2col_s[l];
    if (direct_priced && direct_s[l] > 0 && direct_s[l] < fastest_s) {
      fastest = ConvPath::direct;
      fastest_s = direct_s[l];
    }
    if (winograd_priced && winograd_shape(layer) && winograd_s[l] > 0 && winograd_s[l] < fastest_s)
      fastest = ConvPath::winograd;
    if (fastest == ConvPath::direct) chosen.direct_layers.push_back(layer.name);
    if (fastest == ConvPath::winograd) chosen.winograd_layers.push_back(layer.name);
  }
  if (!chosen.any_direct()) return {};
  std::sort(chosen.direct_layers.begin(), chosen.direct_layers.end());
  std::sort(chosen.winograd_layers.begin(), chosen.winograd_layers.end());
  return chosen;
}

}  // namespace cnnpar
