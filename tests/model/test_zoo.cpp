// The network zoo and platform files under scenarios/: every file loads, and the
// numbers match the papers they come from (parameter counts, layer counts, shapes,
// platform ratios).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>

#include "base/json_node.hpp"
#include "model/cost.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/scenarios.hpp"

using namespace cnnpar;
namespace fs = std::filesystem;

namespace {

const fs::path kScenarios = fs::path(CNNPAR_SOURCE_DIR) / "scenarios";

std::vector<std::string> names_in(const std::string& folder) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kScenarios / folder))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

Network source_network(const std::string& name) {
  const std::string path = (kScenarios / "networks" / (name + ".json")).string();
  return parse_network(read_json_file(path), path);
}

struct Census {
  int conv = 0, pool = 0, fc = 0;
};
Census census(const Network& net) {
  Census c;
  for (const Layer& layer : net.layers) {
    c.conv += layer.spec.kind == LayerKind::conv;
    c.pool += layer.spec.kind == LayerKind::pool;
    c.fc += layer.spec.kind == LayerKind::fc;
  }
  return c;
}

const Layer& layer(const Network& net, const std::string& name) {
  const int index = net.find(name);
  REQUIRE(index >= 0);
  return net.layers[std::size_t(index)];
}

}  // namespace

TEST_CASE("every zoo network parses, is embedded, and ends in a softmax", "[zoo]") {
  const auto names = names_in("networks");
  // 27 files: lenet-5, 2 Veeriah, 4 Marques, alexnet, vgg-a, vgg-128/256/512, vgg-a-32, 7 BPT-CNN;
  // the graphs resnet-18/34/50, resnet-20/56, googlenet and resnet-18-32.
  REQUIRE(names.size() == 27);
  const auto embedded = scenario_names("networks");
  for (const std::string& name : names) {
    INFO(name);
    const Network from_source = source_network(name);
    CHECK(from_source.name == name);
    CHECK(from_source.source.size() > 20);
    REQUIRE(from_source.layers.back().spec.kind == LayerKind::softmax);
    // Listed in scenarios/files.cmake, so embedded and loadable by name with the same content.
    CHECK(std::find(embedded.begin(), embedded.end(), name) != embedded.end());
    const Network by_name = load_network(name);
    CHECK(to_json(by_name) == to_json(from_source));
  }
}

TEST_CASE("VGG-A: Lee's 16 layers, 133 M parameters, pool5 512x7x7", "[zoo]") {
  const Network net = load_network("vgg-a");
  const Census c = census(net);
  CHECK(c.conv == 8);
  CHECK(c.pool == 5);
  CHECK(c.fc == 3);
  CHECK(net.counted_layers().size() == 16);  // Lee et al.: "a deep CNN with 16 layers"
  CHECK(net.input == Shape{3, 224, 224});
  CHECK(layer(net, "pool5").out == Shape{512, 7, 7});
  CHECK(layer(net, "fc6").in.elements() == 25088);  // Lee: K_b = 25,088
  CHECK(layer(net, "fc6").spec.outputs == 4096);    // Lee: K_c = 4,096
  CHECK(net.classes() == 1000);
  // Hand count: conv weights 3·64·9 + 64·128·9 + 128·256·9 + 256·256·9 + 256·512·9 + 3·512·512·9
  // = 9,217,728, conv biases 64+128+256+256+512·4 = 2,752, fc 25088·4096 + 4096·4096 + 4096·1000
  // = 123,633,664 weights and 9,192 biases: 132,863,336 in all.
  CHECK(total_parameters(net) == 132863336);
  // Lee: "133 millions of parameters" (within 1 %).
  CHECK(double(total_parameters(net)) == Approx(133e6).epsilon(0.01));
  // Lee Sec. III-C.2: the fc layers have "about 103 millions, 17 millions, and 4 millions" weights.
  CHECK(double(layer_cost(layer(net, "fc6")).weights) == Approx(103e6).epsilon(0.01));
  CHECK(double(layer_cost(layer(net, "fc7")).weights) == Approx(17e6).epsilon(0.02));
  CHECK(double(layer_cost(layer(net, "fc8")).weights) == Approx(4e6).epsilon(0.03));
  // Eq. 9 + Eq. 10 cover every parameter.
  const GradientCounts counts = gradient_counts(net);
  CHECK(counts.weights + counts.biases == total_parameters(net));
  CHECK(counts.biases == 2752 + 9192);
  // Lee's replicated-fc example on the zoo file itself.
  const ReplicatedFcExchange exchange = replicated_fc_exchange(layer(net, "fc6"), 256);
  CHECK(exchange.gradient_values == 102760448);
  CHECK(exchange.gathered_values == 7471104);
}

TEST_CASE("VGG-128/256/512 match Lee's 48, 76 and 140 million parameters", "[zoo]") {
  // Every conv layer has m maps, fc unchanged: conv 3·m·9 + 7·m·m·9 weights + 8·m biases,
  // fc6 (m·49)·4096 + 4096, fc7 4096·4096 + 4096, fc8 4096·1000 + 1000.
  const std::map<std::string, std::pair<std::int64_t, double>> expected = {
      {"vgg-128", {47609192, 48e6}},    // 1,036,672 conv + 46,572,520 fc
      {"vgg-256", {76400360, 76e6}},    // 4,137,728 conv + 72,262,632 fc
      {"vgg-512", {140175848, 140e6}},  // 16,532,992 conv + 123,642,856 fc
  };
  for (const auto& [name, counts] : expected) {
    INFO(name);
    const Network net = load_network(name);
    const std::int64_t m = std::stoll(name.substr(4));
    CHECK(net.counted_layers().size() == 16);
    for (const Layer& l : net.layers)
      if (l.spec.kind == LayerKind::conv) CHECK(l.spec.out_maps == m);
    CHECK(layer(net, "fc6").in.elements() == m * 49);
    CHECK(total_parameters(net) == counts.first);
    CHECK(double(total_parameters(net)) == Approx(counts.second).epsilon(0.05));
  }
}

TEST_CASE("AlexNet: about 61 M parameters, C1 55x55, fc6 K_b 9216", "[zoo]") {
  const Network net = load_network("alexnet");
  const Census c = census(net);
  CHECK(c.conv == 5);
  CHECK(c.pool == 3);
  CHECK(c.fc == 3);
  CHECK(layer(net, "conv1").out == Shape{96, 55, 55});  // the Intel note's C1 55x55
  CHECK(layer(net, "pool5").out == Shape{256, 6, 6});
  CHECK(layer(net, "fc6").in.elements() == 9216);
  // Single tower, by hand: conv 34,944 + 614,656 + 885,120 + 1,327,488 + 884,992,
  // fc 37,752,832 + 16,781,312 + 4,097,000 = 62,378,344.
  CHECK(total_parameters(net) == 62378344);
  CHECK(double(total_parameters(net)) == Approx(61e6).epsilon(0.03));
}

TEST_CASE("LeNet-5 against LeCun et al. 1998's per-layer counts", "[zoo]") {
  const Network net = load_network("lenet-5");
  CHECK(net.input == Shape{1, 32, 32});
  CHECK(layer(net, "c1").out == Shape{6, 28, 28});
  CHECK(layer(net, "s2").out == Shape{6, 14, 14});
  CHECK(layer(net, "c3").out == Shape{16, 10, 10});
  CHECK(layer(net, "s4").out == Shape{16, 5, 5});
  CHECK(layer(net, "c5").out == Shape{120, 1, 1});
  // The paper: C1 has 156 trainable parameters, C5 48,120, F6 10,164.
  CHECK(layer_cost(layer(net, "c1")).parameters() == 156);
  CHECK(layer_cost(layer(net, "c5")).parameters() == 48120);
  CHECK(layer_cost(layer(net, "f6")).parameters() == 10164);
  // Paper total 156 + 12 + 1,516 + 32 + 48,120 + 10,164 + 840 = 60,840; ours has a fully
  // connected C3 (2,416), parameter-free pools and a 850-parameter fc output: 61,706.
  CHECK(total_parameters(net) == 61706);
  CHECK(double(total_parameters(net)) == Approx(60840).epsilon(0.02));
  CHECK(net.classes() == 10);
}

TEST_CASE("Veeriah & Modi nets: 20 and 50 5x5 filters, fc 300 / 600, output 10", "[zoo]") {
  // MNIST 1x28x28: conv1 20·25 + 20 = 520 (24x24, pool 12x12), conv2 50·20·25 + 50 = 25,050
  // (8x8, pool 4x4), fc1 800·300 + 300 = 240,300, fc2 300·10 + 10 = 3,010: 268,880.
  const Network mnist = load_network("veeriah-mnist");
  CHECK(layer(mnist, "pool2").out == Shape{50, 4, 4});
  CHECK(layer(mnist, "fc1").spec.outputs == 300);
  CHECK(total_parameters(mnist) == 268880);
  // CIFAR-10 3x32x32: conv1 20·75 + 20 = 1,520 (28x28, pool 14x14), conv2 25,050 (10x10,
  // pool 5x5), fc1 1250·600 + 600 = 750,600, fc2 600·10 + 10 = 6,010: 783,180.
  const Network cifar = load_network("veeriah-cifar10");
  CHECK(layer(cifar, "pool2").out == Shape{50, 5, 5});
  CHECK(layer(cifar, "fc1").spec.outputs == 600);
  CHECK(total_parameters(cifar) == 783180);
  for (const Network* net : {&mnist, &cifar}) {
    const Census c = census(*net);
    CHECK(c.conv == 2);
    CHECK(c.pool == 2);
    CHECK(c.fc == 2);
    CHECK(net->classes() == 10);
  }
}

TEST_CASE("Marques et al. CIFAR-10 nets: C1:C2 kernels of 5x5", "[zoo]") {
  // conv1 C1·3·25 + C1, conv2 C2·C1·25 + C2 (32 -> 28 -> 14 -> 10 -> 5), fc 10·C2·25 + 10.
  const std::map<std::string, std::tuple<int, int, std::int64_t>> nets = {
      {"marques-50-500", {50, 500, 754310}},
      {"marques-150-800", {150, 800, 3212210}},
      {"marques-300-1000", {300, 1000, 7773810}},
      {"marques-500-1500", {500, 1500, 19164510}},
  };
  for (const auto& [name, expected] : nets) {
    INFO(name);
    const auto [c1, c2, params] = expected;
    const Network net = load_network(name);
    CHECK(layer(net, "c1").spec.out_maps == c1);
    CHECK(layer(net, "c2").spec.out_maps == c2);
    CHECK(layer(net, "c1").spec.kernel_h == 5);
    CHECK(layer(net, "pool2").out == Shape{c2, 5, 5});
    CHECK(census(net).fc == 1);
    CHECK(net.classes() == 10);
    CHECK(total_parameters(net) == params);
  }
}

TEST_CASE("BPT-CNN Table 2 cases", "[zoo]") {
  // Table 2: layers(Conv), filters(Conv), layers(FC), neurons(FC) for case1..7.
  struct Row {
    int conv, filters, fc, neurons;
  };
  const Row table[7] = {{2, 4, 3, 500},    {4, 4, 3, 1000},   {6, 8, 5, 1500},   {8, 8, 5, 1500},
                        {8, 10, 7, 2000},  {10, 10, 7, 2000}, {10, 12, 7, 2000}};
  for (int i = 0; i < 7; ++i) {
    const std::string name = "bpt-cnn-case" + std::to_string(i + 1);
    INFO(name);
    const Network net = load_network(name);
    const Census c = census(net);
    CHECK(c.conv == table[i].conv);
    CHECK(c.fc == table[i].fc);
    CHECK(c.pool == table[i].conv / 2);  // assumed: a pool after every second conv
    for (const Layer& l : net.layers) {
      if (l.spec.kind == LayerKind::conv) CHECK(l.spec.out_maps == table[i].filters);
    }
    const auto fcs = net.fc_layers();
    for (std::size_t j = 0; j + 1 < fcs.size(); ++j)
      CHECK(net.layers[std::size_t(fcs[j])].spec.outputs == table[i].neurons);
    CHECK(net.classes() == 1000);
    // Last conv output: filters x (224 / 2^pools)^2.
    const std::int64_t side = 224 >> (table[i].conv / 2);
    CHECK(net.layers[std::size_t(fcs.front())].in == Shape{table[i].filters, side, side});
  }
}

TEST_CASE("vgg-a-32: VGG-A convs on 32x32 CIFAR-10 inputs with fc 512/512/10", "[zoo]") {
  const Network net = load_network("vgg-a-32");
  CHECK(net.input == Shape{3, 32, 32});
  CHECK(net.counted_layers().size() == 16);
  CHECK(layer(net, "pool5").out == Shape{512, 1, 1});
  CHECK(layer(net, "fc6").spec.outputs == 512);
  CHECK(layer(net, "fc7").spec.outputs == 512);
  CHECK(net.classes() == 10);
  // conv as VGG-A (9,217,728 + 2,752) + fc 512·512·2 + 512·10 weights + 1,034 biases = 9,750,922
  CHECK(total_parameters(net) == 9750922);
}

TEST_CASE("every platform file parses and is embedded", "[zoo][platform]") {
  const auto names = names_in("platforms");
  // the ten sourced ones and five fitted by scripts/fit_lee.sh, fit_veeriah.sh and fit_marques.sh
  REQUIRE(names.size() == 15);
  const auto embedded = scenario_names("platforms");
  for (const std::string& name : names) {
    INFO(name);
    const std::string path = (kScenarios / "platforms" / (name + ".json")).string();
    const Platform platform = parse_platform(read_json_file(path), path);
    CHECK(platform.name == name);
    CHECK(platform.source.size() > 50);
    CHECK(std::find(embedded.begin(), embedded.end(), name) != embedded.end());
    CHECK(load_platform(name).nodes.peak_flops == platform.nodes.peak_flops);
  }
}

TEST_CASE("platform numbers reproduce the papers' figures", "[zoo][platform]") {
  // Intel note: system compute-to-communication ratio = peak FLOP/s / bandwidth (bytes/s).
  const Platform fdr = load_platform("intel-xeon-fdr");
  const Platform gbe = load_platform("intel-xeon-10gbe");
  const Platform phi = load_platform("intel-xeon-phi-opa");
  const double r_fdr = fdr.nodes.peak_flops / fdr.network.bandwidth_Bps;
  const double r_gbe = gbe.nodes.peak_flops / gbe.network.bandwidth_Bps;
  const double r_phi = phi.nodes.peak_flops / phi.network.bandwidth_Bps;
  CHECK(r_fdr == Approx(2700e9 / 7e9).epsilon(1e-9));  // 385.7 ("= 386")
  CHECK(r_gbe == Approx(2250.0).epsilon(1e-9));        // "= 2250"
  CHECK(r_phi == Approx(480.0).epsilon(1e-9));         // "= 480"
  // Figure 1 of the note, minimum data points per node = ceil(system ratio / (1.5·ow·oh)):
  // C5 12x12 -> 2, 11, 3; F1 1x1 -> 258, 1500, 320; C1 55x55 -> 1, 1, 1.
  const auto min_points = [](double ratio, double side) { return std::ceil(ratio / (1.5 * side * side) - 1e-9); };
  CHECK(min_points(r_fdr, 12) == 2);
  CHECK(min_points(r_gbe, 12) == 11);
  CHECK(min_points(r_phi, 12) == 3);
  CHECK(min_points(r_fdr, 1) == 258);
  CHECK(min_points(r_gbe, 1) == 1500);
  CHECK(min_points(r_phi, 1) == 320);
  CHECK(min_points(r_fdr, 55) == 1);
  for (const Platform* p : {&fdr, &gbe, &phi}) CHECK(p->nodes.count >= 128);

  // Cori Phase I: 2 sockets × 16 cores × 2.3 GHz × 32 FP32 FLOP/cycle = 2.3552 TFLOP/s.
  const Platform cori = load_platform("cori-haswell");
  CHECK(cori.nodes.peak_flops == Approx(2.0 * 16 * 2.3e9 * 32).epsilon(1e-3));
  CHECK(cori.nodes.cores == 32);
  CHECK(cori.nodes.count >= 128);  // Lee et al. scale to 128 nodes
  CHECK(cori.network.topology == Topology::dragonfly);
  CHECK(cori.network.bandwidth_Bps == Approx(8e9).epsilon(1e-9));

  // Marques et al.: 4 PCs, links averaging 5 Mbit/s = 625,000 bytes/s.
  const Platform lab = load_platform("marques-lab");
  CHECK(lab.nodes.count == 4);
  CHECK(lab.network.bandwidth_Bps == Approx(5e6 / 8).epsilon(1e-9));
  // PC4 (4 cores × 2.6 GHz × 32) over PC1 (2 × 2.5 GHz × 16): 332.8 / 80 = 4.16
  CHECK(lab.speed_factor(3) == Approx(4.16).epsilon(1e-6));
  // The GPU cluster: PC2 (master), PC3, PC4, each its CPU and its GeForce.
  const Platform gpu = load_platform("marques-gpu");
  REQUIRE(gpu.nodes.kinds.size() == 3);
  CHECK(gpu.nodes.kinds[0].name == "pc2-840m");
  CHECK(gpu.network.bandwidth_Bps == Approx(5e6 / 8).epsilon(1e-9));
  // 950M: 640 cores × 914 MHz × 2 = 1169.92 GFLOP/s at efficiency 0.3 = 350.976 GFLOP/s; a GEMM
  // of 3.50976e11 FLOP takes 1 s there, plus 3.2e9 operand bytes over the 3.2 GB/s link: 2 s.
  CHECK(gpu.kernel_time_s(KernelClass::gemm, 3.50976e11, 0, 2, 3.2e9) == Approx(2.0).epsilon(1e-12));
  // 840M: 384 × 1029 MHz × 2 = 790.272 GFLOP/s × 0.3 = 237.0816 GFLOP/s -> 1 s, + 1 s link.
  CHECK(gpu.kernel_time_s(KernelClass::im2col, 2.370816e11, 0, 0, 3.2e9) == Approx(2.0).epsilon(1e-12));
  // Pooling stays on PC3's CPU: 2 cores × 2.4 GHz × 32 = 153.6 GFLOP/s × 0.3 = 46.08 GFLOP/s.
  CHECK(gpu.kernel_time_s(KernelClass::pool, 4.608e10, 0, 1) == Approx(1.0).epsilon(1e-12));
  const Platform sim = load_platform("marques-sim");
  CHECK(sim.nodes.count >= 128);  // the paper simulates up to 128 nodes
  CHECK(sim.nodes.speed_stddev > 0);

  // BPT-CNN: a 30-node cluster, studies from 5 to 35 nodes, 8-core Nehalem-EX.
  const Platform bpt = load_platform("bpt-cnn-cluster");
  CHECK(bpt.nodes.count >= 35);
  CHECK(bpt.nodes.cores == 8);

  // This machine: 2 cores at about 170 GFLOP/s each (measured with cnnpar calibrate).
  const Platform local = load_platform("local");
  CHECK(local.nodes.count == 2);
  CHECK(local.nodes.peak_flops == Approx(170e9).epsilon(1e-9));
}
