// Network JSON parsing, shape inference and serialisation (docs/formats.md).
#include "model/network.hpp"

#include <algorithm>
#include <map>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
    case LayerKind::batchnorm: return "batchnorm";
    case LayerKind::add: return "add";
    case LayerKind::concat: return "concat";
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

std::vector<std::vector<int>> Network::readers() const {
  std::vector<std::vector<int>> out(layers.size());
  for (int i = 0; i < int(layers.size()); ++i)
    for (int input : layers[std::size_t(i)].inputs)
      if (input >= 0) out[std::size_t(input)].push_back(i);
  return out;
}

namespace {
// What makes layer `index` (read by `readers` layers) more than a chain link, or "".
std::string chain_break(const Network& network, int index, int readers) {
  const Layer& layer = network.layers[std::size_t(index)];
  const LayerSpec& spec = layer.spec;
  if (spec.kind == LayerKind::batchnorm || spec.kind == LayerKind::add || spec.kind == LayerKind::concat)
    return fmt::format("a {} layer", to_string(spec.kind));
  if (!spec.bias) return "a conv layer without bias";
  if (spec.global) return "a global pool";
  if (spec.ceil) return "a ceil-mode pool";
  if (!layer.inputs.empty() && (layer.inputs.size() != 1 || layer.inputs.front() != index - 1))
    return "a layer that reads other than the layer before it";
  if (readers > 1) return fmt::format("a layer read by {} layers", readers);
  return "";
}
}  // namespace

std::vector<int> Network::reader_counts() const {
  std::vector<int> counts(layers.size(), 0);
  for (const Layer& layer : layers)
    for (int input : layer.inputs)
      if (input >= 0) ++counts[std::size_t(input)];
  return counts;
}

std::string Network::graph_feature(int index) const {
  return chain_break(*this, index, reader_counts()[std::size_t(index)]);
}

int Network::first_graph_layer() const {
  const std::vector<int> read_by = reader_counts();  // a sweep asks once per schedule: no list per layer
  for (int i = 0; i < int(layers.size()); ++i)
    if (!chain_break(*this, i, read_by[std::size_t(i)]).empty()) return i;
  return -1;
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
  if (text == "batchnorm") return LayerKind::batchnorm;
  if (text == "add") return LayerKind::add;
  if (text == "concat") return LayerKind::concat;
  node.fail("unknown layer type; expected conv, pool, relu, lrn, dropout, fc, softmax, batchnorm, add or concat");
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

// "inputs": ["name", ...]: names only here; parse_network resolves them once every layer is known.
void read_inputs(const JsonNode& node, LayerSpec& spec) {
  const bool joins = spec.kind == LayerKind::add || spec.kind == LayerKind::concat;
  if (!node.has("inputs")) {
    if (joins) node.fail(fmt::format("{} needs \"inputs\": the names of the two or more layers it joins", to_string(spec.kind)));
    return;
  }
  const JsonNode inputs = node.at("inputs");
  if (!inputs.raw().is_array()) inputs.fail("inputs must be an array of layer names");
  for (const JsonNode& input : inputs.items()) {
    spec.inputs.push_back(input.as_string());
    if (spec.inputs.back().empty()) input.fail("an input must name a layer");
  }
  if (joins && spec.inputs.size() < 2)
    inputs.fail(fmt::format("{} joins two or more inputs", to_string(spec.kind)));
  if (!joins && spec.inputs.size() != 1)
    inputs.fail(fmt::format("a {} layer reads exactly one input", to_string(spec.kind)));
}

LayerSpec parse_layer(const JsonNode& node) {
  LayerSpec spec;
  spec.name = node.at("name").as_string();
  if (spec.name.empty()) node.at("name").fail("layer name must not be empty");
  spec.kind = kind_from_node(node.at("type"));
  switch (spec.kind) {
    case LayerKind::conv:
      node.check_keys({"name", "type", "inputs", "maps", "kernel", "stride", "pad", "bias"});
      spec.out_maps = node.at("maps").as_int_in(1, limits::kMaxDimension);
      read_kernel(node, spec);
      spec.stride = positive_or(node, "stride", 1);
      spec.pad = node.has("pad") ? node.at("pad").as_int_in(0, limits::kMaxDimension) : 0;
      spec.bias = node.bool_or("bias", true);
      break;
    case LayerKind::pool: {
      node.check_keys({"name", "type", "inputs", "mode", "kernel", "stride", "pad", "global", "ceil"});
      const std::string mode = node.string_or("mode", "max");
      if (mode == "max") spec.pool_mode = PoolMode::max;
      else if (mode == "avg") spec.pool_mode = PoolMode::avg;
      else node.at("mode").fail("pool mode must be \"max\" or \"avg\"");
      spec.global = node.bool_or("global", false);
      spec.ceil = node.bool_or("ceil", false);
      if (spec.global) {
        // The window is the input, known only once shapes are inferred.
        for (const char* key : {"kernel", "stride", "pad", "ceil"})
          if (node.has(key))
            node.at(key).fail(fmt::format("a global pool's window is its whole input; drop \"{}\"", key));
        break;
      }
      read_kernel(node, spec);
      if (!node.has("stride") && spec.kernel_h != spec.kernel_w)
        node.at("kernel").fail("a non-square pool kernel needs an explicit \"stride\"");
      spec.stride = positive_or(node, "stride", spec.kernel_h);
      spec.pad = node.has("pad") ? node.at("pad").as_int_in(0, limits::kMaxDimension) : 0;
      break;
    }
    case LayerKind::relu:
    case LayerKind::softmax:
    case LayerKind::add:
    case LayerKind::concat:
      node.check_keys({"name", "type", "inputs"});
      break;
    case LayerKind::batchnorm:
      node.check_keys({"name", "type", "inputs", "epsilon", "momentum"});
      if (node.has("epsilon")) spec.bn_epsilon = node.at("epsilon").as_positive_number();
      if (node.has("momentum")) spec.bn_momentum = node.at("momentum").as_number_in(0.0, 1.0);
      break;
    case LayerKind::lrn:
      node.check_keys({"name", "type", "inputs", "size", "alpha", "beta", "k"});
      spec.lrn_size = positive_or(node, "size", spec.lrn_size);
      if (spec.lrn_size % 2 == 0) node.at("size").fail("lrn size must be odd (window centred on the channel)");
      if (node.has("alpha")) spec.lrn_alpha = node.at("alpha").as_nonnegative_number();
      if (node.has("beta")) spec.lrn_beta = node.at("beta").as_nonnegative_number();
      if (node.has("k")) spec.lrn_k = node.at("k").as_positive_number();
      break;
    case LayerKind::dropout:
      node.check_keys({"name", "type", "inputs", "ratio"});
      if (node.has("ratio")) {
        spec.dropout_ratio = node.at("ratio").as_nonnegative_number();
        if (spec.dropout_ratio >= 1.0) node.at("ratio").fail("dropout ratio must be in [0, 1)");
      }
      break;
    case LayerKind::fc:
      node.check_keys({"name", "type", "inputs", "outputs"});
      spec.outputs = node.at("outputs").as_int_in(1, limits::kMaxDimension);
      break;
  }
  read_inputs(node, spec);
  return spec;
}

// The edge i → j means layer i reads layer j. Returns a cycle as layer indices
// [a, b, ..., a] when there is one (iterative depth-first search: a network may have
// limits::kMaxLayers layers), else empty.
std::vector<int> find_cycle(const std::vector<std::vector<int>>& reads) {
  enum : char { unvisited, on_path, done };
  std::vector<char> state(reads.size(), unvisited);
  std::vector<std::pair<int, std::size_t>> path;  // (layer, next edge to follow)
  for (int start = 0; start < int(reads.size()); ++start) {
    if (state[std::size_t(start)] != unvisited) continue;
    path.push_back({start, 0});
    state[std::size_t(start)] = on_path;
    while (!path.empty()) {
      auto& [layer, edge] = path.back();
      if (edge == reads[std::size_t(layer)].size()) {
        state[std::size_t(layer)] = done;
        path.pop_back();
        continue;
      }
      const int next = reads[std::size_t(layer)][edge++];
      if (state[std::size_t(next)] == on_path) {
        std::vector<int> cycle;
        auto from = std::find_if(path.begin(), path.end(), [next](const auto& entry) { return entry.first == next; });
        for (; from != path.end(); ++from) cycle.push_back(from->first);
        cycle.push_back(next);
        return cycle;
      }
      if (state[std::size_t(next)] == unvisited) {
        state[std::size_t(next)] = on_path;
        path.push_back({next, 0});
      }
    }
  }
  return {};
}

// Names in "inputs" to indices: unknown names, cycles and layers listed before what they read
// are refused at the offending /layers/I/inputs/K.
void resolve_inputs(Network& network, const std::vector<JsonNode>& layer_nodes, const std::map<std::string, int>& index_of) {
  const int count = int(network.layers.size());
  std::vector<std::vector<int>> reads(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    Layer& layer = network.layers[std::size_t(i)];
    if (layer.spec.inputs.empty()) {
      layer.inputs = {i - 1};  // the layer before, or the network input (-1)
      if (i > 0) reads[std::size_t(i)].push_back(i - 1);
      continue;
    }
    const JsonNode inputs = layer_nodes[std::size_t(i)].at("inputs");
    for (std::size_t k = 0; k < layer.spec.inputs.size(); ++k) {
      const auto found = index_of.find(layer.spec.inputs[k]);
      if (found == index_of.end()) inputs.at(k).fail("no layer has this name");
      layer.inputs.push_back(found->second);
      reads[std::size_t(i)].push_back(found->second);
    }
  }
  const std::vector<int> cycle = find_cycle(reads);
  if (!cycle.empty()) {
    std::vector<std::string> names;
    for (int l : cycle) names.push_back(network.layers[std::size_t(l)].spec.name);
    const Layer& reader = network.layers[std::size_t(cycle[0])];
    const auto k = std::find(reader.inputs.begin(), reader.inputs.end(), cycle[1]) - reader.inputs.begin();
    layer_nodes[std::size_t(cycle[0])].at("inputs").at(std::size_t(k))
        .fail(fmt::format("the inputs form a cycle: {} (each reads the next)", fmt::join(names, " → ")));
  }
  for (int i = 0; i < count; ++i) {
    const Layer& layer = network.layers[std::size_t(i)];
    for (std::size_t k = 0; k < layer.spec.inputs.size(); ++k)
      if (layer.inputs[k] >= i)
        layer_nodes[std::size_t(i)].at("inputs").at(k).fail(
            fmt::format("'{}' is listed after '{}', which reads it; list every layer after the layers it reads",
                        layer.spec.inputs[k], layer.spec.name));
  }
}

}  // namespace

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
  std::map<std::string, int> index_of;
  for (const JsonNode& node : layer_nodes) {
    if (!node.raw().is_object()) node.fail("a layer must be a JSON object");
    Layer layer;
    layer.spec = parse_layer(node);
    if (!index_of.emplace(layer.spec.name, int(network.layers.size())).second)
      node.at("name").fail("duplicate layer name");
    network.layers.push_back(std::move(layer));
  }
  resolve_inputs(network, layer_nodes, index_of);
  infer_shapes(network, file);
  return network;
}

nlohmann::json to_json(const Network& network) {
  nlohmann::json layers = nlohmann::json::array();
  for (const Layer& layer : network.layers) {
    const LayerSpec& spec = layer.spec;
    nlohmann::json out = {{"name", spec.name}, {"type", to_string(spec.kind)}};
    if (!spec.inputs.empty()) out["inputs"] = spec.inputs;
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
        if (!spec.bias) out["bias"] = false;
        break;
      case LayerKind::pool:
        out["mode"] = to_string(spec.pool_mode);
        if (spec.global) {
          out["global"] = true;
          break;
        }
        out["kernel"] = kernel();
        out["stride"] = spec.stride;
        out["pad"] = spec.pad;
        if (spec.ceil) out["ceil"] = true;
        break;
      case LayerKind::batchnorm:
        out["epsilon"] = spec.bn_epsilon;
        out["momentum"] = spec.bn_momentum;
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
      case LayerKind::add:
      case LayerKind::concat:
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
