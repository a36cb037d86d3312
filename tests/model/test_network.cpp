// Network parsing, validation, shape inference and round-trip (model/network.hpp).
#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "base/error.hpp"
#include "model/network.hpp"

using namespace cnnpar;
using nlohmann::json;

namespace {

// A LeNet-like network whose shapes are easy to follow by hand.
const char* kSmall = R"({
  "name": "small", "source": "test",
  "input": {"channels": 3, "height": 32, "width": 32},
  "layers": [
    {"name": "conv1", "type": "conv", "maps": 8, "kernel": 5},
    {"name": "relu1", "type": "relu"},
    {"name": "norm1", "type": "lrn", "size": 3, "alpha": 0.001, "beta": 0.5, "k": 2},
    {"name": "pool1", "type": "pool", "mode": "max", "kernel": 2},
    {"name": "conv2", "type": "conv", "maps": 16, "kernel": [3, 5], "stride": 2, "pad": 1},
    {"name": "pool2", "type": "pool", "mode": "avg", "kernel": 3, "stride": 1, "pad": 1},
    {"name": "fc1", "type": "fc", "outputs": 20},
    {"name": "drop1", "type": "dropout", "ratio": 0.25},
    {"name": "fc2", "type": "fc", "outputs": 10},
    {"name": "loss", "type": "softmax"}
  ]})";

/** The InputError thrown by parse_network on `text`, or nothing. */
std::optional<InputError> parse_error(const std::string& text) {
  try {
    parse_network(json::parse(text), "net.json");
  } catch (const InputError& error) {
    return error;
  }
  return std::nullopt;
}

/** kSmall with layer `index` replaced by `layer` (a JSON object). */
std::string with_layer(int index, const std::string& layer) {
  json doc = json::parse(kSmall);
  doc["layers"][std::size_t(index)] = json::parse(layer);
  return doc.dump();
}

}  // namespace

TEST_CASE("parse_network infers shapes by hand-computed formulas", "[network]") {
  const Network net = parse_network(json::parse(kSmall), "small.json");
  REQUIRE(net.name == "small");
  REQUIRE(net.source == "test");
  REQUIRE(net.layers.size() == 10);
  REQUIRE(net.input == Shape{3, 32, 32});
  // conv1: floor((32 + 0 - 5) / 1) + 1 = 28
  CHECK(net.layers[0].out == Shape{8, 28, 28});
  CHECK(net.layers[1].out == Shape{8, 28, 28});
  CHECK(net.layers[2].out == Shape{8, 28, 28});
  CHECK(net.layers[2].spec.lrn_size == 3);
  CHECK(net.layers[2].spec.lrn_k == 2.0);
  // pool1: stride defaults to the kernel: floor((28 - 2) / 2) + 1 = 14
  CHECK(net.layers[3].spec.stride == 2);
  CHECK(net.layers[3].out == Shape{8, 14, 14});
  // conv2: rows floor((14 + 2 - 3) / 2) + 1 = 7, cols floor((14 + 2 - 5) / 2) + 1 = 6
  CHECK(net.layers[4].spec.kernel_h == 3);
  CHECK(net.layers[4].spec.kernel_w == 5);
  CHECK(net.layers[4].in == Shape{8, 14, 14});
  CHECK(net.layers[4].out == Shape{16, 7, 6});
  // pool2 3x3/1 pad 1 keeps 7x6
  CHECK(net.layers[5].spec.pool_mode == PoolMode::avg);
  CHECK(net.layers[5].out == Shape{16, 7, 6});
  // fc1 flattens 16·7·6 = 672
  CHECK(net.layers[6].in.elements() == 672);
  CHECK(net.layers[6].out == Shape{20, 1, 1});
  CHECK(net.layers[7].spec.dropout_ratio == 0.25);
  CHECK(net.layers[9].in == Shape{10, 1, 1});
  CHECK(net.layers[9].out == Shape{10, 1, 1});
}

TEST_CASE("defaults: conv stride 1 and pad 0, pool mode max, lrn and dropout defaults", "[network]") {
  const Network net = parse_network(json::parse(R"({"name": "d",
    "input": {"channels": 1, "height": 9, "width": 9},
    "layers": [{"name": "c", "type": "conv", "maps": 2, "kernel": 3},
               {"name": "p", "type": "pool", "kernel": 3},
               {"name": "n", "type": "lrn"},
               {"name": "x", "type": "dropout"}]})"),
                                    "d.json");
  CHECK(net.source.empty());
  CHECK(net.layers[0].spec.stride == 1);
  CHECK(net.layers[0].spec.pad == 0);
  CHECK(net.layers[0].out == Shape{2, 7, 7});  // 9 - 3 + 1
  CHECK(net.layers[1].spec.pool_mode == PoolMode::max);
  CHECK(net.layers[1].spec.stride == 3);
  CHECK(net.layers[1].out == Shape{2, 2, 2});  // floor((7 - 3) / 3) + 1 = 2
  CHECK(net.layers[2].spec.lrn_size == 5);
  CHECK(net.layers[2].spec.lrn_alpha == 1e-4);
  CHECK(net.layers[2].spec.lrn_beta == 0.75);
  CHECK(net.layers[3].spec.dropout_ratio == 0.5);
}

TEST_CASE("bad fields are rejected with file, JSON path and value", "[network]") {
  struct Case {
    std::string text;
    std::string path;
    std::string value;
  };
  const std::vector<Case> cases = {
      {with_layer(0, R"({"name": "conv1", "type": "convolution", "maps": 8, "kernel": 5})"), "/layers/0/type",
       "convolution"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "maps": 8, "kernal": 5})"), "/layers/0/kernal", "5"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "maps": 0, "kernel": 5})"), "/layers/0/maps", "0"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "maps": -4, "kernel": 5})"), "/layers/0/maps", "-4"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "kernel": 5})"), "/layers/0/maps", "(missing)"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "maps": 8, "kernel": 5, "stride": 0})"),
       "/layers/0/stride", "0"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "maps": 8, "kernel": [5, 0]})"), "/layers/0/kernel/1",
       "0"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "maps": 8, "kernel": [5, 5, 5]})"), "/layers/0/kernel",
       "[5,5,5]"},
      {with_layer(0, R"({"name": "conv1", "type": "conv", "maps": 2.5, "kernel": 5})"), "/layers/0/maps", "2.5"},
      {with_layer(3, R"({"name": "pool1", "type": "pool", "mode": "median", "kernel": 2})"), "/layers/3/mode",
       "median"},
      {with_layer(6, R"({"name": "fc1", "type": "fc", "outputs": 0})"), "/layers/6/outputs", "0"},
      {with_layer(6, R"({"name": "fc1", "type": "fc"})"), "/layers/6/outputs", "(missing)"},
      {with_layer(7, R"({"name": "drop1", "type": "dropout", "ratio": 1.0})"), "/layers/7/ratio", "1.0"},
      {with_layer(1, R"({"name": "relu1", "type": "relu", "slope": 0.1})"), "/layers/1/slope", "0.1"},
      {with_layer(1, R"({"name": "conv1", "type": "relu"})"), "/layers/1/name", "conv1"},
      {with_layer(1, R"({"type": "relu"})"), "/layers/1/name", "(missing)"},
      {R"({"name": "x", "input": {"channels": 0, "height": 4, "width": 4}, "layers": [{"name": "r", "type": "relu"}]})",
       "/input/channels", "0"},
      {R"({"name": "x", "input": {"channels": 1, "height": 4, "width": 4}, "layers": []})", "/layers", "[]"},
      {R"({"name": "x", "input": {"channels": 1, "height": 4}, "layers": [{"name": "r", "type": "relu"}]})",
       "/input/width", "(missing)"},
      {R"({"name": "x", "inputs": {}, "layers": []})", "/inputs", "{}"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const auto error = parse_error(c.text);
    REQUIRE(error.has_value());
    CHECK(error->file() == "net.json");
    CHECK(error->json_path() == c.path);
    CHECK(error->value() == c.value);
    // what() is "FILE: PATH: REASON (value: VALUE)"
    CHECK_THAT(std::string(error->what()), Catch::Contains("net.json") && Catch::Contains(c.path));
  }
}

TEST_CASE("impossible shapes and misplaced layers are rejected", "[network]") {
  // Kernel larger than the padded input: 3x4x4 input, 5x5 kernel, pad 0.
  auto error = parse_error(R"({"name": "x", "input": {"channels": 3, "height": 4, "width": 4},
    "layers": [{"name": "c", "type": "conv", "maps": 2, "kernel": 5}]})");
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/0/kernel");
  CHECK(error->value() == "5");
  // Same with pad 1 is possible: floor((4 + 2 - 5) / 1) + 1 = 2.
  CHECK_FALSE(parse_error(R"({"name": "x", "input": {"channels": 3, "height": 4, "width": 4},
    "layers": [{"name": "c", "type": "conv", "maps": 2, "kernel": 5, "pad": 1}]})"));
  // The second of two conv layers runs out of input: 8 -> 4 -> kernel 5 > 4.
  error = parse_error(R"({"name": "x", "input": {"channels": 1, "height": 8, "width": 8},
    "layers": [{"name": "c1", "type": "conv", "maps": 2, "kernel": 5},
               {"name": "c2", "type": "conv", "maps": 2, "kernel": 5}]})");
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/1/kernel");
  // Pool after fc.
  error = parse_error(with_layer(8, R"({"name": "p", "type": "pool", "kernel": 1})"));
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/8/type");
  CHECK(error->value() == "pool");
  // Conv after fc.
  error = parse_error(with_layer(7, R"({"name": "c", "type": "conv", "maps": 4, "kernel": 1})"));
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/7/type");
  CHECK(error->value() == "conv");
  // Softmax not last.
  error = parse_error(with_layer(7, R"({"name": "s", "type": "softmax"})"));
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/7/type");
  CHECK(error->value() == "softmax");
  // Softmax on a spatial input (1x8x8).
  error = parse_error(R"({"name": "x", "input": {"channels": 1, "height": 8, "width": 8},
    "layers": [{"name": "s", "type": "softmax"}]})");
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/0/type");
}

TEST_CASE("infer_shapes checks networks built by hand", "[network]") {
  Network net;
  net.name = "hand";
  net.input = {2, 6, 6};
  Layer conv;
  conv.spec.name = "c";
  conv.spec.kind = LayerKind::conv;
  conv.spec.out_maps = 4;
  conv.spec.kernel_h = conv.spec.kernel_w = 3;
  conv.spec.stride = 3;
  net.layers.push_back(conv);
  infer_shapes(net, "hand");
  CHECK(net.layers[0].out == Shape{4, 2, 2});  // floor((6 - 3) / 3) + 1 = 2
  net.layers[0].spec.kernel_w = 7;
  try {
    infer_shapes(net, "hand");
    FAIL("expected InputError");
  } catch (const InputError& e) {
    CHECK(e.file() == "hand");
    CHECK(e.json_path() == "/layers/0/kernel");
    CHECK(e.value() == "7");
  }
  net.layers[0].spec.kernel_w = 3;
  net.layers[0].spec.stride = 0;
  CHECK_THROWS_AS(infer_shapes(net, "hand"), InputError);
}

TEST_CASE("to_json round-trips through parse_network", "[network]") {
  const Network net = parse_network(json::parse(kSmall), "small.json");
  const json doc = to_json(net);
  CHECK(doc["layers"][4]["kernel"] == json::array({3, 5}));
  CHECK(doc["layers"][0]["kernel"] == 5);
  const Network again = parse_network(doc, "again.json");
  REQUIRE(again.layers.size() == net.layers.size());
  CHECK(again.name == net.name);
  CHECK(again.source == net.source);
  CHECK(again.input == net.input);
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    INFO(net.layers[i].spec.name);
    const LayerSpec& a = net.layers[i].spec;
    const LayerSpec& b = again.layers[i].spec;
    CHECK(a.name == b.name);
    CHECK(a.kind == b.kind);
    CHECK(a.out_maps == b.out_maps);
    CHECK(a.kernel_h == b.kernel_h);
    CHECK(a.kernel_w == b.kernel_w);
    CHECK(a.stride == b.stride);
    CHECK(a.pad == b.pad);
    CHECK(a.pool_mode == b.pool_mode);
    CHECK(a.outputs == b.outputs);
    CHECK(a.lrn_size == b.lrn_size);
    CHECK(a.lrn_alpha == b.lrn_alpha);
    CHECK(a.lrn_beta == b.lrn_beta);
    CHECK(a.lrn_k == b.lrn_k);
    CHECK(a.dropout_ratio == b.dropout_ratio);
    CHECK(net.layers[i].in == again.layers[i].in);
    CHECK(net.layers[i].out == again.layers[i].out);
  }
  CHECK(to_json(again) == doc);
}

TEST_CASE("counted layers, fc layers, find and classes", "[network]") {
  const Network net = parse_network(json::parse(kSmall), "small.json");
  // conv1, pool1, conv2, pool2, fc1, fc2 are counted (Lee et al. count conv, pool, fc).
  CHECK(net.counted_layers() == std::vector<int>{0, 3, 4, 5, 6, 8});
  CHECK(net.fc_layers() == std::vector<int>{6, 8});
  CHECK(net.layers[0].counted());
  CHECK_FALSE(net.layers[1].counted());
  CHECK_FALSE(net.layers[2].counted());
  CHECK_FALSE(net.layers[7].counted());
  CHECK_FALSE(net.layers[9].counted());
  CHECK(net.layers[0].has_parameters());
  CHECK_FALSE(net.layers[3].has_parameters());
  CHECK(net.find("fc2") == 8);
  CHECK(net.find("conv1") == 0);
  CHECK(net.find("nope") == -1);
  CHECK(net.classes() == 10);
}

TEST_CASE("kind and mode names match the JSON spelling", "[network]") {
  CHECK(std::string(to_string(LayerKind::conv)) == "conv");
  CHECK(std::string(to_string(LayerKind::pool)) == "pool");
  CHECK(std::string(to_string(LayerKind::relu)) == "relu");
  CHECK(std::string(to_string(LayerKind::lrn)) == "lrn");
  CHECK(std::string(to_string(LayerKind::dropout)) == "dropout");
  CHECK(std::string(to_string(LayerKind::fc)) == "fc");
  CHECK(std::string(to_string(LayerKind::softmax)) == "softmax");
  CHECK(std::string(to_string(PoolMode::max)) == "max");
  CHECK(std::string(to_string(PoolMode::avg)) == "avg");
}

TEST_CASE("sizes whose products overflow are refused before any arithmetic", "[network]") {
  // 2^23 * 2^23 * 2^23 = 2^69 elements overflows int64: refused at /input, not wrapped.
  auto error = parse_error(R"({"name": "big", "input": {"channels": 8388608, "height": 8388608, "width": 8388608},
                               "layers": [{"name": "fc", "type": "fc", "outputs": 10}]})");
  REQUIRE(error);
  CHECK(error->json_path() == "/input");
  // A conv of 2^24 maps over 2^24 input maps with a 2^12-wide kernel: 2^24 * 2^24 * 2^12 = 2^60
  // weights > limits::kMaxTensorElements = 2^36 (the output, 2^24 x 1 x 1, is within bounds).
  error = parse_error(R"({"name": "wide", "input": {"channels": 16777216, "height": 4096, "width": 1},
                          "layers": [{"name": "c", "type": "conv", "maps": 16777216, "kernel": [4096, 1]}]})");
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/0/type");
  CHECK(error->reason() == "the layer has more than 68719476736 weights");
  // A pad of 9e15 (2 * pad overflowed in window_output) is refused at the field.
  error = parse_error(with_layer(0, R"({"name": "conv1", "type": "conv", "maps": 8, "kernel": 3, "pad": 9000000000000000})"));
  REQUIRE(error);
  CHECK(error->json_path() == "/layers/0/pad");
}
