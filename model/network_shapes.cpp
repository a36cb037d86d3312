// Shape inference over the network's DAG (model/network.hpp infer_shapes).
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/limits.hpp"
#include "model/network.hpp"
#include "model/window.hpp"

namespace cnnpar {
namespace {

[[noreturn]] void shape_error(const std::string& file, int index, const std::string& field,
                              const std::string& value, const std::string& reason) {
  throw InputError(file, fmt::format("/layers/{}/{}", index, field), value, reason);
}

std::string shape_text(const Shape& shape) { return fmt::format("({}, {}, {})", shape.c, shape.h, shape.w); }

/** model/window.hpp's window_count, with the impossible cases rejected. */
std::int64_t window_output(const std::string& file, int index, const char* axis, std::int64_t in,
                           std::int64_t kernel, std::int64_t stride, std::int64_t pad, bool ceil) {
  const std::int64_t padded = in + 2 * pad;
  if (kernel > padded)
    shape_error(file, index, "kernel", std::to_string(kernel),
                fmt::format("kernel {} {} is larger than the padded input {} ({} + 2·{})", axis, kernel,
                            padded, in, pad));
  const std::int64_t out = window_count(in, kernel, stride, pad, ceil);
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
  for (const Shape& shape : {layer.in, layer.out})
    if (bounded_product(shape.c, shape.h, shape.w) < 0)
      shape_error(file, index, "type", to_string(layer.spec.kind),
                  fmt::format("a tensor {} has more than {} elements per image", shape_text(shape),
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

void window_layer(const std::string& file, int i, Layer& layer) {
  LayerSpec& spec = layer.spec;
  const Shape& in = layer.in;
  if (spec.kind == LayerKind::pool && spec.global) {
    spec.kernel_h = in.h;
    spec.kernel_w = in.w;
    spec.stride = 1;
    spec.pad = 0;
  }
  if (spec.kind == LayerKind::conv && spec.out_maps < 1)
    shape_error(file, i, "maps", std::to_string(spec.out_maps), "maps must be positive");
  if (spec.kernel_h < 1 || spec.kernel_w < 1)
    shape_error(file, i, "kernel", fmt::format("[{}, {}]", spec.kernel_h, spec.kernel_w), "kernel must be positive");
  if (spec.stride < 1) shape_error(file, i, "stride", std::to_string(spec.stride), "stride must be positive");
  if (spec.pad < 0) shape_error(file, i, "pad", std::to_string(spec.pad), "pad must not be negative");
  if (spec.kind == LayerKind::pool && (spec.pad >= spec.kernel_h || spec.pad >= spec.kernel_w))
    shape_error(file, i, "pad", std::to_string(spec.pad),
                "pool padding must be smaller than the kernel (a window would see only padding)");
  layer.out.c = spec.kind == LayerKind::conv ? spec.out_maps : in.c;
  layer.out.h = window_output(file, i, "rows", in.h, spec.kernel_h, spec.stride, spec.pad, spec.ceil);
  layer.out.w = window_output(file, i, "columns", in.w, spec.kernel_w, spec.stride, spec.pad, spec.ceil);
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
  const int count = int(network.layers.size());
  // flat[i]: layer i's output is a flattened vector (an fc output, or computed from one).
  std::vector<char> flat(std::size_t(count), 0);
  std::vector<int> reader_count(std::size_t(count), 0);
  for (int i = 0; i < count; ++i) {
    Layer& layer = network.layers[std::size_t(i)];
    const LayerSpec& spec = layer.spec;
    if (layer.inputs.empty()) layer.inputs = {i - 1};  // a network built by hand: a chain
    const auto name_of = [&](int input) { return input < 0 ? std::string("(network input)") : network.layers[std::size_t(input)].spec.name; };
    const auto field_of = [&](std::size_t k) { return spec.inputs.empty() ? std::string("name") : fmt::format("inputs/{}", k); };
    std::vector<Shape> shapes;
    bool reads_flat = false;
    for (std::size_t k = 0; k < layer.inputs.size(); ++k) {
      const int input = layer.inputs[k];
      if (input < -1 || input >= i || (input == -1 && i > 0))
        shape_error(file, i, field_of(k), std::to_string(input),
                    "a layer reads layers listed before it (the first layer reads the network input)");
      shapes.push_back(input < 0 ? network.input : network.layers[std::size_t(input)].out);
      if (input >= 0) {
        reads_flat = reads_flat || flat[std::size_t(input)];
        ++reader_count[std::size_t(input)];
      }
    }
    const bool joins = spec.kind == LayerKind::add || spec.kind == LayerKind::concat;
    if (joins && shapes.size() < 2)
      shape_error(file, i, "inputs", std::to_string(shapes.size()), fmt::format("{} joins two or more inputs", to_string(spec.kind)));
    if (!joins && shapes.size() != 1)
      shape_error(file, i, "inputs", std::to_string(shapes.size()), fmt::format("a {} layer reads exactly one input", to_string(spec.kind)));
    layer.in = shapes.front();
    switch (spec.kind) {
      case LayerKind::conv:
      case LayerKind::pool:
        if (reads_flat)
          shape_error(file, i, "type", to_string(spec.kind),
                      fmt::format("a {} layer cannot follow an fc layer (its input is flattened)", to_string(spec.kind)));
        window_layer(file, i, layer);
        break;
      case LayerKind::batchnorm:
        if (reads_flat)
          shape_error(file, i, "type", "batchnorm",
                      fmt::format("batchnorm normalises each channel over (N, H, W); its input '{}' is a flattened "
                                  "fc output {}", name_of(layer.inputs.front()), shape_text(layer.in)));
        if (!(spec.bn_epsilon > 0))
          shape_error(file, i, "epsilon", fmt::format("{}", spec.bn_epsilon), "epsilon must be positive");
        if (!(spec.bn_momentum >= 0 && spec.bn_momentum <= 1))
          shape_error(file, i, "momentum", fmt::format("{}", spec.bn_momentum), "momentum must be in [0, 1]");
        layer.out = layer.in;
        break;
      case LayerKind::add:
        for (std::size_t k = 1; k < shapes.size(); ++k)
          if (!(shapes[k] == shapes.front()))
            shape_error(file, i, field_of(k), name_of(layer.inputs[k]),
                        fmt::format("add sums inputs of one shape: '{}' is {}, '{}' is {}", name_of(layer.inputs[k]),
                                    shape_text(shapes[k]), name_of(layer.inputs.front()), shape_text(shapes.front())));
        layer.out = layer.in;
        break;
      case LayerKind::concat: {
        std::int64_t channels = 0;
        for (std::size_t k = 0; k < shapes.size(); ++k) {
          if (shapes[k].h != shapes.front().h || shapes[k].w != shapes.front().w)
            shape_error(file, i, field_of(k), name_of(layer.inputs[k]),
                        fmt::format("concat stacks channels of inputs of one height and width: '{}' is {}, '{}' is {}",
                                    name_of(layer.inputs[k]), shape_text(shapes[k]), name_of(layer.inputs.front()),
                                    shape_text(shapes.front())));
          channels += shapes[k].c;  // each below limits::kMaxTensorElements, so no overflow
        }
        layer.in = Shape{channels, shapes.front().h, shapes.front().w};
        layer.out = layer.in;
        break;
      }
      case LayerKind::fc:
        if (spec.outputs < 1) shape_error(file, i, "outputs", std::to_string(spec.outputs), "outputs must be positive");
        layer.out = Shape{spec.outputs, 1, 1};
        break;
      case LayerKind::softmax:
        if (i != count - 1)
          shape_error(file, i, "type", "softmax", "softmax (with the loss) must be the last layer");
        if (layer.in.h != 1 || layer.in.w != 1)
          shape_error(file, i, "type", "softmax",
                      fmt::format("softmax needs a (classes, 1, 1) input, got {}", shape_text(layer.in)));
        layer.out = layer.in;
        break;
      case LayerKind::lrn:
        if (spec.lrn_size < 1 || spec.lrn_size % 2 == 0)
          shape_error(file, i, "size", std::to_string(spec.lrn_size), "lrn size must be a positive odd number");
        layer.out = layer.in;
        break;
      case LayerKind::dropout:
        if (!(spec.dropout_ratio >= 0.0 && spec.dropout_ratio < 1.0))
          shape_error(file, i, "ratio", fmt::format("{}", spec.dropout_ratio), "dropout ratio must be in [0, 1)");
        layer.out = layer.in;
        break;
      case LayerKind::relu:
        layer.out = layer.in;
        break;
    }
    flat[std::size_t(i)] = spec.kind == LayerKind::fc || (reads_flat && spec.kind != LayerKind::conv && spec.kind != LayerKind::pool);
    check_tensor_size(file, i, layer);
  }
  // One output: every other layer feeds a later one.
  for (int i = 0; i + 1 < count; ++i)
    if (reader_count[std::size_t(i)] == 0)
      shape_error(file, i, "name", network.layers[std::size_t(i)].spec.name,
                  "no layer reads this layer's output; only the last layer may end the network");
}

}  // namespace cnnpar
