#pragma once
// Network description (JSON) and shape inference.
//
// A network is an input shape (C, H, W) and an ordered list of layers. Tensors are
// described per image; a mini-batch of N images adds the N dimension.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cnnpar {

enum class LayerKind { conv, pool, relu, lrn, dropout, fc, softmax };
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
  std::int64_t out_maps = 0;   ///< conv: output feature maps (ofm)
  std::int64_t kernel_h = 0;   ///< conv/pool: kernel rows
  std::int64_t kernel_w = 0;   ///< conv/pool: kernel columns
  std::int64_t stride = 1;     ///< conv/pool: stride (pixels)
  std::int64_t pad = 0;        ///< conv/pool: zero padding on each side (pixels)
  PoolMode pool_mode = PoolMode::max;
  std::int64_t outputs = 0;    ///< fc: output neurons (K_c)
  std::int64_t lrn_size = 5;   ///< lrn: channels in the normalisation window
  double lrn_alpha = 1e-4;
  double lrn_beta = 0.75;
  double lrn_k = 1.0;
  double dropout_ratio = 0.5;  ///< dropout: probability of dropping a unit
};

/** A layer with its inferred shapes. */
struct Layer {
  LayerSpec spec;
  Shape in;   ///< per-image input shape
  Shape out;  ///< per-image output shape
  /** True for the layers Lee et al. count (conv, pool, fc): VGG-A has 16. */
  bool counted() const;
  bool has_parameters() const { return spec.kind == LayerKind::conv || spec.kind == LayerKind::fc; }
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
