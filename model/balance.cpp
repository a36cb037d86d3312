#include "model/balance.hpp"

#include <cmath>

#include "model/error.hpp"

namespace cnnpar {

double balance_forward_flops(double ifm, double ofm, double kernel_w, double kernel_h, double out_w, double out_h) {
  return 2.0 * ifm * ofm * kernel_w * kernel_h * out_w * out_h;
}

double data_parallel_ratio(double out_w, double out_h, double mb_node, bool full_overlap) {
  const double ratio = 1.5 * out_w * out_h * mb_node;
  return full_overlap ? ratio : 0.5 * ratio;
}

double system_ratio(double peak_flops, double bandwidth_Bps) {
  CNNPAR_ASSERT(bandwidth_Bps > 0, "system_ratio: bandwidth must be positive");
  return peak_flops / bandwidth_Bps;
}

std::int64_t min_data_points_per_node(double system_ratio_value, double out_w, double out_h) {
  CNNPAR_ASSERT(out_w > 0 && out_h > 0, "min_data_points_per_node: empty feature map");
  const double quotient = system_ratio_value / (1.5 * out_w * out_h);
  const double rounded = std::round(quotient);
  const double snapped = std::abs(quotient - rounded) <= 1e-9 * std::max(1.0, std::abs(quotient)) ? rounded : quotient;
  return std::max<std::int64_t>(1, std::int64_t(std::ceil(snapped)));
}

double model_parallel_ratio(double ofm, double kernel_w, double kernel_h, double feature_size_ratio, double nodes) {
  return 0.75 * ofm * kernel_w * kernel_h * feature_size_ratio / nodes;
}

double model_parallel_node_limit(double ofm, double kernel_w, double kernel_h, double feature_size_ratio,
                                 double system_ratio_value) {
  return 0.75 * ofm * kernel_w * kernel_h * feature_size_ratio / system_ratio_value;
}

std::int64_t max_model_parallel_nodes(double ofm, double kernel_w, double kernel_h, double feature_size_ratio,
                                      double system_ratio_value) {
  const double limit = model_parallel_node_limit(ofm, kernel_w, kernel_h, feature_size_ratio, system_ratio_value);
  // Largest integer n with n < limit.
  const double below = std::ceil(limit) - 1.0;
  return std::max<std::int64_t>(0, std::int64_t(below));
}

bool prefer_model_parallel(double input_w, double input_h, double minibatch, double ofm, double kernel_w,
                           double kernel_h) {
  return 3.0 * input_w * input_h * minibatch < ofm * kernel_w * kernel_h;
}

std::vector<LayerBalance> network_balance(const Network& network, const Platform& platform,
                                          std::int64_t global_batch, int nodes) {
  CNNPAR_ASSERT(nodes >= 1, "network_balance: nodes >= 1");
  const double sys = system_ratio(platform.nodes.peak_flops, platform.network.bandwidth_Bps);
  std::vector<LayerBalance> out;
  for (std::size_t i = 0; i < network.layers.size(); ++i) {
    const Layer& layer = network.layers[i];
    if (layer.spec.kind != LayerKind::conv && layer.spec.kind != LayerKind::fc) continue;
    LayerBalance b;
    b.layer = int(i);
    b.name = layer.spec.name;
    b.kind = layer.spec.kind;
    if (layer.spec.kind == LayerKind::conv) {
      b.ifm = double(layer.in.c);
      b.ofm = double(layer.out.c);
      b.kernel_w = double(layer.spec.kernel_w);
      b.kernel_h = double(layer.spec.kernel_h);
      b.in_w = double(layer.in.w);
      b.in_h = double(layer.in.h);
      b.out_w = double(layer.out.w);
      b.out_h = double(layer.out.h);
      b.feature_size_ratio = (b.out_w * b.out_h) / (b.in_w * b.in_h);
    } else {
      b.ifm = double(layer.in.elements());
      b.ofm = double(layer.out.elements());
    }
    b.forward_flops = balance_forward_flops(b.ifm, b.ofm, b.kernel_w, b.kernel_h, b.out_w, b.out_h);
    b.mb_node = double(global_batch) / double(nodes);
    b.data_ratio_overlap = data_parallel_ratio(b.out_w, b.out_h, b.mb_node, true);
    b.data_ratio_no_overlap = data_parallel_ratio(b.out_w, b.out_h, b.mb_node, false);
    b.system_ratio = sys;
    b.min_data_points = min_data_points_per_node(sys, b.out_w, b.out_h);
    b.data_parallel_scales = b.data_ratio_overlap >= sys;
    b.model_parallel_limit = model_parallel_node_limit(b.ofm, b.kernel_w, b.kernel_h, b.feature_size_ratio, sys);
    b.max_model_nodes = max_model_parallel_nodes(b.ofm, b.kernel_w, b.kernel_h, b.feature_size_ratio, sys);
    b.prefer_model = prefer_model_parallel(b.in_w, b.in_h, double(global_batch), b.ofm, b.kernel_w, b.kernel_h);
    out.push_back(b);
  }
  return out;
}

nlohmann::json to_json(const LayerBalance& b) {
  return {{"layer", b.layer},
          {"name", b.name},
          {"kind", to_string(b.kind)},
          {"ifm", b.ifm},
          {"ofm", b.ofm},
          {"kernel_w", b.kernel_w},
          {"kernel_h", b.kernel_h},
          {"in_w", b.in_w},
          {"in_h", b.in_h},
          {"out_w", b.out_w},
          {"out_h", b.out_h},
          {"feature_size_ratio", b.feature_size_ratio},
          {"forward_flops", b.forward_flops},
          {"mb_node", b.mb_node},
          {"data_ratio_overlap", b.data_ratio_overlap},
          {"data_ratio_no_overlap", b.data_ratio_no_overlap},
          {"system_ratio", b.system_ratio},
          {"min_data_points", b.min_data_points},
          {"data_parallel_scales", b.data_parallel_scales},
          {"model_parallel_limit", b.model_parallel_limit},
          {"max_model_nodes", b.max_model_nodes},
          {"prefer_model", b.prefer_model}};
}

}  // namespace cnnpar
