// Network JSON parsing, shape inference and serialisation (docs/formats.md).
#include "model/network.hpp"

#include <set>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"

namespace cnnpar {

const char* to_string(LayerKind kind) {
  switch (kind) {
    case LayerKind::conv: return "conv";
    case LayerKind::pool: return "pool";
    case LayerKind::relu: return "relu";
    case LayerKind::lrn: return "lrn";
    case LayerKind::dropout: return "dropout";
    case LayerKind::fc: return "fc";
    case LayerKind::softmax: return "softmax";
  }
  assertion_failed("valid LayerKind", __FILE__, __LINE__, "unknown LayerKind value");
}

const char* to_string(PoolMode mode) {
  switch (mode) {
    case PoolMode::max: return "max";
    case PoolMode::avg: return "avg";
  }
  assertion_failed("valid PoolMode", __FILE__, __LINE__, "unknown PoolMode value");
}

bool Layer::counted() const {
  return spec.kind == LayerKind::conv || spec.kind == LayerKind::pool || spec.kind == LayerKind::fc;
}

std::vector<int> Network::counted_layers() const {
  std::vector<int> indices;
  for (int i = 0; i < int(layers.size()); ++i)
    if (layers[std::size_t(i)].counted()) indices.push_back(i);
  return indices;
}

std::vector<int> Network::fc_layers() const {
  std::vector<int> indices;
  for (int i = 0; i < int(layers.size()); ++i)
    if (layers[std::size_t(i)].spec.kind == LayerKind::fc) indices.push_back(i);
  return indices;
}

int Network::find(const std::string& layer_name) const {
  for (int i = 0; i < int(layers.size()); ++i)
    if (layers[std::size_t(i)].spec.name == layer_name) return i;
  return -1;
}

std::int64_t Network::classes() const {
  const auto fcs = fc_layers();
  CNNPAR_ASSERT(!fcs.empty(), "Network::classes() on network '" + name + "' without an fc layer");
  return layers[std::size_t(fcs.back())].spec.outputs;
}

namespace {

LayerKind kind_from_node(const JsonNode& node) {
  const std::string text = node.as_string();
  if (text == "conv") return LayerKind::conv;
  if (text == "pool") return LayerKind::pool;
  if (text == "relu") return LayerKind::relu;
  if (text == "lrn") return LayerKind::lrn;
  if (text == "dropout") return LayerKind::dropout;
  if (text == "fc") return LayerKind::fc;
  if (text == "softmax") return LayerKind::softmax;
  node.fail("unknown layer type; expected conv, pool, relu, lrn, dropout, fc or softmax");
}

/** "kernel": 3 or [rows, cols]. */
void read_kernel(const JsonNode& layer, LayerSpec& spec) {
  const JsonNode kernel = layer.at("kernel");
  if (kernel.raw().is_array()) {
    const auto items = kernel.items();
    if (items.size() != 2) kernel.fail("kernel must be a positive integer or [rows, cols]");
    spec.kernel_h = items[0].as_int_in(1, limits::kMaxDimension);
    spec.kernel_w = items[1].as_int_in(1, limits::kMaxDimension);
  } else {
    spec.kernel_h = spec.kernel_w = kernel.as_int_in(1, limits::kMaxDimension);
  }
}

std::int64_t positive_or(const JsonNode& layer, std::string_view key, std::int64_t fallback) {
  return layer.has(key) ? layer.at(key).as_int_in(1, limits::kMaxDimension) : fallback;
}

LayerSpec parse_layer(const JsonNode& node) {
  LayerSpec spec;
  spec.name = node.at("name").as_string();
  if (spec.name.empty()) node.at("name").fail("layer name must not be empty");
  spec.kind = kind_from_node(node.at("type"));
  switch (spec.kind) {
    case LayerKind::conv:
      node.check_keys({"name", "type", "maps", "kernel", "stride", "pad"});
      spec.out_maps = node.at("maps").as_int_in(1, limits::kMaxDimension);
      read_kernel(node, spec);
      spec.stride = positive_or(node, "stride", 1);
      spec.pad = node.has("pad") ? node.at("pad").as_int_in(0, limits::kMaxDimension) : 0;
      break;
    case LayerKind::pool: {
      node.check_keys({"name", "type", "mode", "kernel", "stride", "pad"});
      const std::string mode = node.string_or("mode", "max");
      if (mode == "max") spec.pool_mode = PoolMode::max;
      else if (mode == "avg") spec.pool_mode = PoolMode::avg;
      else node.at("mode").fail("pool mode must be \"max\" or \"avg\"");
      read_kernel(node, spec);
      if (!node.has("stride") && spec.kernel_h != spec.kernel_w)
        node.at("kernel").fail("a non-square pool kernel needs an explicit \"stride\"");
      spec.stride = positive_or(node, "stride", spec.kernel_h);
      spec.pad = node.has("pad") ? node.at("pad").as_int_in(0, limits::kMaxDimension) : 0;
      break;
    }
    case LayerKind::relu:
    case LayerKind::softmax:
      node.check_keys({"name", "type"});
      break;
    case LayerKind::lrn:
      node.check_keys({"name", "type", "size", "alpha", "beta", "k"});
      spec.lrn_size = positive_or(node, "size", spec.lrn_size);
      if (spec.lrn_size % 2 == 0) node.at("size").fail("lrn size must be odd (window centred on the channel)");
      if (node.has("alpha")) spec.lrn_alpha = node.at("alpha").as_nonnegative_number();
      if (node.has("beta")) spec.lrn_beta = node.at("beta").as_nonnegative_number();
      if (node.has("k")) spec.lrn_k = node.at("k").as_positive_number();
      break;
    case LayerKind::dropout:
      node.check_keys({"name", "type", "ratio"});
      if (node.has("ratio")) {
        spec.dropout_ratio = node.at("ratio").as_nonnegative_number();
        if (spec.dropout_ratio >= 1.0) node.at("ratio").fail("dropout ratio must be in [0, 1)");
      }
      break;
    case LayerKind::fc:
      node.check_keys({"name", "type", "outputs"});
      spec.outputs = node.at("outputs").as_int_in(1, limits::kMaxDimension);
      break;
  }
  return spec;
}

[[noreturn]] void shape_error(const std::string& file, int index, const std::string& field,
                              const std::string& value, const std::string& reason) {
  throw InputError(file, fmt::format("/layers/{}/{}", index, field), value, reason);
}

/** floor((in + 2·pad − kernel) / stride) + 1, with the impossible cases rejected. */
std::int64_t window_output(const std::string& file, int index, const char* axis, std::int64_t in,
                           std::int64_t kernel, std::int64_t stride, std::int64_t pad) {
  const std::int64_t padded = in + 2 * pad;
  if (kernel > padded)
    shape_error(file, index, "kernel", std::to_string(kernel),
                fmt::format("kernel {} {} is larger than the padded input {} ({} + 2·{})", axis, kernel,
                            padded, in, pad));
  const std::int64_t out = (padded - kernel) / stride + 1;
  if (out < 1)
    shape_error(file, index, "stride", std::to_string(stride),
                fmt::format("output {} would be {} (< 1)", axis, out));
  return out;
}

// a * b * c, or -1 when the product exceeds limits::kMaxTensorElements (or int64).
std::int64_t bounded_product(std::int64_t a, std::int64_t b, std::int64_t c) {
  std::int64_t ab = 0, abc = 0;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc) || abc > limits::kMaxTensorElements)
    return -1;
  return abc;
}

// Every later product (batch x tensor, GEMM operands) relies on these bounds.
void check_tensor_size(const std::string& file, int index, const Layer& layer) {
  const Shape& out = layer.out;
  if (bounded_product(out.c, out.h, out.w) < 0)
    shape_error(file, index, "type", to_string(layer.spec.kind),
                fmt::format("output ({}, {}, {}) has more than {} elements per image", out.c, out.h, out.w,
                            limits::kMaxTensorElements));
  std::int64_t weights = 0;
  if (layer.spec.kind == LayerKind::conv)
    weights = bounded_product(layer.spec.out_maps, layer.in.c, bounded_product(layer.spec.kernel_h, layer.spec.kernel_w, 1));
  else if (layer.spec.kind == LayerKind::fc)
    weights = bounded_product(layer.spec.outputs, layer.in.c, bounded_product(layer.in.h, layer.in.w, 1));
  if (weights < 0)
    shape_error(file, index, "type", to_string(layer.spec.kind),
                fmt::format("the layer has more than {} weights", limits::kMaxTensorElements));
}

}  // namespace

void infer_shapes(Network& network, const std::string& file) {
  if (network.input.c < 1 || network.input.h < 1 || network.input.w < 1)
    throw InputError(file, "/input",
                     fmt::format("{}x{}x{}", network.input.c, network.input.h, network.input.w),
                     "input channels, height and width must be positive");
  if (network.layers.empty()) throw InputError(file, "/layers", "[]", "a network needs at least one layer");
  if (bounded_product(network.input.c, network.input.h, network.input.w) < 0)
    throw InputError(file, "/input", fmt::format("{}x{}x{}", network.input.c, network.input.h, network.input.w),
                     fmt::format("the input has more than {} elements per image", limits::kMaxTensorElements));
  Shape current = network.input;
  bool after_fc = false;
  const int count = int(network.layers.size());
  for (int i = 0; i < count; ++i) {
    Layer& layer = network.layers[std::size_t(i)];
    const LayerSpec& spec = layer.spec;
    layer.in = current;
    switch (spec.kind) {
      case LayerKind::conv:
      case LayerKind::pool: {
        if (after_fc)
          shape_error(file, i, "type", to_string(spec.kind),
                      fmt::format("a {} layer cannot follow an fc layer (its input is flattened)",
                                  to_string(spec.kind)));
        if (spec.kind == LayerKind::conv && spec.out_maps < 1)
          shape_error(file, i, "maps", std::to_string(spec.out_maps), "maps must be positive");
        if (spec.kernel_h < 1 || spec.kernel_w < 1)
          shape_error(file, i, "kernel", fmt::format("[{}, {}]", spec.kernel_h, spec.kernel_w),
                      "kernel must be positive");
        if (spec.stride < 1) shape_error(file, i, "stride", std::to_string(spec.stride), "stride must be positive");
        if (spec.pad < 0) shape_error(file, i, "pad", std::to_string(spec.pad), "pad must not be negative");
        if (spec.kind == LayerKind::pool && (spec.pad >= spec.kernel_h || spec.pad >= spec.kernel_w))
          shape_error(file, i, "pad", std::to_string(spec.pad),
                      "pool padding must be smaller than the kernel (a window would see only padding)");
        layer.out.c = spec.kind == LayerKind::conv ? spec.out_maps : current.c;
        layer.out.h = window_output(file, i, "rows", current.h, spec.kernel_h, spec.stride, spec.pad);
        layer.out.w = window_output(file, i, "columns", current.w, spec.kernel_w, spec.stride, spec.pad);
        break;
      }
      case LayerKind::fc:
        if (spec.outputs < 1) shape_error(file, i, "outputs", std::to_string(spec.outputs), "outputs must be positive");
        layer.out = Shape{spec.outputs, 1, 1};
        after_fc = true;
        break;
      case LayerKind::softmax:
        if (i != count - 1)
          shape_error(file, i, "type", "softmax", "softmax (with the loss) must be the last layer");
        if (current.h != 1 || current.w != 1)
          shape_error(file, i, "type", "softmax",
                      fmt::format("softmax needs a (classes, 1, 1) input, got ({}, {}, {})", current.c,
                                  current.h, current.w));
        layer.out = current;
        break;
      case LayerKind::lrn:
        if (spec.lrn_size < 1 || spec.lrn_size % 2 == 0)
          shape_error(file, i, "size", std::to_string(spec.lrn_size), "lrn size must be a positive odd number");
        layer.out = current;
        break;
      case LayerKind::dropout:
        if (!(spec.dropout_ratio >= 0.0 && spec.dropout_ratio < 1.0))
          shape_error(file, i, "ratio", fmt::format("{}", spec.dropout_ratio), "dropout ratio must be in [0, 1)");
        layer.out = current;
        break;
      case LayerKind::relu:
        layer.out = current;
        break;
    }
    check_tensor_size(file, i, layer);
    current = layer.out;
  }
}

Network parse_network(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  if (!document.is_object()) root.fail("a network must be a JSON object");
  root.check_keys({"name", "source", "input", "layers"});
  Network network;
  network.name = root.at("name").as_string();
  if (network.name.empty()) root.at("name").fail("network name must not be empty");
  network.source = root.string_or("source", "");
  const JsonNode input = root.at("input");
  input.check_keys({"channels", "height", "width"});
  network.input.c = input.at("channels").as_int_in(1, limits::kMaxDimension);
  network.input.h = input.at("height").as_int_in(1, limits::kMaxDimension);
  network.input.w = input.at("width").as_int_in(1, limits::kMaxDimension);

  const auto layer_nodes = root.at("layers").items();
  if (layer_nodes.empty()) root.at("layers").fail("a network needs at least one layer");
  if (std::int64_t(layer_nodes.size()) > limits::kMaxLayers)
    root.at("layers").fail(fmt::format("a network may have at most {} layers", limits::kMaxLayers));
  std::set<std::string> names;
  for (const JsonNode& node : layer_nodes) {
    if (!node.raw().is_object()) node.fail("a layer must be a JSON object");
    Layer layer;
    layer.spec = parse_layer(node);
    if (!names.insert(layer.spec.name).second) node.at("name").fail("duplicate layer name");
    network.layers.push_back(std::move(layer));
  }
  infer_shapes(network, file);
  return network;
}

nlohmann::json to_json(const Network& network) {
  nlohmann::json layers = nlohmann::json::array();
  for (const Layer& layer : network.layers) {
    const LayerSpec& spec = layer.spec;
    nlohmann::json out = {{"name", spec.name}, {"type", to_string(spec.kind)}};
    auto kernel = [&spec]() -> nlohmann::json {
      if (spec.kernel_h == spec.kernel_w) return spec.kernel_h;
      return nlohmann::json::array({spec.kernel_h, spec.kernel_w});
    };
    switch (spec.kind) {
      case LayerKind::conv:
        out["maps"] = spec.out_maps;
        out["kernel"] = kernel();
        out["stride"] = spec.stride;
        out["pad"] = spec.pad;
        break;
      case LayerKind::pool:
        out["mode"] = to_string(spec.pool_mode);
        out["kernel"] = kernel();
        out["stride"] = spec.stride;
        out["pad"] = spec.pad;
        break;
      case LayerKind::lrn:
        out["size"] = spec.lrn_size;
        out["alpha"] = spec.lrn_alpha;
        out["beta"] = spec.lrn_beta;
        out["k"] = spec.lrn_k;
        break;
      case LayerKind::dropout:
        out["ratio"] = spec.dropout_ratio;
        break;
      case LayerKind::fc:
        out["outputs"] = spec.outputs;
        break;
      case LayerKind::relu:
      case LayerKind::softmax:
        break;
    }
    layers.push_back(std::move(out));
  }
  return {{"name", network.name},
          {"source", network.source},
          {"input", {{"channels", network.input.c}, {"height", network.input.h}, {"width", network.input.w}}},
          {"layers", std::move(layers)}};
}

}  // namespace cnnpar
