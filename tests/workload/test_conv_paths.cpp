// --conv: which conv layers run as direct convolutions, and what that does to a schedule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "workload/conv_choice.hpp"
#include "workload/conv_paths.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

namespace {

StrategyOptions dp_on(int ranks, const ConvPaths& conv) {
  StrategyOptions options;
  options.name = "dp";
  options.ranks = ranks;
  options.global_batch = 64;
  options.iterations = 1;  // one iteration's ops
  options.warmup_iterations = 0;
  options.conv = conv;
  return options;
}

// (layer name, kernel class) -> ops of rank 0's program.
std::map<std::pair<std::string, KernelClass>, int> kernels_by_layer(const Schedule& schedule, const Network& network) {
  std::map<std::pair<std::string, KernelClass>, int> counts;
  for (const Op& op : schedule.programs.at(0).ops)
    if (op.kind == OpKind::compute && op.layer >= 0) ++counts[{network.layers[std::size_t(op.layer)].spec.name, op.kernel}];
  return counts;
}

}  // namespace

TEST_CASE("conv paths: --conv parses im2col, direct, auto and layer lists, and bad text names flag and value") {
  CHECK(parse_conv_paths("im2col", "command line", "--conv").mode == ConvPaths::Mode::im2col);
  CHECK(parse_conv_paths("direct", "command line", "--conv").mode == ConvPaths::Mode::direct);
  CHECK(parse_conv_paths("auto", "command line", "--conv").mode == ConvPaths::Mode::automatic);
  const ConvPaths listed = parse_conv_paths("conv3_1,conv2,conv3_1", "command line", "--conv");
  CHECK(listed.mode == ConvPaths::Mode::layers);
  CHECK(listed.direct_layers == std::vector<std::string>{"conv2", "conv3_1"});  // sorted, once each
  CHECK(listed.direct("conv2"));
  CHECK_FALSE(listed.direct("conv1"));
  CHECK(listed.text() == "conv2,conv3_1");
  CHECK(listed.json() == nlohmann::json({"conv2", "conv3_1"}));
  CHECK(conv_paths_from_json(listed.json(), "t.json", "/conv") == listed);
  CHECK(ConvPaths{}.json().is_null());  // im2col: the options leave "conv" out
  try {
    parse_conv_paths("conv1,,conv2", "command line", "--conv");
    FAIL("an empty layer name parsed");
  } catch (const InputError& e) {
    CHECK(e.file() == "command line");
    CHECK(e.json_path() == "--conv");
    CHECK(e.value() == "conv1,,conv2");
  }
  CHECK_THROWS_AS(conv_paths_from_json(nlohmann::json(7), "spec.json", "/conv"), InputError);
}

TEST_CASE("conv paths: a schedule takes conv layers only") {
  const Network network = load_network("vgg-a-32");
  CHECK_NOTHROW(validate_conv_paths(parse_conv_paths("conv1,conv5_2", "c", "--conv"), network, "c"));
  try {
    validate_conv_paths(parse_conv_paths("conv1,fc6", "c", "--conv"), network, "command line");
    FAIL("an fc layer ran direct");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/conv");
    CHECK(e.value() == "fc6");
  }
  CHECK_NOTHROW(validate_conv_paths(ConvPaths{.mode = ConvPaths::Mode::automatic}, network, "c"));
}

TEST_CASE("conv paths: a direct layer has no im2col or col2im ops, its GEMM ops become conv ops") {
  const Network network = load_network("vgg-a-32");
  const Platform platform = load_platform("local");
  const Schedule im2col = build_schedule(network, platform, dp_on(2, {}));
  const Schedule direct = build_schedule(network, platform, dp_on(2, parse_conv_paths("conv2", "c", "--conv")));
  const auto before = kernels_by_layer(im2col, network);
  const auto after = kernels_by_layer(direct, network);
  // conv2 before: im2col, forward GEMM, backward-data GEMM, col2im, weight GEMM.
  CHECK(before.at({"conv2", KernelClass::im2col}) == 1);
  CHECK(before.at({"conv2", KernelClass::col2im}) == 1);
  CHECK(before.at({"conv2", KernelClass::gemm}) == 3);
  CHECK(after.count({"conv2", KernelClass::im2col}) == 0);
  CHECK(after.count({"conv2", KernelClass::col2im}) == 0);
  CHECK(after.count({"conv2", KernelClass::gemm}) == 0);
  CHECK(after.at({"conv2", KernelClass::conv}) == 3);
  // Every other layer keeps its ops.
  for (const auto& [key, count] : before)
    if (key.first != "conv2") CHECK(after.at(key) == count);
  // Both ranks share one rewritten list, as they shared the original.
  CHECK(direct.programs[0].ops.same_storage(direct.programs[1].ops));

  // A direct op moves the layer's input, weights and output once, and computes what the GEMM
  // did: conv2 on a rank's 32 images of vgg-a-32 reads (64, 16, 16) maps and writes (128, 16,
  // 16) with 3x3 kernels: 4 B · (32·64·16·16 + 128·64·9 + 32·128·16·16) = 6,586,368 B.
  constexpr double kExpectedBytes = 4.0 * (32.0 * 64 * 16 * 16 + 128.0 * 64 * 9 + 32.0 * 128 * 16 * 16);
  for (const Op& op : direct.programs[0].ops) {
    if (op.kind != OpKind::compute || op.kernel != KernelClass::conv) continue;
    CHECK(op.bytes == Approx(kExpectedBytes).epsilon(1e-12));
    CHECK(op.flops == Approx(2.0 * 128 * 64 * 9 * 32 * 16 * 16).epsilon(1e-12));
  }
  // The options say what ran.
  const nlohmann::json options = to_json(dp_on(2, parse_conv_paths("conv2", "c", "--conv")));
  CHECK(options.at("conv") == nlohmann::json({"conv2"}));
  CHECK(strategy_options_from_json(options, "t").conv.direct_layers == std::vector<std::string>{"conv2"});
  CHECK_FALSE(to_json(dp_on(2, {})).contains("conv"));
}

namespace {

/** vgg-a-32 on a calibrated node: every GEMM at 10 GFLOP/s and, when `direct_flops` is given,
 *  every direct convolution at that rate (one grid point each: the rate of every shape). */
Platform calibrated(const char* direct_flops) {
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "cal", "nodes": {"count": 4, "peak": "1Tf"},
      "network": {"bandwidth": "1GBps", "latency": "1us"},
      "calibration": {"gemm_flops": {"gemm 64x2048x27": "10Gf"}}})");
  if (direct_flops != nullptr) doc["calibration"]["conv_flops"] = {{"gemm 64x2048x27", direct_flops}};
  return parse_platform(doc, "cal.json");
}

std::vector<std::string> conv_layer_names(const Network& network) {
  std::vector<std::string> names;
  for (const Layer& layer : network.layers)
    if (layer.spec.kind == LayerKind::conv) names.push_back(layer.spec.name);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("conv paths: auto takes each layer's path the platform prices faster, im2col without a direct grid") {
  const Network network = load_network("vgg-a-32");
  const ConvPaths automatic{.mode = ConvPaths::Mode::automatic};
  // No conv_flops: the platform states no rate for direct convolutions, so auto is im2col, and
  // the schedule is the im2col one (its options leave "conv" out).
  const Platform gemm_only = calibrated(nullptr);
  CHECK_FALSE(prices_direct_convolutions(gemm_only));
  CHECK(conv_paths_priced_faster(network, gemm_only, dp_on(2, automatic)) == ConvPaths{});
  const Schedule im2col = build_schedule(network, gemm_only, dp_on(2, {}));
  const Schedule resolved_im2col = build_schedule(network, gemm_only, dp_on(2, automatic));
  CHECK(kernels_by_layer(resolved_im2col, network) == kernels_by_layer(im2col, network));
  CHECK_FALSE(resolved_im2col.options.contains("conv"));

  // Direct at 1 TFLOP/s against GEMMs at 10 GFLOP/s: a direct op does a layer's GEMM work 100
  // times faster and drops its im2col and col2im ops, so every conv layer runs direct, and the
  // schedule equals --conv with all of them listed.
  const Platform fast_direct = calibrated("1Tf");
  CHECK(prices_direct_convolutions(fast_direct));
  const ConvPaths all_direct = conv_paths_priced_faster(network, fast_direct, dp_on(2, automatic));
  CHECK(all_direct.mode == ConvPaths::Mode::layers);
  CHECK(all_direct.direct_layers == conv_layer_names(network));
  const Schedule resolved_direct = build_schedule(network, fast_direct, dp_on(2, automatic));
  CHECK(kernels_by_layer(resolved_direct, network) ==
        kernels_by_layer(build_schedule(network, fast_direct, dp_on(2, all_direct)), network));
  CHECK(resolved_direct.options.at("conv") == nlohmann::json(conv_layer_names(network)));

  // Direct at 100 MFLOP/s: 100 times slower than the GEMMs, whose path costs at most the GEMM
  // work plus memory-bound copies: every layer stays im2col.
  CHECK(conv_paths_priced_faster(network, calibrated("100Mf"), dp_on(2, automatic)) == ConvPaths{});
}
