// Intel balance equations (model/balance.hpp) against the note's own numbers (seed 003),
// read from tests/golden/intel_balance_table.json (copied from the note, not from cnnpar).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

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
    CHECK(b.images_per_node == 32.0);
    CHECK(b.system_ratio == Approx(sys).epsilon(1e-15));
    CHECK(b.dp_ratio == Approx(1.5 * b.out_w_px * b.out_h_px * 32.0).epsilon(1e-15));
    CHECK(b.dp_ratio_no_overlap == Approx(0.75 * b.out_w_px * b.out_h_px * 32.0).epsilon(1e-15));
    CHECK(b.dp_min_images_per_node == std::int64_t(std::ceil(sys / (1.5 * b.out_w_px * b.out_h_px) - 1e-9)));
  }
  // conv1 of VGG-A: 3 → 64 maps, 3×3 kernel, 224×224 output: 2·3·64·9·224·224 FLOPs per image.
  CHECK(layers.front().forward_flop_per_image == Approx(2.0 * 3 * 64 * 9 * 224 * 224).epsilon(1e-15));
  // fc6 takes the 512×7×7 conv output: model parallel at MB 256 iff 3·256 < 4096 → yes.
  CHECK(layers[8].kind == LayerKind::fc);
  CHECK(layers[8].ifm == 512.0 * 7 * 7);
  CHECK(layers[8].prefer_model);
}

TEST_CASE("balance: largest compute-bound node counts", "[balance]") {
  // The note: F1 on Xeon + FDR needs 258 images per node, so "for a minibatch size of 256, a
  // fully connected layer cannot even scale beyond one node using data-parallelism".
  CHECK(max_data_parallel_nodes(256, 258) == 1);
  // C5 on Xeon + FDR needs 2 images per node: 256 / 2 = 128 nodes; on 10GbE 11: ⌊256 / 11⌋ = 23.
  CHECK(max_data_parallel_nodes(256, 2) == 128);
  CHECK(max_data_parallel_nodes(256, 11) == 23);
  CHECK(max_data_parallel_nodes(256, 1) == 256);
  // A 1000-output fc on 10GbE: 0.75·1000 / 2250 = 0.33 < 2, communication bound from 2 nodes on
  // (the old table printed 0 here); 1 node never communicates.
  CHECK(max_model_parallel_nodes(1000, 1, 1, 1.0, 2250.0) == 1);
  // A limit of exactly 2 (0.75·4·1·1 / 1.5): 2 < 2 fails, so 1.
  CHECK(max_model_parallel_nodes(4, 1, 1, 1.0, 1.5) == 1);
  // Just above 2: 0.75·4096 / 1500 = 2.048, so 2.
  CHECK(max_model_parallel_nodes(4096, 1, 1, 1.0, 1500.0) == 2);
}

// The rows (AlexNet, batch 256, 32 nodes) on the note's Xeon + 10GbE (2250 FLOP/byte):
// "prefer model" beside "MP max 0", "DP ok: no" beside "prefer: data". Worked by hand here.
TEST_CASE("balance: the note's choice and compute-boundness at a node count are separate answers", "[balance]") {
  const Network network = load_network("alexnet");
  const Platform platform = load_platform("intel-xeon-10gbe");
  const std::vector<LayerBalance> at_32 = network_balance(network, platform, 256, 32);
  const auto find = [](const std::vector<LayerBalance>& layers, const std::string& name) {
    for (const LayerBalance& b : layers)
      if (b.name == name) return b;
    FAIL("no layer " << name);
    return LayerBalance{};
  };
  const LayerBalance conv3 = find(at_32, "conv3");
  // conv3: 256 → 384 maps, 3×3, 13×13 in and out. DP at 8 images per node: 1.5·13·13·8 = 2028 < 2250.
  CHECK(conv3.dp_ratio == Approx(2028.0).epsilon(1e-15));
  CHECK_FALSE(conv3.dp_compute_bound);
  // ⌈2250 / (1.5·169)⌉ = ⌈8.88⌉ = 9 images per node; ⌊256 / 9⌋ = 28 nodes.
  CHECK(conv3.dp_min_images_per_node == 9);
  CHECK(conv3.dp_max_nodes == 28);
  // The choice: 3·13·13·256 = 129792 > 384·3·3 = 3456 → data, though data is comm bound at 32.
  CHECK_FALSE(conv3.prefer_model);
  CHECK_FALSE(conv3.choice_compute_bound());
  // MP: 0.75·384·9 / 2250 = 1.152 → max 1; at 32 nodes 0.75·384·9 / 32 = 81 FLOP/byte.
  CHECK(conv3.mp_max_nodes == 1);
  CHECK(conv3.mp_ratio == Approx(81.0).epsilon(1e-15));
  CHECK_FALSE(conv3.mp_compute_bound);

  const LayerBalance fc8 = find(at_32, "fc8");
  // fc8: 4096 → 1000. The choice: 3·1·1·256 = 768 < 1000 → model; MP 750 / 2250 < 2 → max 1.
  CHECK(fc8.prefer_model);
  CHECK(fc8.mp_max_nodes == 1);
  CHECK(fc8.mp_ratio == Approx(750.0 / 32).epsilon(1e-15));
  CHECK_FALSE(fc8.choice_compute_bound());
  // DP: ⌈2250 / 1.5⌉ = 1500 images per node (Figure 1's F1 on 10GbE) > 256 → max 1 node.
  CHECK(fc8.dp_min_images_per_node == 1500);
  CHECK(fc8.dp_max_nodes == 1);

  // At 16 nodes conv3's data parallelism is compute bound: 1.5·169·16 = 4056 >= 2250, 16 <= 28.
  const LayerBalance conv3_16 = find(network_balance(network, platform, 256, 16), "conv3");
  CHECK(conv3_16.dp_compute_bound);
  CHECK(conv3_16.choice_compute_bound());
  // The choice does not depend on the node count.
  CHECK(conv3_16.prefer_model == conv3.prefer_model);
}

TEST_CASE("balance: compute bound at N is the note's inequality, for every node count that divides the batch", "[balance]") {
  // DP: 1.5·ow·oh·MB_node >= system ratio; MP: 0.75·ofm·kw·kh·fsr / N > system ratio. From 2
  // nodes on (one node never communicates), the max-node columns must agree with both.
  const Network network = load_network("alexnet");
  for (const char* name : {"cori-haswell", "intel-xeon-fdr", "intel-xeon-10gbe", "intel-xeon-phi-opa"}) {
    const Platform platform = load_platform(name);
    for (int nodes = 2; nodes <= 256; nodes *= 2) {
      for (const LayerBalance& b : network_balance(network, platform, 256, nodes)) {
        INFO(name << ", " << nodes << " nodes, " << b.name);
        CHECK(b.dp_compute_bound == (b.dp_ratio >= b.system_ratio));
        CHECK(b.mp_compute_bound == (b.mp_ratio > b.system_ratio));
        CHECK(b.dp_compute_bound == (nodes <= b.dp_max_nodes));
        CHECK(b.mp_compute_bound == (nodes <= b.mp_max_nodes));
        // The choice uses the whole batch, whatever the node count: the note's conclusion for
        // MB <= 256, "for fully connected layers we use model parallelism, while for
        // convolutional layers we use data parallelism" (at 256 nodes, 1 image per node would
        // flip conv3-5: 3·13·13·1 = 507 < 384·3·3).
        CHECK(b.prefer_model == (b.kind == LayerKind::fc));
      }
    }
  }
}

TEST_CASE("balance: the note's systems are recognised by peak and bandwidth", "[balance][golden]") {
  // The golden table holds the note's numbers; the library's copy must agree with it.
  const nlohmann::json table = golden();
  const auto& systems = table.at("systems");
  REQUIRE(systems.size() == std::size(kIntelNoteSystems));
  for (std::size_t s = 0; s < systems.size(); ++s) {
    CHECK(kIntelNoteSystems[s].peak_flops == Approx(systems[s].at("peak_gflops").get<double>() * 1e9).epsilon(1e-15));
    CHECK(kIntelNoteSystems[s].bandwidth_Bps ==
          Approx(systems[s].at("bandwidth_GBps").get<double>() * 1e9).epsilon(1e-15));
  }
  // The project's platforms for the note's systems (scenarios/platforms/intel-*.json) match, in order.
  CHECK(intel_note_system_index(load_platform("intel-xeon-fdr")) == 0);
  CHECK(intel_note_system_index(load_platform("intel-xeon-10gbe")) == 1);
  CHECK(intel_note_system_index(load_platform("intel-xeon-phi-opa")) == 2);
  // Cori: 2.355 TFLOP/s over 8 GB/s is none of them.
  CHECK(intel_note_system_index(load_platform("cori-haswell")) == -1);
  // Same peak as Xeon + FDR, other bandwidth: Figure 1's column would be wrong, so no match.
  Platform other = load_platform("intel-xeon-fdr");
  other.network.bandwidth_Bps = 8e9;
  CHECK(intel_note_system_index(other) == -1);
}

TEST_CASE("balance CSV: one row per layer, run columns first", "[balance]") {
  const Network network = load_network("alexnet");
  const Platform platform = load_platform("intel-xeon-10gbe");
  const std::vector<LayerBalance> layers = network_balance(network, platform, 256, 32);
  const std::string csv = balance_csv("alexnet", "a,\"quoted\" platform", 256, 32, layers);
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < csv.size();) {
    const std::size_t end = csv.find('\n', start);
    REQUIRE(end != std::string::npos);  // every line ends in a newline
    lines.push_back(csv.substr(start, end - start));
    start = end + 1;
  }
  // Header + AlexNet's 5 conv and 3 fc layers.
  REQUIRE(lines.size() == 9);
  CHECK(lines[0].rfind("network,platform,engine,strategy,options,batch,nodes,layer,", 0) == 0);
  const std::vector<std::string> expected_columns = {
      "dp_min_images_per_node", "dp_max_nodes", "dp_compute_bound", "mp_max_nodes", "mp_compute_bound",
      "system_ratio_flop_per_byte", "choice", "choice_compute_bound"};
  for (const std::string& column : expected_columns) CHECK(("," + lines[0] + ",").find("," + column + ",") != std::string::npos);
  const auto commas = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
  // RFC 4180: the platform field is quoted, its quotes doubled (its one comma is inside quotes).
  const std::string prefix = "alexnet,\"a,\"\"quoted\"\" platform\",balance,,,256,32,";
  for (std::size_t i = 1; i < lines.size(); ++i) {
    CHECK(lines[i].rfind(prefix, 0) == 0);
    CHECK(commas(lines[i]) == commas(lines[0]) + 1);
  }
  // conv3 is the third layer; its values as worked out by hand in the test above.
  CHECK(lines[3].rfind(prefix + "conv3,conv,256,384,3,3,13,13,13,13,", 0) == 0);
  CHECK(lines[3].find(",2028,1014,9,28,false,81,") != std::string::npos);
  CHECK(lines[3].substr(lines[3].size() - std::string(",data,false").size()) == ",data,false");
  CHECK(lines[8].substr(lines[8].size() - std::string(",model,false").size()) == ",model,false");
}
