// Networks that are graphs: inputs, add, concat, batchnorm, global and ceil-mode pools; the
// graph zoo against torchvision's and the papers' counts.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "base/error.hpp"
#include "model/cost.hpp"
#include "model/network.hpp"
#include "model/scenarios.hpp"
#include "tests/model/residual_block.hpp"

using namespace cnnpar;

namespace {

std::string error_of(const nlohmann::json& document) {
  try {
    parse_network(document, "net.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("a residual block: inputs, shapes and parameters", "[network][graph]") {
  const Network net = parse_network(residual_block(), "block.json");
  REQUIRE(net.layers.size() == 8);
  CHECK(net.layers[0].inputs == std::vector<int>{-1});
  CHECK(net.layers[2].inputs == std::vector<int>{1});  // default: the layer before
  CHECK(net.layers[3].inputs == std::vector<int>{2, 1});
  CHECK(net.layers[3].out == Shape{4, 8, 8});
  // Global pooling: the window is the 8x8 input, the output one value per channel.
  CHECK(net.layers[5].spec.kernel_h == 8);
  CHECK(net.layers[5].out == Shape{4, 1, 1});
  // Readers: bn1 feeds conv2 and the add.
  CHECK(net.readers()[1] == std::vector<int>{2, 3});
  // Parameters: conv1 3·4·9 = 108 without bias; batchnorm γ and β, 4 each; conv2 4·4·9 + 4 =
  // 148; fc 4·10 + 10 = 50.
  CHECK(layer_cost(net.layers[0]).parameters() == 108);
  CHECK(layer_cost(net.layers[1]).parameters() == 8);
  CHECK(layer_cost(net.layers[2]).parameters() == 148);
  CHECK(total_parameters(net) == 108 + 8 + 148 + 50);
  CHECK(net.layers[1].has_parameters());
  CHECK_FALSE(net.layers[1].has_gemm());
  CHECK(net.first_graph_layer() == 0);  // conv1 has no bias
  CHECK(net.graph_feature(1) == "a batchnorm layer");
}

TEST_CASE("concat stacks channels, and the costs of add, concat and batchnorm", "[network][graph]") {
  nlohmann::json doc = residual_block();
  doc["layers"][2]["maps"] = 6;
  doc["layers"][3]["type"] = "concat";
  const Network net = parse_network(doc, "concat.json");
  CHECK(net.layers[3].in == Shape{10, 8, 8});  // 6 + 4 channels
  CHECK(net.layers[3].out == Shape{10, 8, 8});
  CHECK(layer_cost(net.layers[3]).forward_flops == 0);  // a copy
  // add: (inputs − 1) additions per output element, 2 inputs of 4·8·8 read.
  const Network block = parse_network(residual_block(), "block.json");
  const LayerCost add = layer_cost(block.layers[3]);
  CHECK(add.forward_flops == 256);
  CHECK(add.input_elements == 512);
  CHECK(add.backward_data_flops == 0);
  // batchnorm on 4·8·8 = 256 elements: forward 4, weight gradient 3, backward 3 per element.
  const LayerCost bn = layer_cost(block.layers[1]);
  CHECK(bn.forward_flops == 4 * 256);
  CHECK(bn.backward_weight_flops == 3 * 256);
  CHECK(bn.backward_data_flops == 3 * 256);
}

TEST_CASE("ceil-mode pooling follows PyTorch's output size", "[network][graph]") {
  // PyTorch MaxPool2d(ceil_mode=True): out = ceil((in + 2p − k) / s) + 1, less one when the
  // last window would start in the right padding ((out − 1)·s >= in + p).
  const auto pooled = [](int in, int kernel, int stride, int pad) {
    nlohmann::json doc = {{"name", "p"},
                          {"input", {{"channels", 1}, {"height", in}, {"width", in}}},
                          {"layers", {{{"name", "pool"}, {"type", "pool"}, {"kernel", kernel}, {"stride", stride},
                                       {"pad", pad}, {"ceil", true}}}}};
    return parse_network(doc, "p.json").layers[0].out.h;
  };
  CHECK(pooled(112, 3, 2, 0) == 56);  // GoogLeNet maxpool1: floor mode would give 55
  CHECK(pooled(14, 2, 2, 0) == 7);
  CHECK(pooled(6, 2, 2, 1) == 4);     // ceil(6/2) + 1 = 4; 3·2 = 6 < 6 + 1
  CHECK(pooled(5, 2, 2, 1) == 3);     // ceil(5/2) + 1 = 4, but 3·2 = 6 >= 5 + 1
}

TEST_CASE("graph networks round-trip through JSON", "[network][graph]") {
  for (const char* name : {"resnet-18", "resnet-50", "resnet-20", "googlenet", "resnet-18-32"}) {
    const Network net = load_network(name);
    const Network again = parse_network(to_json(net), "again.json");
    REQUIRE(again.layers.size() == net.layers.size());
    for (std::size_t i = 0; i < net.layers.size(); ++i) {
      INFO(name << " layer " << net.layers[i].spec.name);
      CHECK(again.layers[i].inputs == net.layers[i].inputs);
      CHECK(again.layers[i].out == net.layers[i].out);
      CHECK(layer_cost(again.layers[i]).parameters() == layer_cost(net.layers[i]).parameters());
    }
    CHECK(to_json(again) == to_json(net));
  }
}

TEST_CASE("bad graphs name the file, the path and the value", "[network][graph]") {
  nlohmann::json doc = residual_block();
  doc["layers"][2]["inputs"] = {"sum"};
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/2/inputs/0") && Catch::Contains("cycle: conv2 → sum → conv2"));
  doc = residual_block();
  doc["layers"][3]["inputs"] = {"conv2", "conv9"};
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/3/inputs/1") && Catch::Contains("(value: conv9)"));
  doc = residual_block();
  doc["layers"][3].erase("inputs");
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/3") && Catch::Contains("add needs \"inputs\""));
  doc = residual_block();
  doc["layers"][3]["inputs"] = {"conv2"};
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/3/inputs") && Catch::Contains("two or more"));
  doc = residual_block();
  doc["layers"][2]["maps"] = 8;
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/3/inputs/1") && Catch::Contains("one shape"));
  doc = residual_block();
  doc["layers"][2]["stride"] = 2;
  doc["layers"][3]["type"] = "concat";
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/3/inputs/1") && Catch::Contains("height and width"));
  doc = residual_block();
  doc["layers"].insert(doc["layers"].begin() + 7, nlohmann::json::object({{"name", "bn2"}, {"type", "batchnorm"}}));
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/7/type") && Catch::Contains("flattened fc output"));
  doc = residual_block();
  doc["layers"][5]["kernel"] = 3;
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/5/kernel") && Catch::Contains("global"));
  doc = residual_block();
  doc["layers"].insert(doc["layers"].begin() + 3, nlohmann::json::object({{"name", "side"}, {"type", "relu"}, {"inputs", {"conv1"}}}));
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/3/name") && Catch::Contains("no layer reads"));
  doc = residual_block();
  doc["layers"][1]["inputs"] = {"conv2"};
  doc["layers"][2]["inputs"] = {"conv1"};
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/1/inputs/0") && Catch::Contains("listed after"));
  doc = residual_block();
  doc["layers"][4]["inputs"] = {"sum", "bn1"};
  CHECK_THAT(error_of(doc), Catch::Contains("/layers/4/inputs") && Catch::Contains("exactly one input"));
}

TEST_CASE("chains stay chains", "[network][graph]") {
  for (const char* name : {"vgg-a", "alexnet", "lenet-5", "vgg-a-32"}) {
    INFO(name);
    CHECK(load_network(name).first_graph_layer() == -1);
  }
}

// Independent sources: torchvision's documented parameter counts and "GFLOPS" (which count
// multiply-accumulates of the conv and fc layers) for its ImageNet models, and He et al.'s
// Table 6 for the CIFAR ResNets.
TEST_CASE("the graph zoo's parameters and multiply-accumulates", "[network][graph][zoo]") {
  const auto macs = [](const Network& net) {
    double total = 0;
    for (const Layer& layer : net.layers)
      if (layer.has_gemm()) total += layer_cost(layer).forward_flops / 2;
    return total;
  };
  constexpr double kMacTolerance = 0.01;  // the acceptance's 1 %
  struct Expected {
    const char* name;
    std::int64_t parameters;
    double giga_macs;
  };
  for (const Expected& e : {Expected{"resnet-18", 11'689'512, 1.81}, Expected{"resnet-34", 21'797'672, 3.66},
                            Expected{"resnet-50", 25'557'032, 4.09}, Expected{"googlenet", 6'624'904, 1.50}}) {
    INFO(e.name);
    const Network net = load_network(e.name);
    CHECK(total_parameters(net) == e.parameters);
    CHECK(macs(net) / 1e9 == Approx(e.giga_macs).epsilon(kMacTolerance));
  }
  // He et al. Table 6: ResNet-20 0.27 M and ResNet-56 0.85 M parameters with option A
  // shortcuts; our option B adds two 1x1 projections with their batchnorms:
  // 16·32 + 2·32 + 32·64 + 2·64 = 2,752 parameters.
  constexpr std::int64_t kProjections = 16 * 32 + 2 * 32 + 32 * 64 + 2 * 64;
  constexpr double kPaperRounding = 0.005e6;  // the table's two decimals
  CHECK(std::abs(double(total_parameters(load_network("resnet-20")) - kProjections) - 0.27e6) <= kPaperRounding);
  CHECK(std::abs(double(total_parameters(load_network("resnet-56")) - kProjections) - 0.85e6) <= kPaperRounding);
  // Output sizes of He et al. Table 1 and Szegedy et al. Table 1.
  const Network r50 = load_network("resnet-50");
  CHECK(r50.layers[std::size_t(r50.find("layer4_2_relu"))].out == Shape{2048, 7, 7});
  CHECK(r50.layers[std::size_t(r50.find("layer1_0_add"))].out == Shape{256, 56, 56});
  const Network g = load_network("googlenet");
  CHECK(g.layers[std::size_t(g.find("inception3a_concat"))].out == Shape{256, 28, 28});
  CHECK(g.layers[std::size_t(g.find("inception4e_concat"))].out == Shape{832, 14, 14});
  CHECK(g.layers[std::size_t(g.find("inception5b_concat"))].out == Shape{1024, 7, 7});
}
