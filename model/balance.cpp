#include "model/balance.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/output_files.hpp"

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

std::int64_t max_data_parallel_nodes(std::int64_t global_batch, std::int64_t min_images_per_node) {
  CNNPAR_ASSERT(global_batch >= 1 && min_images_per_node >= 1, "max_data_parallel_nodes: positive counts");
  return std::max<std::int64_t>(1, global_batch / min_images_per_node);
}

std::int64_t max_model_parallel_nodes(double ofm, double kernel_w, double kernel_h, double feature_size_ratio,
                                      double system_ratio_value) {
  const double limit = model_parallel_node_limit(ofm, kernel_w, kernel_h, feature_size_ratio, system_ratio_value);
  // Largest integer n with n < limit; one node never communicates, so at least 1.
  const double below = std::ceil(limit) - 1.0;
  return std::max<std::int64_t>(1, std::int64_t(below));
}

bool prefer_model_parallel(double input_w, double input_h, double minibatch, double ofm, double kernel_w,
                           double kernel_h) {
  return 3.0 * input_w * input_h * minibatch < ofm * kernel_w * kernel_h;
}

std::vector<LayerBalance> network_balance(const Network& network, const Platform& platform,
                                          std::int64_t global_batch, int nodes) {
  CNNPAR_ASSERT(nodes >= 1 && global_batch >= 1, "network_balance: nodes and batch >= 1");
  CNNPAR_ASSERT(global_batch % nodes == 0, "network_balance: the caller checks that nodes divide the batch");
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
      b.kernel_w_px = double(layer.spec.kernel_w);
      b.kernel_h_px = double(layer.spec.kernel_h);
      b.in_w_px = double(layer.in.w);
      b.in_h_px = double(layer.in.h);
      b.out_w_px = double(layer.out.w);
      b.out_h_px = double(layer.out.h);
      b.feature_size_ratio = (b.out_w_px * b.out_h_px) / (b.in_w_px * b.in_h_px);
    } else {
      b.ifm = double(layer.in.elements());
      b.ofm = double(layer.out.elements());
    }
    b.forward_flop_per_image = balance_forward_flops(b.ifm, b.ofm, b.kernel_w_px, b.kernel_h_px, b.out_w_px, b.out_h_px);
    b.images_per_node = double(global_batch / nodes);
    b.system_ratio = sys;

    b.dp_ratio = data_parallel_ratio(b.out_w_px, b.out_h_px, b.images_per_node, true);
    b.dp_ratio_no_overlap = data_parallel_ratio(b.out_w_px, b.out_h_px, b.images_per_node, false);
    b.dp_min_images_per_node = min_data_points_per_node(sys, b.out_w_px, b.out_h_px);
    b.dp_max_nodes = max_data_parallel_nodes(global_batch, b.dp_min_images_per_node);
    // With whole images per node this is dp_ratio >= sys, except that one node never communicates.
    b.dp_compute_bound = nodes <= b.dp_max_nodes;

    b.mp_ratio = model_parallel_ratio(b.ofm, b.kernel_w_px, b.kernel_h_px, b.feature_size_ratio, double(nodes));
    b.mp_node_limit = model_parallel_node_limit(b.ofm, b.kernel_w_px, b.kernel_h_px, b.feature_size_ratio, sys);
    b.mp_max_nodes = max_model_parallel_nodes(b.ofm, b.kernel_w_px, b.kernel_h_px, b.feature_size_ratio, sys);
    b.mp_compute_bound = nodes <= b.mp_max_nodes;

    b.prefer_model = prefer_model_parallel(b.in_w_px, b.in_h_px, double(global_batch), b.ofm, b.kernel_w_px,
                                           b.kernel_h_px);
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
          {"kernel_w_px", b.kernel_w_px},
          {"kernel_h_px", b.kernel_h_px},
          {"in_w_px", b.in_w_px},
          {"in_h_px", b.in_h_px},
          {"out_w_px", b.out_w_px},
          {"out_h_px", b.out_h_px},
          {"feature_size_ratio", b.feature_size_ratio},
          {"forward_flop_per_image", b.forward_flop_per_image},
          {"images_per_node", b.images_per_node},
          {"system_ratio_flop_per_byte", b.system_ratio},
          {"dp_ratio_flop_per_byte", b.dp_ratio},
          {"dp_ratio_no_overlap_flop_per_byte", b.dp_ratio_no_overlap},
          {"dp_min_images_per_node", b.dp_min_images_per_node},
          {"dp_max_nodes", b.dp_max_nodes},
          {"dp_compute_bound", b.dp_compute_bound},
          {"mp_ratio_flop_per_byte", b.mp_ratio},
          {"mp_node_limit", b.mp_node_limit},
          {"mp_max_nodes", b.mp_max_nodes},
          {"mp_compute_bound", b.mp_compute_bound},
          {"choice", b.prefer_model ? "model" : "data"},
          {"choice_compute_bound", b.choice_compute_bound()}};
}

std::string balance_csv(const std::string& network, const std::string& platform, std::int64_t global_batch,
                        int nodes, const std::vector<LayerBalance>& layers) {
  std::string out =
      "network,platform,engine,strategy,options,batch,nodes,layer,kind,ifm,ofm,kernel_w_px,kernel_h_px,in_w_px,in_h_px,out_w_px,out_h_px,"
      "feature_size_ratio,forward_flop_per_image,images_per_node,system_ratio_flop_per_byte,dp_ratio_flop_per_byte,"
      "dp_ratio_no_overlap_flop_per_byte,dp_min_images_per_node,dp_max_nodes,dp_compute_bound,mp_ratio_flop_per_byte,"
      "mp_node_limit,mp_max_nodes,mp_compute_bound,choice,choice_compute_bound\n";
  // The configuration columns every cnnpar CSV starts with; the equations compare data and
  // model parallelism per layer, so no one strategy applies.
  const std::string prefix =
      fmt::format("{},{},balance,,,{},{},", csv_field(network), csv_field(platform), global_batch, nodes);
  for (const LayerBalance& b : layers)
    out += prefix + fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},"
                                "{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                                csv_field(b.name), to_string(b.kind), b.ifm, b.ofm, b.kernel_w_px, b.kernel_h_px,
                                b.in_w_px, b.in_h_px, b.out_w_px, b.out_h_px, b.feature_size_ratio,
                                b.forward_flop_per_image, b.images_per_node, b.system_ratio, b.dp_ratio,
                                b.dp_ratio_no_overlap, b.dp_min_images_per_node, b.dp_max_nodes, b.dp_compute_bound,
                                b.mp_ratio, b.mp_node_limit, b.mp_max_nodes, b.mp_compute_bound,
                                b.prefer_model ? "model" : "data", b.choice_compute_bound());
  return out;
}

int intel_note_system_index(const Platform& platform) {
  const auto same = [](double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); };
  for (std::size_t s = 0; s < std::size(kIntelNoteSystems); ++s)
    if (same(platform.nodes.peak_flops, kIntelNoteSystems[s].peak_flops) &&
        same(platform.network.bandwidth_Bps, kIntelNoteSystems[s].bandwidth_Bps))
      return int(s);
  return -1;
}

}  // namespace cnnpar
