#pragma once
// Intel's balance equations for multinode training ("MultiNode Caffe Training on Intel
// Xeon E5", seed 003): algorithmic versus system compute-to-communication ratios for data
// and model parallelism, per layer.
//
// Ratios are FLOPs per byte. A fully connected layer counts as a convolution with 1×1
// feature maps and a 1×1 kernel (the note's F1), ifm = its flattened input K_b.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/platform.hpp"

namespace cnnpar {

/** FLOPs of one image's forward pass: 2·ifm·ofm·kw·kh·ow·oh (backward data and weight
 *  gradient cost the same each). */
double balance_forward_flops(double ifm, double ofm, double kernel_w, double kernel_h, double out_w, double out_h);

/** Data parallel: 1.5·ow·oh·MB_node with full send/receive overlap, half that without. */
double data_parallel_ratio(double out_w, double out_h, double mb_node, bool full_overlap = true);

/** Peak FLOP/s ÷ bandwidth (bytes/s). */
double system_ratio(double peak_flops, double bandwidth_Bps);

/** Smallest MB_node with 1.5·ow·oh·MB_node >= system ratio: ⌈system ratio / (1.5·ow·oh)⌉,
 *  at least 1. The quotient is rounded to 1e-9 relative before the ceiling, so exact
 *  ratios such as 2250 / 1.5 = 1500 are not pushed to 1501 by floating-point error. */
std::int64_t min_data_points_per_node(double system_ratio, double out_w, double out_h);

/** Model parallel (forward + backward, no overlap): 0.75·ofm·kw·kh·feature_size_ratio / nodes. */
double model_parallel_ratio(double ofm, double kernel_w, double kernel_h, double feature_size_ratio, double nodes);

/** The note's bound: the layer is compute bound iff nodes < limit, where
 *  limit = 0.75·ofm·kw·kh·feature_size_ratio / system ratio (a real number). */
double model_parallel_node_limit(double ofm, double kernel_w, double kernel_h, double feature_size_ratio,
                                 double system_ratio);
/** Largest integer node count that is still compute bound (0 if none; the note writes
 *  "NUM_NODES < max + 1"). */
std::int64_t max_model_parallel_nodes(double ofm, double kernel_w, double kernel_h, double feature_size_ratio,
                                      double system_ratio);

/** Model over data parallelism iff 3·input_w·input_h·MB < ofm·kw·kh (MB = whole mini-batch). */
bool prefer_model_parallel(double input_w, double input_h, double minibatch, double ofm, double kernel_w,
                           double kernel_h);

/** The balance figures of one conv or fc layer of a network on a platform. */
struct LayerBalance {
  int layer = -1;                  ///< index into Network::layers
  std::string name;
  LayerKind kind = LayerKind::conv;
  double ifm = 0, ofm = 0;         ///< input / output feature maps (fc: K_b, K_c)
  double kernel_w = 1, kernel_h = 1;
  double in_w = 1, in_h = 1, out_w = 1, out_h = 1;
  double feature_size_ratio = 1;   ///< (out_w·out_h) / (in_w·in_h); 1 for fc
  double forward_flops = 0;        ///< per image
  double mb_node = 0;              ///< images per node (global batch / nodes)
  double data_ratio_overlap = 0;   ///< 1.5·ow·oh·MB_node
  double data_ratio_no_overlap = 0;
  double system_ratio = 0;         ///< FLOPs per byte of the platform
  std::int64_t min_data_points = 0;
  bool data_parallel_scales = false;  ///< data_ratio_overlap >= system ratio
  double model_parallel_limit = 0;    ///< compute bound iff nodes < this
  std::int64_t max_model_nodes = 0;
  bool prefer_model = false;          ///< 3·in_w·in_h·MB < ofm·kw·kh, MB = global batch
};

/** One entry per conv and fc layer. `global_batch` = MB, `nodes` gives MB_node = MB / nodes.
 *  System ratio = platform.nodes.peak_flops / platform.network.bandwidth_Bps. */
std::vector<LayerBalance> network_balance(const Network& network, const Platform& platform,
                                          std::int64_t global_batch, int nodes);

nlohmann::json to_json(const LayerBalance& balance);

}  // namespace cnnpar
