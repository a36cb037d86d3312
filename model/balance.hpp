#pragma once
// Intel's balance equations for multinode training ("MultiNode Caffe Training on Intel
// Xeon E5", seed 003): algorithmic versus system compute-to-communication ratios for data
// and model parallelism, per layer.
//
// Ratios are FLOPs per byte. A fully connected layer counts as a convolution with 1×1
// feature maps and a 1×1 kernel (the note's F1), ifm = its flattened input K_b.
//
// Two kinds of answer, which the note keeps apart and so does this file:
// * at a node count: is a scheme compute bound (its algorithmic ratio above the system
//   ratio)? Data parallelism needs enough images per node, model parallelism few enough
//   nodes; each has a largest node count that stays compute bound.
// * independent of the node count: which scheme moves fewer bytes for the same work (the
//   note's "when to use model parallelism" rule). That is the note's choice even when the
//   chosen scheme is communication bound, so a layer can be "choose data" and "data
//   parallelism communication bound at 32 nodes" at once.
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

/** Data parallel, FLOP/byte: 1.5·ow·oh·MB_node with full send/receive overlap, half that without. */
double data_parallel_ratio(double out_w, double out_h, double mb_node, bool full_overlap = true);

/** Peak FLOP/s ÷ bandwidth (bytes/s) = FLOP/byte. */
double system_ratio(double peak_flops, double bandwidth_Bps);

/** Smallest MB_node (images) with 1.5·ow·oh·MB_node >= system ratio: ⌈system ratio / (1.5·ow·oh)⌉,
 *  at least 1. The quotient is rounded to 1e-9 relative before the ceiling, so exact
 *  ratios such as 2250 / 1.5 = 1500 are not pushed to 1501 by floating-point error. */
std::int64_t min_data_points_per_node(double system_ratio, double out_w, double out_h);

/** Largest node count that gives every node at least `min_images_per_node` of a `global_batch`:
 *  ⌊global_batch / min_images_per_node⌋, at least 1 (one node never communicates; 1 is the
 *  note's "cannot even scale beyond one node"). */
std::int64_t max_data_parallel_nodes(std::int64_t global_batch, std::int64_t min_images_per_node);

/** Model parallel (forward + backward, no overlap), FLOP/byte: 0.75·ofm·kw·kh·feature_size_ratio / nodes. */
double model_parallel_ratio(double ofm, double kernel_w, double kernel_h, double feature_size_ratio, double nodes);

/** The note's bound: the layer is compute bound iff nodes < limit, where
 *  limit = 0.75·ofm·kw·kh·feature_size_ratio / system ratio (a real number). */
double model_parallel_node_limit(double ofm, double kernel_w, double kernel_h, double feature_size_ratio,
                                 double system_ratio);
/** Largest integer node count n < limit (the note writes "NUM_NODES < max + 1"), at least 1:
 *  1 means model parallelism is communication bound from two nodes on. */
std::int64_t max_model_parallel_nodes(double ofm, double kernel_w, double kernel_h, double feature_size_ratio,
                                      double system_ratio);

/** The note's choice: model over data parallelism iff 3·input_w·input_h·MB < ofm·kw·kh
 *  (MB = whole mini-batch), i.e. iff model parallelism moves fewer bytes for the same work.
 *  Independent of the node count, and silent on whether the chosen scheme is compute bound. */
bool prefer_model_parallel(double input_w, double input_h, double minibatch, double ofm, double kernel_w,
                           double kernel_h);

/** The balance figures of one conv or fc layer of a network on a platform, at one node count. */
struct LayerBalance {
  int layer = -1;  ///< index into Network::layers
  std::string name;
  LayerKind kind = LayerKind::conv;
  double ifm = 0, ofm = 0;  ///< input / output feature maps (fc: K_b, K_c)
  double kernel_w_px = 1, kernel_h_px = 1;
  double in_w_px = 1, in_h_px = 1, out_w_px = 1, out_h_px = 1;
  double feature_size_ratio = 1;      ///< (out_w·out_h) / (in_w·in_h); 1 for fc
  double forward_flop_per_image = 0;  ///< FLOPs of one image's forward pass
  double images_per_node = 0;         ///< MB_node = global batch / nodes
  double system_ratio = 0;            ///< FLOP/byte of the platform: peak FLOP/s ÷ link bytes/s

  // Data parallelism (DP).
  double dp_ratio = 0;             ///< FLOP/byte at images_per_node, full overlap: 1.5·ow·oh·MB_node
  double dp_ratio_no_overlap = 0;  ///< FLOP/byte, no overlap: half of dp_ratio
  std::int64_t dp_min_images_per_node = 0;  ///< the note's Figure 1 quantity
  std::int64_t dp_max_nodes = 0;            ///< largest compute-bound node count for this batch, >= 1
  bool dp_compute_bound = false;            ///< at `nodes`: nodes <= dp_max_nodes

  // Model parallelism (MP).
  double mp_ratio = 0;       ///< FLOP/byte at `nodes`: 0.75·ofm·kw·kh·feature_size_ratio / nodes
  double mp_node_limit = 0;  ///< compute bound iff nodes < this (a real number)
  std::int64_t mp_max_nodes = 0;  ///< largest compute-bound node count, >= 1
  bool mp_compute_bound = false;  ///< at `nodes`: nodes <= mp_max_nodes

  // The note's choice (fewer bytes moved; independent of the node count).
  bool prefer_model = false;  ///< 3·in_w·in_h·MB < ofm·kw·kh, MB = global batch
  bool choice_compute_bound() const { return prefer_model ? mp_compute_bound : dp_compute_bound; }
};

/** One entry per conv and fc layer. `global_batch` = MB (images), `nodes` gives MB_node = MB / nodes;
 *  the caller has checked that `nodes` divides `global_batch`.
 *  System ratio = platform.nodes.peak_flops / platform.network.bandwidth_Bps. */
std::vector<LayerBalance> network_balance(const Network& network, const Platform& platform,
                                          std::int64_t global_batch, int nodes);

nlohmann::json to_json(const LayerBalance& balance);

/** Tidy CSV, one row per layer: the configuration columns of every cnnpar CSV
 *  (network,platform,engine = "balance",strategy and options empty,batch), nodes, then the LayerBalance fields
 *  with units in their names. Text fields are quoted when they hold a comma, quote or newline. */
std::string balance_csv(const std::string& network, const std::string& platform, std::int64_t global_batch,
                        int nodes, const std::vector<LayerBalance>& layers);

/** The note's three systems and three layers of Figure 1 ("minimum number of data points
 *  which must be assigned to a given node"). */
struct IntelNoteSystem {
  const char* name;
  double peak_flops;     ///< FLOP/s
  double bandwidth_Bps;  ///< bytes/s
};
inline constexpr IntelNoteSystem kIntelNoteSystems[] = {
    {"Xeon + FDR InfiniBand", 2700e9, 7e9},
    {"Xeon + 10Gb Ethernet", 2700e9, 1.2e9},
    {"Xeon Phi + OmniPath", 6000e9, 12.5e9},
};
struct IntelNoteLayer {
  const char* name;
  double out_w_px, out_h_px;
};
inline constexpr IntelNoteLayer kIntelNoteLayers[] = {{"C1 (55x55)", 55, 55}, {"C5 (12x12)", 12, 12}, {"F1 (1x1)", 1, 1}};

/** Index into kIntelNoteSystems of the system with this platform's node peak and link
 *  bandwidth (equal to 1e-9 relative), or -1: Figure 1 depends on nothing else, so a
 *  platform matches whatever its name. */
int intel_note_system_index(const Platform& platform);

}  // namespace cnnpar
