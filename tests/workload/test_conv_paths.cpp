// --conv: which conv layers run as direct convolutions, and what that does to a schedule.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "system/op_time.hpp"
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
  const Network network = load_network("vgg-a-32");
  const auto spec = [&](const std::string& name) {
    return std::find_if(network.layers.begin(), network.layers.end(), [&](const Layer& l) { return l.spec.name == name; })
        ->spec;
  };
  CHECK(listed.path(spec("conv2")) == ConvPath::direct);
  CHECK(listed.path(spec("conv1")) == ConvPath::im2col);
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

TEST_CASE("conv paths: --conv winograd and LAYER:PATH lists, and a layer given two paths names flag and value") {
  const Network network = load_network("resnet-18-32");
  const ConvPaths all = parse_conv_paths("winograd", "command line", "--conv");
  CHECK(all.mode == ConvPaths::Mode::winograd);
  CHECK(all.any_direct());
  CHECK(all.any_winograd());
  CHECK(all.text() == "winograd");
  // Winograd F(4x4, 3x3) takes 3x3 kernels of stride 1; a stride-2 or 1x1 layer runs direct.
  for (const Layer& layer : network.layers) {
    if (layer.spec.kind != LayerKind::conv) continue;
    const bool winograd = layer.spec.kernel_h == 3 && layer.spec.kernel_w == 3 && layer.spec.stride == 1;
    CHECK(winograd_shape(layer.spec) == winograd);
    CHECK(all.path(layer.spec) == (winograd ? ConvPath::winograd : ConvPath::direct));
  }

  const ConvPaths listed = parse_conv_paths("conv3_1:winograd,conv2,conv1:direct,conv4_1:im2col", "c", "--conv");
  CHECK(listed.direct_layers == std::vector<std::string>{"conv1", "conv2"});
  CHECK(listed.winograd_layers == std::vector<std::string>{"conv3_1"});
  CHECK(listed.text() == "conv1,conv2,conv3_1:winograd");  // sorted by name; a bare name is direct
  CHECK(listed.json() == nlohmann::json({"conv1", "conv2", "conv3_1:winograd"}));
  CHECK(conv_paths_from_json(listed.json(), "t.json", "/conv") == listed);
  CHECK(parse_conv_paths("conv1:im2col", "c", "--conv").json().is_null());

  for (const char* bad : {"conv1:winograd,conv1:direct", "conv1:fft", ":winograd"}) {
    try {
      parse_conv_paths(bad, "command line", "--conv");
      FAIL(std::string("parsed ") + bad);
    } catch (const InputError& e) {
      CHECK(e.file() == "command line");
      CHECK(e.json_path() == "--conv");
      CHECK(e.value() == bad);
    }
  }
}

TEST_CASE("conv paths: Winograd takes 3x3 stride-1 conv layers only") {
  const Network vgg = load_network("vgg-a-32");
  CHECK_NOTHROW(validate_conv_paths(parse_conv_paths("conv1:winograd,conv5_2:winograd", "c", "--conv"), vgg, "c"));
  const Network resnet = load_network("resnet-18-32");
  std::string strided;  // the first stride-2 3x3 conv layer of resnet-18-32
  for (const Layer& layer : resnet.layers)
    if (layer.spec.kind == LayerKind::conv && layer.spec.stride == 2 && layer.spec.kernel_h == 3) {
      strided = layer.spec.name;
      break;
    }
  REQUIRE_FALSE(strided.empty());
  try {
    validate_conv_paths(parse_conv_paths(strided + ":winograd", "c", "--conv"), resnet, "spec.json");
    FAIL("a stride-2 layer ran Winograd");
  } catch (const InputError& e) {
    CHECK(e.file() == "spec.json");
    CHECK(e.json_path() == "/conv");
    CHECK(e.value() == strided + ":winograd");
  }
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

  // Winograd: the same ops, bytes and FLOPs (those of the work, not of the transforms), of
  // kernel class winograd.
  const Schedule winograd = build_schedule(network, platform, dp_on(2, parse_conv_paths("conv2:winograd", "c", "--conv")));
  const auto with_winograd = kernels_by_layer(winograd, network);
  CHECK(with_winograd.count({"conv2", KernelClass::conv}) == 0);
  CHECK(with_winograd.at({"conv2", KernelClass::winograd}) == 3);
  for (const Op& op : winograd.programs[0].ops) {
    if (op.kind != OpKind::compute || op.kernel != KernelClass::winograd) continue;
    CHECK(op.bytes == Approx(kExpectedBytes).epsilon(1e-12));
    CHECK(op.flops == Approx(2.0 * 128 * 64 * 9 * 32 * 16 * 16).epsilon(1e-12));
  }
}

namespace {

/** vgg-a-32 on a calibrated node: every GEMM at 10 GFLOP/s and, when `direct_flops` is given,
 *  every direct convolution at that rate (one grid point each: the rate of every shape). */
Platform calibrated(const char* direct_flops, const char* winograd_flops = nullptr) {
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "cal", "nodes": {"count": 4, "peak": "1Tf"},
      "network": {"bandwidth": "1GBps", "latency": "1us"},
      "calibration": {"gemm_flops": {"gemm 64x2048x27": "10Gf"}}})");
  if (direct_flops != nullptr) doc["calibration"]["conv_flops"] = {{"gemm 64x2048x27", direct_flops}};
  if (winograd_flops != nullptr) doc["calibration"]["winograd_flops"] = {{"gemm 64x2048x27", winograd_flops}};
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

TEST_CASE("conv paths: auto takes Winograd where the platform prices it lowest, only on layers it can run") {
  const Network network = load_network("resnet-18-32");
  const ConvPaths automatic{.mode = ConvPaths::Mode::automatic};
  std::vector<std::string> winograd_layers, other_conv_layers;
  for (const Layer& layer : network.layers)
    if (layer.spec.kind == LayerKind::conv) (winograd_shape(layer.spec) ? winograd_layers : other_conv_layers).push_back(layer.spec.name);
  std::sort(winograd_layers.begin(), winograd_layers.end());
  std::sort(other_conv_layers.begin(), other_conv_layers.end());
  REQUIRE_FALSE(other_conv_layers.empty());  // its stride-2 and 1x1 convolutions

  // Winograd at 2 TFLOP/s (of the direct work), direct at 1, GEMMs at 10 GFLOP/s: Winograd
  // wherever it runs, direct elsewhere.
  const ConvPaths both = conv_paths_priced_faster(network, calibrated("1Tf", "2Tf"), dp_on(2, automatic));
  CHECK(both.winograd_layers == winograd_layers);
  CHECK(both.direct_layers == other_conv_layers);
  // Winograd slower than direct: direct everywhere.
  const ConvPaths slow_winograd = conv_paths_priced_faster(network, calibrated("1Tf", "100Gf"), dp_on(2, automatic));
  CHECK(slow_winograd.winograd_layers.empty());
  // A Winograd grid alone: Winograd where it runs, im2col (the only other measured path) elsewhere.
  const Platform winograd_only = calibrated(nullptr, "2Tf");
  CHECK(prices_direct_convolutions(winograd_only));
  const ConvPaths alone = conv_paths_priced_faster(network, winograd_only, dp_on(2, automatic));
  CHECK(alone.winograd_layers == winograd_layers);
  CHECK(alone.direct_layers.empty());
  // The resolved schedule records it, and prices the Winograd ops by their own grid: one
  // forward op at 2 TFLOP/s takes flops / 2e12 s.
  const Schedule schedule = build_schedule(network, winograd_only, dp_on(2, automatic));
  CHECK(schedule.options.at("conv") == alone.json());
  bool priced = false;
  for (const Op& op : schedule.programs[0].ops)
    if (op.kind == OpKind::compute && op.kernel == KernelClass::winograd && op.phase == Phase::forward) {
      CHECK(op_time_s(winograd_only, op, 0) == Approx(op.flops / 2e12).epsilon(1e-9));
      priced = true;
    }
  CHECK(priced);
}
