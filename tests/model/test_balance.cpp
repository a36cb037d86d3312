// Intel balance equations (model/balance.hpp) against the note's own numbers (seed 003),
// read from tests/golden/intel_balance_table.json (copied from the note, not from cnnpar).
#include <cmath>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "model/balance.hpp"
#include "model/scenarios.hpp"

using namespace cnnpar;

namespace {
nlohmann::json golden() {
  std::ifstream in(std::string(CNNPAR_SOURCE_DIR) + "/tests/golden/intel_balance_table.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}
}  // namespace

TEST_CASE("forward FLOPs and data-parallel ratio", "[balance]") {
  // 2·ifm·ofm·kw·kh·ow·oh = 2·3·96·11·11·55·55 = 210830400 (AlexNet C1)
  CHECK(balance_forward_flops(3, 96, 11, 11, 55, 55) == Approx(210830400.0).epsilon(1e-15));
  // The note: C1 4537·MB_node (1.5·55·55 = 4537.5), C5 216·MB_node, F1 1.5·MB_node; halved without overlap.
  CHECK(data_parallel_ratio(55, 55, 1) == Approx(4537.5).epsilon(1e-15));
  CHECK(data_parallel_ratio(12, 12, 1) == Approx(216.0).epsilon(1e-15));
  CHECK(data_parallel_ratio(1, 1, 1) == Approx(1.5).epsilon(1e-15));
  CHECK(data_parallel_ratio(1, 1, 1, false) == Approx(0.75).epsilon(1e-15));
  // System ratios as the note prints them: 2700/7 = 385.7 (printed 386), 2700/1.2 = 2250, 6000/12.5 = 480.
  CHECK(system_ratio(2700e9, 7e9) == Approx(385.714285714).epsilon(1e-9));
  CHECK(system_ratio(2700e9, 1.2e9) == Approx(2250.0).epsilon(1e-12));
  CHECK(system_ratio(6000e9, 12.5e9) == Approx(480.0).epsilon(1e-12));
}

TEST_CASE("minimum data points per node: the note's Figure 1", "[balance][golden]") {
  const nlohmann::json table = golden();
  const auto& systems = table.at("systems");
  for (const auto& layer : table.at("layers")) {
    for (std::size_t s = 0; s < systems.size(); ++s) {
      const double exact = system_ratio(systems[s].at("peak_gflops").get<double>() * 1e9,
                                        systems[s].at("bandwidth_GBps").get<double>() * 1e9);
      const double printed = systems[s].at("note_system_ratio").get<double>();
      const auto expected = layer.at("min_data_points")[s].get<std::int64_t>();
      INFO(layer.at("name").get<std::string>() << " on " << systems[s].at("name").get<std::string>());
      // The table holds with the exact ratio (what cnnpar uses) and with the note's rounded one.
      CHECK(min_data_points_per_node(exact, layer.at("out_w"), layer.at("out_h")) == expected);
      CHECK(min_data_points_per_node(printed, layer.at("out_w"), layer.at("out_h")) == expected);
    }
  }
}

TEST_CASE("model-parallel node limits: C5 < 14, F1 < 8 on Xeon + FDR", "[balance][golden]") {
  const nlohmann::json table = golden();
  for (const auto& entry : table.at("model_parallel")) {
    const auto& system = table.at("systems")[entry.at("system").get<std::size_t>()];
    const double exact = system_ratio(system.at("peak_gflops").get<double>() * 1e9,
                                      system.at("bandwidth_GBps").get<double>() * 1e9);
    const double printed = system.at("note_system_ratio").get<double>();
    const auto below = entry.at("nodes_below").get<std::int64_t>();
    for (double ratio : {exact, printed}) {
      INFO(entry.at("name").get<std::string>() << ", system ratio " << ratio);
      const std::int64_t most = max_model_parallel_nodes(entry.at("ofm"), entry.at("kernel_w"), entry.at("kernel_h"),
                                                         entry.at("feature_size_ratio"), ratio);
      CHECK(most + 1 == below);
      // The bound itself: compute bound at `most` nodes, not at `below`.
      CHECK(model_parallel_ratio(entry.at("ofm"), entry.at("kernel_w"), entry.at("kernel_h"),
                                 entry.at("feature_size_ratio"), double(most)) > ratio);
      CHECK_FALSE(model_parallel_ratio(entry.at("ofm"), entry.at("kernel_w"), entry.at("kernel_h"),
                                       entry.at("feature_size_ratio"), double(below)) > ratio);
    }
  }
  // The note's arithmetic: 0.75·1024·9·0.73 = 5045.76; 0.75·4096 = 3072.
  CHECK(model_parallel_node_limit(1024, 3, 3, 0.73, 1.0) == Approx(5045.76).epsilon(1e-12));
  CHECK(model_parallel_node_limit(4096, 1, 1, 1.0, 1.0) == Approx(3072.0).epsilon(1e-12));
}

TEST_CASE("model versus data parallelism choice", "[balance]") {
  // F1 in the note: ofm = 3072, input and kernel 1×1: model parallel iff 3·MB < 3072, i.e. MB < 1024.
  CHECK(prefer_model_parallel(1, 1, 256, 3072, 1, 1));
  CHECK(prefer_model_parallel(1, 1, 1023, 3072, 1, 1));
  CHECK_FALSE(prefer_model_parallel(1, 1, 1024, 3072, 1, 1));
  // A conv layer with a 13×13 input, MB 256: 3·169·256 = 129792 > 384·3·3 = 3456 → data parallel.
  CHECK_FALSE(prefer_model_parallel(13, 13, 256, 384, 3, 3));
}

TEST_CASE("per-layer balance of a network", "[balance]") {
  const Network network = load_network("vgg-a");
  Platform platform = load_platform("cori-haswell");
  const std::vector<LayerBalance> layers = network_balance(network, platform, 256, 8);
  // VGG-A has 8 conv and 3 fc layers.
  REQUIRE(layers.size() == 11);
  const double sys = platform.nodes.peak_flops / platform.network.bandwidth_Bps;
  for (const LayerBalance& b : layers) {
    INFO(b.name);
    CHECK(b.mb_node == 32.0);
    CHECK(b.system_ratio == Approx(sys).epsilon(1e-15));
    CHECK(b.data_ratio_overlap == Approx(1.5 * b.out_w * b.out_h * 32.0).epsilon(1e-15));
    CHECK(b.data_ratio_no_overlap == Approx(0.75 * b.out_w * b.out_h * 32.0).epsilon(1e-15));
    CHECK(b.min_data_points == std::int64_t(std::ceil(sys / (1.5 * b.out_w * b.out_h) - 1e-9)));
  }
  // conv1 of VGG-A: 3 → 64 maps, 3×3 kernel, 224×224 output: 2·3·64·9·224·224 FLOPs per image.
  CHECK(layers.front().forward_flops == Approx(2.0 * 3 * 64 * 9 * 224 * 224).epsilon(1e-15));
  // fc6 takes the 512×7×7 conv output: model parallel at MB 256 iff 3·256 < 4096 → yes.
  CHECK(layers[8].kind == LayerKind::fc);
  CHECK(layers[8].ifm == 512.0 * 7 * 7);
  CHECK(layers[8].prefer_model);
}
