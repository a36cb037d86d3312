// --conv: which conv layers run as direct convolutions, and what that does to a schedule.
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "base/error.hpp"
#include "model/scenarios.hpp"
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

TEST_CASE("conv paths: a schedule takes conv layers only, and never auto") {
  const Network network = load_network("vgg-a-32");
  CHECK_NOTHROW(validate_conv_paths(parse_conv_paths("conv1,conv5_2", "c", "--conv"), network, "c"));
  try {
    validate_conv_paths(parse_conv_paths("conv1,fc6", "c", "--conv"), network, "command line");
    FAIL("an fc layer ran direct");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/conv");
    CHECK(e.value() == "fc6");
  }
  CHECK_THROWS_AS(validate_conv_paths(ConvPaths{.mode = ConvPaths::Mode::automatic}, network, "c"), InputError);
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
