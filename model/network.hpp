#pragma once
// Network description (JSON) and shape inference.
//
// A network is an input shape (C, H, W) and a list of layers that form a DAG: each layer reads
// the layers its `inputs` name (by default the one before it; the first layer reads the network
// input), and every layer comes after the layers it reads, so the list is a topological order.
// Tensors are described per image; a mini-batch of N images adds the N dimension.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cnnpar {

enum class LayerKind { conv, pool, relu, lrn, dropout, fc, softmax, batchnorm, add, concat };
enum class PoolMode { max, avg };

const char* to_string(LayerKind kind);
const char* to_string(PoolMode mode);

/** True for kinds whose every output unit reads every input unit at its position (lrn across
 *  channels, softmax across classes): a unit-sliced input must be gathered first. */
inline bool needs_all_units(LayerKind kind) { return kind == LayerKind::lrn || kind == LayerKind::softmax; }

/** Per-image tensor shape (C, H, W); an fc output is (outputs, 1, 1). */
struct Shape {
  std::int64_t c = 0;  ///< channels (feature maps)
  std::int64_t h = 0;  ///< height (pixels)
  std::int64_t w = 0;  ///< width (pixels)
  std::int64_t elements() const { return c * h * w; }
  bool operator==(const Shape&) const = default;
};

/** One layer as written in the network JSON. Fields irrelevant to `kind` are unused. */
struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::relu;
  std::vector<std::string> inputs;  ///< names of the layers read; empty = the layer before
  bool bias = true;            ///< conv: a bias per output map (ResNet's convs have none)
  std::int64_t out_maps = 0;   ///< conv: output feature maps (ofm)
  std::int64_t kernel_h = 0;   ///< conv/pool: kernel rows
  std::int64_t kernel_w = 0;   ///< conv/pool: kernel columns
  std::int64_t stride = 1;     ///< conv/pool: stride (pixels)
  std::int64_t pad = 0;        ///< conv/pool: zero padding on each side (pixels)
  PoolMode pool_mode = PoolMode::max;
  bool global = false;         ///< pool: the window is the whole input (global pooling)
  bool ceil = false;           ///< pool: output size rounded up (the last window may overhang)
  std::int64_t outputs = 0;    ///< fc: output neurons (K_c)
  std::int64_t lrn_size = 5;   ///< lrn: channels in the normalisation window
  double lrn_alpha = 1e-4;
  double lrn_beta = 0.75;
  double lrn_k = 1.0;
  double dropout_ratio = 0.5;  ///< dropout: probability of dropping a unit
  double bn_epsilon = 1e-5;    ///< batchnorm: added to the variance
  double bn_momentum = 0.1;    ///< batchnorm: weight of a batch in the running statistics
};

/** A layer with its inferred shapes. */
struct Layer {
  LayerSpec spec;
  std::vector<int> inputs;  ///< indices of the layers read, in order; {-1}: the network input
  Shape in;   ///< per-image input shape (concat: the inputs stacked along channels)
  Shape out;  ///< per-image output shape
  /** True for the layers Lee et al. count (conv, pool, fc): VGG-A has 16. */
  bool counted() const;
  /** conv and fc (weights and biases) and batchnorm (per-channel scale and shift). */
  bool has_parameters() const {
    return spec.kind == LayerKind::conv || spec.kind == LayerKind::fc || spec.kind == LayerKind::batchnorm;
  }
  /** conv and fc: the layers that run GEMMs (Lee Eq. 4-8). */
  bool has_gemm() const { return spec.kind == LayerKind::conv || spec.kind == LayerKind::fc; }
};

struct Network {
  std::string name;
  std::string source;  ///< where the architecture comes from (paper, table)
  Shape input;         ///< per-image input (C, H, W)
  std::vector<Layer> layers;

  /** Indices into `layers` of the counted layers (conv, pool, fc) in order. */
  std::vector<int> counted_layers() const;
  /** Indices into `layers` of the fc layers in order. */
  std::vector<int> fc_layers() const;
  /** Index into `layers` of the layer called `name`, or -1. */
  int find(const std::string& name) const;
  /** Number of output classes (outputs of the last fc layer). */
  std::int64_t classes() const;
  /** Per layer the indices of the layers that read its output, in order. */
  std::vector<std::vector<int>> readers() const;
  /** Per layer how many layers read its output. */
  std::vector<int> reader_counts() const;
  /** Index of the first layer that is not a plain chain link (it reads other than the one
   *  layer before it, its output is read twice, or its kind is batchnorm, add or concat, or a
   *  global, ceil-mode or bias-free layer), or -1 when the network is a chain of the original
   *  kinds. Strategies that handle only chains name this layer when they refuse a network. */
  int first_graph_layer() const;
  /** What makes layer `index` more than a chain link ("a batchnorm layer", "a conv layer
   *  without bias", "a layer read by 2 layers", ...), or "" for a plain chain link. */
  std::string graph_feature(int index) const;
};

/** Parses a network JSON document; `file` is used in error messages.
 *  @throws InputError naming file, JSON path and value for any bad field or impossible shape. */
Network parse_network(const nlohmann::json& document, const std::string& file);

/** Fills in `in`/`out` of every layer from `network.input`.
 *  @throws InputError (path "/layers/I/...") for impossible shapes, e.g. a kernel larger
 *  than its padded input. */
void infer_shapes(Network& network, const std::string& file);

/** Serialises a network back to its JSON form (round-trips through parse_network). */
nlohmann::json to_json(const Network& network);

}  // namespace cnnpar
