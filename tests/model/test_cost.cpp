// Per-layer cost model (model/cost.hpp): FLOPs, parameters, Lee et al. GEMM shapes
// (Eq. 4-8), gradient counts (Eq. 9-10) and the replicated-fc exchange (Sec. III-C.2).
#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "model/cost.hpp"
#include "model/network.hpp"

using namespace cnnpar;

namespace {

// Shapes by hand (floor((in + 2·pad − k) / stride) + 1):
//   0 conv1  3x32x32 -> 8x28x28      (5x5)
//   1 relu1, 2 norm1 (lrn size 3)
//   3 pool1  8x28x28 -> 8x14x14      (max 2x2/2)
//   4 conv2  8x14x14 -> 16x7x6       (3x5 kernel, stride 2, pad 1)
//   5 pool2  16x7x6 -> 16x7x6        (avg 3x3/1 pad 1)
//   6 fc1    672 -> 20,  7 drop1,  8 fc2  20 -> 10,  9 loss
const char* kSmall = R"({
  "name": "small", "source": "test",
  "input": {"channels": 3, "height": 32, "width": 32},
  "layers": [
    {"name": "conv1", "type": "conv", "maps": 8, "kernel": 5},
    {"name": "relu1", "type": "relu"},
    {"name": "norm1", "type": "lrn", "size": 3},
    {"name": "pool1", "type": "pool", "mode": "max", "kernel": 2},
    {"name": "conv2", "type": "conv", "maps": 16, "kernel": [3, 5], "stride": 2, "pad": 1},
    {"name": "pool2", "type": "pool", "mode": "avg", "kernel": 3, "stride": 1, "pad": 1},
    {"name": "fc1", "type": "fc", "outputs": 20},
    {"name": "drop1", "type": "dropout"},
    {"name": "fc2", "type": "fc", "outputs": 10},
    {"name": "loss", "type": "softmax"}
  ]})";

Network small() { return parse_network(nlohmann::json::parse(kSmall), "small.json"); }

}  // namespace

TEST_CASE("conv layer: Intel FLOP count, parameters and Lee GEMM shapes", "[cost]") {
  const Network net = small();
  const Layer& conv1 = net.layers[0];
  const LayerCost cost = layer_cost(conv1);
  // 2·ifm·ofm·kw·kh·ow·oh = 2·3·8·5·5·28·28 = 940,800 per image, the same for all three passes.
  CHECK(cost.forward_flops == 940800.0);
  CHECK(cost.backward_data_flops == 940800.0);
  CHECK(cost.backward_weight_flops == 940800.0);
  CHECK(cost.weights == 600);  // ofm·ifm·kh·kw = 8·3·5·5
  CHECK(cost.biases == 8);     // ofm
  CHECK(cost.parameters() == 608);
  CHECK(cost.parameter_bytes() == 2432.0);  // 4·608
  CHECK(cost.input_elements == 3072);       // 3·32·32
  CHECK(cost.output_elements == 6272);      // 8·28·28

  // N = 4: D_o = 8, D_i·R_f·C_f = 3·5·5 = 75, N·R_o·C_o = 4·28·28 = 3136.
  CHECK(forward_gemm(conv1, 4) == GemmShape{8, 3136, 75});         // W · im2col(A)
  CHECK(backward_data_gemm(conv1, 4) == GemmShape{75, 3136, 8});   // W^T · E
  CHECK(backward_weight_gemm(conv1, 4) == GemmShape{8, 75, 3136}); // E · C^T
  // Each GEMM is N times the per-image count: 2·8·3136·75 = 3,763,200 = 4·940,800.
  CHECK(forward_gemm(conv1, 4).flops() == 3763200.0);
  CHECK(backward_data_gemm(conv1, 4).flops() == 3763200.0);
  CHECK(backward_weight_gemm(conv1, 4).flops() == 3763200.0);
  CHECK(forward_gemm(conv1, 4).to_string() == "gemm 8x3136x75");
}

TEST_CASE("conv layer with a non-square kernel, stride and pad", "[cost]") {
  const Network net = small();
  const Layer& conv2 = net.layers[4];
  // 2·8·16·5·3·6·7 = 161,280 per image
  CHECK(layer_cost(conv2).forward_flops == 161280.0);
  CHECK(layer_cost(conv2).weights == 1920);  // 16·8·3·5
  // N = 2: D_i·R_f·C_f = 8·3·5 = 120, N·R_o·C_o = 2·7·6 = 84
  CHECK(forward_gemm(conv2, 2) == GemmShape{16, 84, 120});
  CHECK(backward_data_gemm(conv2, 2) == GemmShape{120, 84, 16});
  CHECK(backward_weight_gemm(conv2, 2) == GemmShape{16, 120, 84});
}

TEST_CASE("fc layer: 2·K_b·K_c per pass and Lee GEMM shapes", "[cost]") {
  const Network net = small();
  const Layer& fc1 = net.layers[6];
  const LayerCost cost = layer_cost(fc1);
  // K_b = 16·7·6 = 672, K_c = 20: 2·672·20 = 26,880
  CHECK(cost.forward_flops == 26880.0);
  CHECK(cost.backward_data_flops == 26880.0);
  CHECK(cost.backward_weight_flops == 26880.0);
  CHECK(cost.weights == 13440);
  CHECK(cost.biases == 20);
  CHECK(forward_gemm(fc1, 4) == GemmShape{20, 4, 672});          // W (K_c × K_b) · A (K_b × N)
  CHECK(backward_data_gemm(fc1, 4) == GemmShape{672, 4, 20});    // W^T (K_b × K_c) · E (K_c × N)
  CHECK(backward_weight_gemm(fc1, 4) == GemmShape{20, 672, 4});  // E (K_c × N) · A^T (N × K_b)
  CHECK(forward_gemm(fc1, 4).to_string() == "gemm 20x4x672");
}

TEST_CASE("element-wise layers use the documented small counts", "[cost]") {
  const Network net = small();
  // relu1 on 8·28·28 = 6272 elements: 1 per element each way.
  CHECK(layer_cost(net.layers[1]).forward_flops == 6272.0);
  CHECK(layer_cost(net.layers[1]).backward_data_flops == 6272.0);
  // lrn size 3: forward (2·3 + 4)·6272 = 62,720, backward (2·3 + 7)·6272 = 81,536.
  CHECK(layer_cost(net.layers[2]).forward_flops == 62720.0);
  CHECK(layer_cost(net.layers[2]).backward_data_flops == 81536.0);
  // max pool 2x2 on 8x14x14 = 1568 outputs: forward 4·1568 = 6272, backward 1568.
  CHECK(layer_cost(net.layers[3]).forward_flops == 6272.0);
  CHECK(layer_cost(net.layers[3]).backward_data_flops == 1568.0);
  // avg pool 3x3 on 16x7x6 = 672 outputs: 9·672 = 6048 both ways.
  CHECK(layer_cost(net.layers[5]).forward_flops == 6048.0);
  CHECK(layer_cost(net.layers[5]).backward_data_flops == 6048.0);
  // dropout on 20: 20 each way; softmax on 10: 5·10 forward, 10 backward.
  CHECK(layer_cost(net.layers[7]).forward_flops == 20.0);
  CHECK(layer_cost(net.layers[9]).forward_flops == 50.0);
  CHECK(layer_cost(net.layers[9]).backward_data_flops == 10.0);
  for (int i : {1, 2, 3, 5, 7, 9}) {
    INFO(net.layers[std::size_t(i)].spec.name);
    const LayerCost cost = layer_cost(net.layers[std::size_t(i)]);
    CHECK(cost.parameters() == 0);
    CHECK(cost.backward_weight_flops == 0.0);
    CHECK(forward_gemm(net.layers[std::size_t(i)], 4) == GemmShape{});
    CHECK(backward_data_gemm(net.layers[std::size_t(i)], 4) == GemmShape{});
    CHECK(backward_weight_gemm(net.layers[std::size_t(i)], 4) == GemmShape{});
  }
}

TEST_CASE("gradient counts follow Lee Eq. 9 and 10", "[cost]") {
  const Network net = small();
  const GradientCounts counts = gradient_counts(net);
  // S_w = conv 8·3·5·5 + 16·8·3·5 + fc 672·20 + 20·10 = 600 + 1920 + 13440 + 200 = 16,160
  CHECK(counts.weights == 16160);
  // S_b = 8 + 16 + 20 + 10 = 54
  CHECK(counts.biases == 54);
  CHECK(total_parameters(net) == 16214);
}

TEST_CASE("replicated fc exchange: Lee's VGG-A fc6 example", "[cost]") {
  // Lee et al. Sec. III-C.2: K_b = 25,088 (512·7·7), K_c = 4,096, N = 256.
  const Network net = parse_network(nlohmann::json::parse(R"({"name": "fc6",
      "input": {"channels": 512, "height": 7, "width": 7},
      "layers": [{"name": "fc6", "type": "fc", "outputs": 4096}]})"),
                                    "fc6.json");
  const ReplicatedFcExchange exchange = replicated_fc_exchange(net.layers[0], 256);
  CHECK(exchange.gradient_values == 102760448);  // K_b·K_c, the paper's figure
  CHECK(exchange.gathered_values == 7471104);    // (K_b + K_c)·N, the paper's figure
  // "the reduction of 392MB is replaced with the gathering of 28.5MB" (4-byte floats, MiB)
  constexpr double MiB = 1024.0 * 1024.0;
  CHECK(4.0 * double(exchange.gradient_values) / MiB == Approx(392.0).margin(0.05));
  CHECK(4.0 * double(exchange.gathered_values) / MiB == Approx(28.5).margin(0.05));
  CHECK_THROWS_AS(replicated_fc_exchange(small().layers[0], 256), InternalError);
}

TEST_CASE("GemmShape prints as gemm MxNxK and counts 2·m·n·k", "[cost]") {
  const GemmShape shape{64, 50176, 27};
  CHECK(shape.to_string() == "gemm 64x50176x27");
  CHECK(shape.flops() == 2.0 * 64 * 50176 * 27);
}
