#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>

#include "base/error.hpp"
#include "model/platform.hpp"
#include "model/scenarios.hpp"
#include "model/schedule.hpp"
#include "system/device_staging.hpp"
#include "system/op_time.hpp"
#include "workload/overrides.hpp"

using namespace cnnpar;

namespace {
nlohmann::json minimal_platform() {
  return nlohmann::json::parse(R"({
    "name": "test", "source": "unit test",
    "nodes": {"count": 4, "peak": "1Tf", "memory_bandwidth": "100GBps",
              "efficiency": {"gemm": 0.8}, "default_efficiency": 0.5},
    "network": {"topology": "crossbar", "bandwidth": "10Gbps", "latency": "1.5us", "overhead": "0.5us",
                "algorithms": {"allreduce": "ring"}}
  })");
}
}  // namespace

TEST_CASE("a platform's unit strings become SI values") {
  const Platform platform = parse_platform(minimal_platform(), "p.json");
  CHECK(platform.nodes.peak_flops == Approx(1e12));
  CHECK(platform.network.bandwidth_Bps == Approx(1.25e9));
  // alpha = latency + per-message overhead = 1.5 us + 0.5 us
  CHECK(platform.network.alpha_s() == Approx(2e-6));
  CHECK(platform.algorithm_for("allreduce") == Algorithm::ring);
  CHECK(platform.algorithm_for("allgather") == Algorithm::automatic);
}

TEST_CASE("roofline: a kernel takes the longer of its compute and memory times") {
  const Platform platform = parse_platform(minimal_platform(), "p.json");
  // gemm: 1.6e12 FLOP / (1e12 FLOP/s * 0.8) = 2 s; memory 1e9 B / 1e11 B/s = 0.01 s -> 2 s
  CHECK(platform.kernel_time_s(KernelClass::gemm, 1.6e12, 1e9, 0) == Approx(2.0).epsilon(1e-12));
  // eltwise: 1e9 FLOP / (1e12 * 0.5) = 2 ms; memory 1e10 B / 1e11 B/s = 0.1 s -> 0.1 s
  CHECK(platform.kernel_time_s(KernelClass::eltwise, 1e9, 1e10, 0) == Approx(0.1).epsilon(1e-12));
}

TEST_CASE("roofline: a kernel class with its own memory bandwidth streams at it, the others at the node's") {
  nlohmann::json document = minimal_platform();
  document["nodes"]["kernel_memory_bandwidth"] = {{"im2col", "10GBps"}};
  const Platform platform = parse_platform(document, "p.json");
  // im2col: 1e9 B / 1e10 B/s = 0.1 s; eltwise keeps the node's 1e11 B/s: 1e9 B -> 0.01 s.
  CHECK(platform.kernel_time_s(KernelClass::im2col, 0, 1e9, 0) == Approx(0.1).epsilon(1e-12));
  CHECK(platform.kernel_time_s(KernelClass::eltwise, 0, 1e9, 0) == Approx(0.01).epsilon(1e-12));
  // Written and read back, the class keeps its bandwidth.
  const Platform back = parse_platform(to_json(platform), "back.json");
  CHECK(back.nodes.memory_bandwidth_for(KernelClass::im2col) == Approx(1e10).epsilon(1e-12));
  CHECK(back.nodes.memory_bandwidth_for(KernelClass::pool) == Approx(1e11).epsilon(1e-12));
  // An unknown class and a bandwidth whose unit does not parse name the path and the value.
  const auto refused = [&](const nlohmann::json& table) -> std::optional<InputError> {
    document["nodes"]["kernel_memory_bandwidth"] = table;
    try {
      (void)parse_platform(document, "p.json");
    } catch (const InputError& e) {
      return e;
    }
    return std::nullopt;
  };
  const std::optional<InputError> unknown = refused({{"gather", "10GBps"}});
  REQUIRE(unknown);
  CHECK(unknown->json_path() == "/nodes/kernel_memory_bandwidth/gather");
  const std::optional<InputError> unitless = refused({{"im2col", "10 furlongs"}});
  REQUIRE(unitless);
  CHECK(unitless->json_path() == "/nodes/kernel_memory_bandwidth/im2col");
  CHECK(unitless->value() == "10 furlongs");
}

TEST_CASE("heterogeneous nodes: speed factors scale compute time") {
  nlohmann::json document = minimal_platform();
  document["nodes"]["speed_factors"] = {1.0, 0.5, 2.0, 1.0};
  const Platform platform = parse_platform(document, "p.json");
  const double base = platform.kernel_time_s(KernelClass::gemm, 8e11, 0, 0);  // 1 s
  CHECK(base == Approx(1.0));
  CHECK(platform.kernel_time_s(KernelClass::gemm, 8e11, 0, 1) == Approx(2.0));
  CHECK(platform.kernel_time_s(KernelClass::gemm, 8e11, 0, 2) == Approx(0.5));
}

TEST_CASE("slow_down makes one node slower by its factor and leaves the others") {
  nlohmann::json document = minimal_platform();
  Platform platform = parse_platform(document, "p.json");
  platform.slow_down(2, 4.0);
  // gemm 8e11 FLOP at 1e12 FLOP/s × 0.8 = 1 s on a nominal node, 4 s on node 2.
  CHECK(platform.kernel_time_s(KernelClass::gemm, 8e11, 0, 0) == Approx(1.0).epsilon(1e-12));
  CHECK(platform.kernel_time_s(KernelClass::gemm, 8e11, 0, 2) == Approx(4.0).epsilon(1e-12));
  CHECK(platform.kernel_time_s(KernelClass::gemm, 8e11, 0, 3) == Approx(1.0).epsilon(1e-12));
  // Gaussian-drawn speeds stay as drawn; the slowed node's is divided by the factor.
  document["nodes"]["speed_stddev"] = 0.2;
  Platform drawn = parse_platform(document, "p.json");
  const Platform before = drawn;
  drawn.slow_down(1, 2.5);
  CHECK(drawn.speed_factor(0) == before.speed_factor(0));
  CHECK(drawn.speed_factor(1) == Approx(before.speed_factor(1) / 2.5).epsilon(1e-15));
  CHECK(drawn.speed_factor(3) == before.speed_factor(3));
}

TEST_CASE("Gaussian node speeds (Marques et al.) are repeatable for a seed and centred on 1") {
  nlohmann::json document = minimal_platform();
  document["nodes"]["count"] = 2000;
  document["nodes"]["speed_stddev"] = 0.1;
  document["nodes"]["speed_seed"] = 7;
  const Platform a = parse_platform(document, "p.json");
  const Platform b = parse_platform(document, "p.json");
  double sum = 0;
  for (int r = 0; r < 2000; ++r) {
    CHECK(a.speed_factor(r) == b.speed_factor(r));
    sum += a.speed_factor(r);
  }
  // Mean of 2000 draws of N(1, 0.1): standard error 0.1/sqrt(2000) = 0.0022; allow 5 sigma.
  CHECK(sum / 2000 == Approx(1.0).margin(0.011));
}

/** The minimal platform with `value` at the JSON pointer `path`. */
static nlohmann::json minimal_platform_with(const std::string& path, const nlohmann::json& value) {
  nlohmann::json document = minimal_platform();
  document[nlohmann::json::json_pointer(path)] = value;
  return document;
}

/** Parsing `document` must throw an InputError naming bad.json, `path` and `value`. */
static void expect_error(const nlohmann::json& document, const std::string& path, const std::string& value) {
  try {
    parse_platform(document, "bad.json");
    FAIL("no error for " << path);
  } catch (const InputError& error) {
    CHECK(error.file() == "bad.json");
    CHECK(error.json_path() == path);
    CHECK(error.value() == value);
  }
}

TEST_CASE("bad platform input names the file, the JSON path and the value") {
  nlohmann::json bad_unit = minimal_platform();
  bad_unit["network"]["bandwidth"] = "10Gbpx";
  expect_error(bad_unit, "/network/bandwidth", "10Gbpx");
  nlohmann::json bad_topology = minimal_platform();
  bad_topology["network"]["topology"] = "hypercube";
  expect_error(bad_topology, "/network/topology", "hypercube");
  nlohmann::json zero_nodes = minimal_platform();
  zero_nodes["nodes"]["count"] = 0;
  expect_error(zero_nodes, "/nodes/count", "0");
  nlohmann::json negative_latency = minimal_platform();
  negative_latency["network"]["latency"] = -1;
  expect_error(negative_latency, "/network/latency", "-1");
  nlohmann::json typo = minimal_platform();
  typo["network"]["bandwith"] = "1Gbps";
  expect_error(typo, "/network/bandwith", "1Gbps");
  nlohmann::json missing = minimal_platform();
  missing["nodes"].erase("peak");
  expect_error(missing, "/nodes/peak", "(missing)");
  nlohmann::json fat_tree = minimal_platform();
  fat_tree["network"]["topology"] = "fat_tree";
  expect_error(fat_tree, "/network/fat_tree", "(missing)");
}

TEST_CASE("a platform round-trips through JSON") {
  const Platform platform = parse_platform(minimal_platform(), "p.json");
  const Platform again = parse_platform(to_json(platform), "again.json");
  CHECK(again.nodes.peak_flops == Approx(platform.nodes.peak_flops));
  CHECK(again.network.bandwidth_Bps == Approx(platform.network.bandwidth_Bps));
  CHECK(again.network.alpha_s() == Approx(platform.network.alpha_s()));
  CHECK(again.algorithm_for("allreduce") == Algorithm::ring);
  CHECK(again.nodes.efficiency.at(KernelClass::gemm) == Approx(0.8));
}

TEST_CASE("Gaussian node speeds are clipped to [speed_min, speed_max]") {
  nlohmann::json document = minimal_platform();
  document["nodes"]["count"] = 200;
  document["nodes"]["speed_stddev"] = 2.0;  // wide: about 40 % of N(1, 2) falls below 0.5, 40 % above 1.5
  const Platform unclipped_low = parse_platform(document, "p.json");
  // Default bounds: [0.05, no upper bound].
  double least = 1e300, most = 0;
  for (int r = 0; r < 200; ++r) {
    least = std::min(least, unclipped_low.speed_factor(r));
    most = std::max(most, unclipped_low.speed_factor(r));
  }
  CHECK(least == 0.05);  // P(N(1, 2) < 0.05) = P(z < -0.475) ≈ 0.32: 200 draws hit the bound
  CHECK(most > 1.5);     // nothing clips from above
  document["nodes"]["speed_min"] = 0.5;
  document["nodes"]["speed_max"] = 1.5;
  const Platform clipped = parse_platform(document, "p.json");
  int at_min = 0, at_max = 0;
  for (int r = 0; r < 200; ++r) {
    // Same seed, same draws: each factor is the default-bounded draw pushed into [0.5, 1.5].
    const double drawn = unclipped_low.speed_factor(r);
    CHECK(clipped.speed_factor(r) == std::clamp(drawn, 0.5, 1.5));
    at_min += clipped.speed_factor(r) == 0.5;
    at_max += clipped.speed_factor(r) == 1.5;
  }
  CHECK(at_min > 0);
  CHECK(at_max > 0);
  // The bounds survive a round trip.
  const Platform again = parse_platform(to_json(clipped), "again.json");
  CHECK(again.nodes.speed_min == 0.5);
  CHECK(again.nodes.speed_max == 1.5);
  for (int r = 0; r < 200; ++r) CHECK(again.speed_factor(r) == clipped.speed_factor(r));
}

/** `document` with the value at JSON pointer `path` replaced by `value` must be refused, naming
 *  `path` and `value_text`. */
static void expect_value_error(nlohmann::json document, const std::string& path, const nlohmann::json& value,
                               const std::string& value_text) {
  document[nlohmann::json::json_pointer(path)] = value;
  expect_error(document, path, value_text);
}

TEST_CASE("bad Gaussian speeds: negative deviation, bounds <= 0 or crossed") {
  expect_value_error(minimal_platform(), "/nodes/speed_stddev", -0.1, "-0.1");
  expect_value_error(minimal_platform(), "/nodes/speed_min", 0, "0");
  expect_value_error(minimal_platform(), "/nodes/speed_min", -1, "-1");
  nlohmann::json crossed = minimal_platform();
  crossed["nodes"]["speed_min"] = 0.8;
  expect_value_error(crossed, "/nodes/speed_max", 0.5, "0.5");
  // Equal bounds are a fixed speed, not an error.
  nlohmann::json equal = minimal_platform();
  equal["nodes"]["speed_stddev"] = 0.3;
  equal["nodes"]["speed_min"] = 0.7;
  equal["nodes"]["speed_max"] = 0.7;
  const Platform fixed = parse_platform(equal, "p.json");
  for (int r = 0; r < 4; ++r) CHECK(fixed.speed_factor(r) == 0.7);
}

namespace {

// minimal_platform (4 nodes: 1 Tf, 100 GB/s, gemm 0.8, default 0.5) with two kinds:
//  rank 0 "cpu": 100 Gf, everything else inherited (100 GB/s, gemm 0.8, default 0.5);
//  ranks 1-3 "gpu": host 200 Gf, 20 GB/s, efficiency {gemm 0.5} (replaces the table; default
//  0.5 inherited); device 2 Tf, 80 GB/s, gemm 0.5, default 0.25, 4 GB/s host link, runs gemm
//  and im2col, its tensors in host memory.
nlohmann::json kinds_platform() {
  nlohmann::json document = minimal_platform();
  document["nodes"]["kinds"] = nlohmann::json::parse(R"([
    {"name": "cpu", "count": 1, "peak": "100Gf"},
    {"name": "gpu", "count": 3, "peak": "200Gf", "memory_bandwidth": "20GBps", "efficiency": {"gemm": 0.5},
     "device": {"peak": "2Tf", "memory_bandwidth": "80GBps", "efficiency": {"gemm": 0.5}, "default_efficiency": 0.25,
                "host_link": "4GBps", "kernels": ["gemm", "im2col"], "tensors": "host"}}
  ])");
  return document;
}

// C (1000×2000) = A (1000×500) · B (500×2000): 2·1000·2000·500 = 2e9 FLOP; operands
// 4·(1000·500 + 500·2000 + 1000·2000) = 4·3.5e6 = 1.4e7 bytes.
Op gemm_op() {
  return Op::compute_op("c.fwd", 0, Phase::forward, KernelClass::gemm, 2e9, 1.6e7, 16, GemmShape{1000, 2000, 500});
}

}  // namespace

TEST_CASE("node kinds: ranks map to kinds in list order and inherit what they leave out") {
  const Platform platform = parse_platform(kinds_platform(), "p.json");
  REQUIRE(platform.nodes.kinds.size() == 2);
  CHECK(platform.kind_of(0) == 0);
  CHECK(platform.kind_of(1) == 1);
  CHECK(platform.kind_of(3) == 1);
  CHECK(platform.kind_of(4) == -1);
  const NodeKind& cpu = platform.nodes.kinds[0];
  CHECK(cpu.host.peak_flops == 1e11);
  CHECK(cpu.host.memory_bandwidth_Bps == 1e11);        // inherited
  CHECK(cpu.host.efficiency_for(KernelClass::gemm) == 0.8);  // inherited
  CHECK_FALSE(cpu.device);
  const NodeKind& gpu = platform.nodes.kinds[1];
  CHECK(gpu.host.efficiency.size() == 1);  // its table replaces the nodes' one
  CHECK(gpu.host.default_efficiency == 0.5);
  REQUIRE(gpu.device);
  CHECK(gpu.device->host_link_Bps == 4e9);
  CHECK(gpu.device->runs(KernelClass::gemm));
  CHECK(gpu.device->runs(KernelClass::im2col));
  CHECK_FALSE(gpu.device->runs(KernelClass::col2im));
  CHECK_FALSE(platform.runs_on_device(KernelClass::gemm, 0));
  CHECK(platform.runs_on_device(KernelClass::gemm, 2));
  // Without kinds nothing changes: every rank is the nominal node.
  CHECK(parse_platform(minimal_platform(), "p.json").kind_of(0) == -1);
}

TEST_CASE("node kinds: op times on the host, on the device and over the host link") {
  constexpr double kTol = 1e-12;
  const Platform platform = parse_platform(kinds_platform(), "p.json");
  // Rank 0 (cpu kind, no device): gemm 2e9 / (1e11 · 0.8) = 0.025 s; memory 1.6e7 / 1e11 = 1.6e-4 s.
  CHECK(op_time_s(platform, gemm_op(), 0) == Approx(0.025).epsilon(kTol));
  // Rank 1 (gpu kind), gemm on the device: 2e9 / (2e12 · 0.5) = 2e-3 s (memory 1.6e7 / 8e10 =
  // 2e-4 s is less) + operands 1.4e7 B / 4e9 B/s = 3.5e-3 s -> 5.5e-3 s.
  CHECK(op_time_s(platform, gemm_op(), 1) == Approx(5.5e-3).epsilon(kTol));
  // Rank 2, im2col on the device: 1e6 / (2e12 · 0.25) = 2e-6 s; memory 4e8 / 8e10 = 5e-3 s;
  // link: op.bytes 4e8 / 4e9 = 0.1 s -> 0.105 s.
  const Op im2col = Op::compute_op("c.im2col", 0, Phase::forward, KernelClass::im2col, 1e6, 4e8, 16);
  CHECK(op_time_s(platform, im2col, 2) == Approx(0.105).epsilon(kTol));
  // Rank 3, eltwise stays on the gpu kind's host: 1e9 / (2e11 · 0.5) = 0.01 s; memory
  // 1e9 / 2e10 = 0.05 s -> 0.05 s, no link.
  const Op eltwise = Op::compute_op("relu.fwd", 1, Phase::forward, KernelClass::eltwise, 1e9, 1e9, 16);
  CHECK(op_time_s(platform, eltwise, 3) == Approx(0.05).epsilon(kTol));
  CHECK(platform.kernel_time_s(KernelClass::eltwise, 1e9, 1e9, 3) == Approx(0.05).epsilon(kTol));
  // kernel_time_s alone moves `bytes` over the link: gemm 2e-3 s + 1.6e7 / 4e9 = 4e-3 s -> 6e-3 s.
  CHECK(platform.kernel_time_s(KernelClass::gemm, 2e9, 1.6e7, 1) == Approx(6e-3).epsilon(kTol));
  // Speed factors apply on top, to the whole op: rank 2 at half speed takes 0.21 s.
  nlohmann::json slow = kinds_platform();
  slow["nodes"]["speed_factors"] = {1.0, 1.0, 0.5, 1.0};
  CHECK(op_time_s(parse_platform(slow, "p.json"), im2col, 2) == Approx(0.21).epsilon(kTol));
  // Calibration describes the CPUs: it wins on rank 0, a device op ignores it.
  nlohmann::json calibrated = kinds_platform();
  calibrated["calibration"] = {{"op_seconds", {{"c.fwd", "1s"}}}};
  const Platform measured = parse_platform(calibrated, "p.json");
  CHECK(op_time_s(measured, gemm_op(), 0) == Approx(1.0).epsilon(kTol));
  CHECK(op_time_s(measured, gemm_op(), 1) == Approx(5.5e-3).epsilon(kTol));
}

TEST_CASE("node kinds round-trip through JSON and take --set overrides by list index") {
  constexpr double kTol = 1e-12;
  const Platform platform = parse_platform(kinds_platform(), "p.json");
  const Platform again = parse_platform(to_json(platform), "again.json");
  REQUIRE(again.nodes.kinds.size() == 2);
  CHECK(again.nodes.kinds[1].name == "gpu");
  CHECK(again.nodes.kinds[1].count == 3);
  REQUIRE(again.nodes.kinds[1].device);
  CHECK(again.nodes.kinds[1].device->kernels == platform.nodes.kinds[1].device->kernels);
  for (int r = 0; r < 4; ++r) CHECK(op_time_s(again, gemm_op(), r) == Approx(op_time_s(platform, gemm_op(), r)).epsilon(kTol));
  // The device at 4 Tf: 2e9 / (4e12 · 0.5) = 1e-3 s + link 3.5e-3 s = 4.5e-3 s; rank 0 unchanged.
  const Platform faster = platform_with_overrides(kinds_platform(), "p.json", {{"nodes.kinds.1.device.peak", "4Tf"}},
                                                  "command line", "--set");
  CHECK(op_time_s(faster, gemm_op(), 1) == Approx(4.5e-3).epsilon(kTol));
  CHECK(op_time_s(faster, gemm_op(), 0) == Approx(0.025).epsilon(kTol));
  const auto set_error = [](const std::string& path, const std::string& value) {
    try {
      platform_with_overrides(kinds_platform(), "p.json", {{path, value}}, "command line", "--set");
    } catch (const InputError& error) {
      return error;
    }
    FAIL("no error for " << path);
    return InputError("", "", "", "");
  };
  // No kind 5; a bad unit inside a kind is told as the --set that caused it.
  const InputError missing = set_error("nodes.kinds.5.peak", "1Tf");
  CHECK(missing.file() == "command line");
  CHECK(missing.json_path() == "--set");
  CHECK(missing.value() == "nodes.kinds.5.peak=1Tf");
  const InputError unit = set_error("nodes.kinds.0.peak", "1Tbps");
  CHECK(unit.json_path() == "--set");
  CHECK(unit.value() == "nodes.kinds.0.peak=1Tbps");
  // A count that breaks the sum names the override too.
  CHECK(set_error("nodes.kinds.1.count", "4").value() == "nodes.kinds.1.count=4");
}

TEST_CASE("a dotted platform path is a JSON pointer") {
  CHECK(platform_pointer("network.bandwidth").to_string() == "/network/bandwidth");
  CHECK(platform_pointer("nodes.kinds.0.peak").to_string() == "/nodes/kinds/0/peak");
  const nlohmann::json document = nlohmann::json::parse(R"({"nodes": {"kinds": [{"peak": "1Tf"}]}})");
  const nlohmann::json* peak = value_at(document, platform_pointer("nodes.kinds.0.peak"));
  REQUIRE(peak != nullptr);
  CHECK(*peak == "1Tf");
  // Nothing there: a missing key or element, a path through a value, a list index that is no index.
  for (const char* path : {"nodes.peak", "nodes.kinds.1.peak", "nodes.kinds.0.peak.x", "nodes.kinds..peak",
                           "nodes.kinds.x.peak", "nodes.kinds.99999999999999999999999.peak"})
    CHECK(value_at(document, platform_pointer(path)) == nullptr);
}

TEST_CASE("bad node kinds name the kind's path") {
  const nlohmann::json kinds = kinds_platform();
  expect_value_error(kinds, "/nodes/kinds/1/count", 4, "4");  // 1 + 4 = 5 > 4 nodes
  expect_value_error(kinds, "/nodes/kinds/1/count", 2, "2");  // 1 + 2 = 3 < 4 nodes
  expect_value_error(kinds, "/nodes/kinds/0/count", 5, "5");  // more than the nodes alone
  expect_value_error(kinds, "/nodes/kinds/0/count", 0, "0");
  expect_value_error(kinds, "/nodes/kinds", nlohmann::json::array(), "[]");
  expect_value_error(kinds, "/nodes/kinds/1/name", "cpu", "cpu");  // the name of kind 0
  expect_value_error(kinds, "/nodes/kinds/1/device/kernels/1", "fft", "fft");
  expect_value_error(kinds, "/nodes/kinds/1/device/kernels/1", "gemm", "gemm");  // listed twice
  expect_value_error(kinds, "/nodes/kinds/1/device/host_link", "4GHz", "4GHz");
  expect_value_error(kinds, "/nodes/kinds/0/peek", "1Tf", "1Tf");  // a typo
  expect_value_error(kinds, "/nodes/kinds/1/efficiency/gemm", 1.5, "1.5");
  for (const char* key : {"host_link", "peak"}) {
    nlohmann::json missing = kinds;
    missing["nodes"]["kinds"][1]["device"].erase(key);
    expect_error(missing, std::string("/nodes/kinds/1/device/") + key, "(missing)");
  }
}

TEST_CASE("network.element_bytes: 4 by default, 8 for the Marques platforms, round-trips, bad values named") {
  CHECK(parse_platform(minimal_platform(), "p.json").network.element_bytes == 4);
  // The default is left out of the JSON, so platforms without the key print as before.
  CHECK_FALSE(to_json(parse_platform(minimal_platform(), "p.json"))["network"].contains("element_bytes"));
  nlohmann::json doubles = minimal_platform();
  doubles["network"]["element_bytes"] = 8;
  const Platform platform = parse_platform(doubles, "p.json");
  CHECK(platform.network.element_bytes == 8);
  CHECK(parse_platform(to_json(platform), "again.json").network.element_bytes == 8);
  // Marques et al.: 'All values transmitted are of type double'.
  for (const char* name : {"marques-lab", "marques-gpu", "marques-sim"}) CHECK(load_platform(name).network.element_bytes == 8);
  nlohmann::json zero = minimal_platform();
  zero["network"]["element_bytes"] = 0;
  expect_error(zero, "/network/element_bytes", "0");
  nlohmann::json text = minimal_platform();
  text["network"]["element_bytes"] = "8B";
  CHECK_THROWS_AS(parse_platform(text, "p.json"), InputError);
}

TEST_CASE("mechanism parameters parse, round-trip and price a message") {
  nlohmann::json document = minimal_platform();
  document["network"]["message_factors"] = {{{"from", "0B"}, {"latency", 1.0}, {"bandwidth", 1.0}},
                                            {{"from", "64KiB"}, {"latency", 3.0}, {"bandwidth", 0.5}}};
  document["network"]["reduction_rate"] = "2GBps";
  document["network"]["busy_bandwidth_fraction"] = 0.25;
  document["network"]["injection_contention"] = true;
  document["nodes"]["call_overhead"] = "5us";
  document["iteration_overhead"] = "2ms";
  document["comm_start_wait_max"] = "3ms";
  const Platform platform = parse_platform(document, "p.json");
  const NetworkSpec& net = platform.network;
  // A 65536-byte message is in the second piece: α·3 + 65536 / (β·0.5).
  const double alpha_s = net.alpha_s(), beta_Bps = net.bandwidth_Bps;
  CHECK(net.message_time_s(65536) == Approx(3 * alpha_s + 65536 / (0.5 * beta_Bps)).epsilon(1e-12));
  CHECK(net.message_time_s(65535) == Approx(alpha_s + 65535 / beta_Bps).epsilon(1e-12));
  CHECK(net.reduction_rate_Bps == Approx(2e9));
  CHECK(platform.nodes.call_overhead_s == Approx(5e-6));
  CHECK(platform.iteration_overhead_s == Approx(2e-3));
  const Platform again = parse_platform(to_json(platform), "again.json");
  REQUIRE(again.network.message_factors.size() == 2);
  CHECK(again.network.message_factors[1].from_bytes == Approx(65536));
  CHECK(again.network.message_factors[1].latency_factor == Approx(3.0));
  CHECK(again.network.busy_bandwidth_fraction == Approx(0.25));
  CHECK(again.network.injection_contention);
  CHECK(again.network.reduction_rate_Bps == Approx(2e9));
  CHECK(again.nodes.call_overhead_s == Approx(5e-6));
  CHECK(again.iteration_overhead_s == Approx(2e-3));
  CHECK(platform.comm_start_wait_max_s == Approx(3e-3));
  CHECK(again.comm_start_wait_max_s == Approx(3e-3));
}

TEST_CASE("a link's token bucket parses, round-trips and prices its burst") {
  nlohmann::json document = minimal_platform();
  document["network"]["link_burst"] = "256KiB";
  document["network"]["link_peak_bandwidth"] = "200MBps";
  const Platform platform = parse_platform(document, "p.json");
  CHECK(platform.network.link_burst_bytes == 262144);
  CHECK(platform.network.link_peak_bandwidth_Bps == Approx(2e8));
  // 1e6 B of burst at 2e8 B/s: 5e-3 s; with no peak rate a burst passes at once.
  CHECK(platform.network.burst_time_s(1e6) == Approx(5e-3).epsilon(1e-12));
  const Platform again = parse_platform(to_json(platform), "again.json");
  CHECK(again.network.link_burst_bytes == 262144);
  CHECK(again.network.link_peak_bandwidth_Bps == Approx(2e8));
  CHECK(parse_platform(minimal_platform(), "p.json").network.burst_time_s(1e6) == 0.0);
  CHECK_FALSE(to_json(parse_platform(minimal_platform(), "p.json"))["network"].contains("link_burst"));
  expect_error(minimal_platform_with("/network/link_burst", "-1KiB"), "/network/link_burst", "-1KiB");
  expect_error(minimal_platform_with("/network/link_peak_bandwidth", "fast"), "/network/link_peak_bandwidth", "fast");
}

TEST_CASE("kind size factors parse, round-trip and interpolate in log2 of the collective's size") {
  nlohmann::json document = minimal_platform();
  document["network"]["kind_size_factors"] = {
      {"allgather",
       {{{"bytes", "1KiB"}, {"factor", 1.0}, {"step_overhead", "400us"}},
        {{"bytes", "1MiB"}, {"factor", 1.0}},
        {{"bytes", "4MiB"}, {"factor", 1.4}}}}};
  const Platform platform = parse_platform(document, "p.json");
  const NetworkSpec& net = platform.network;
  // 2 MiB is halfway between 1 and 4 MiB in log2: 1.0 + 0.5·(1.4 − 1.0) = 1.2, no overhead.
  CHECK(net.kind_step_pricing("allgather", 2.0 * 1024 * 1024).size_factor == Approx(1.2).epsilon(1e-12));
  CHECK(net.kind_step_pricing("allgather", 2.0 * 1024 * 1024).step_overhead_s == 0.0);
  // 32 KiB is halfway between 1 KiB and 1 MiB in log2: overhead 400 µs − 0.5·400 µs = 200 µs.
  CHECK(net.kind_step_pricing("allgather", 32.0 * 1024).step_overhead_s == Approx(200e-6).epsilon(1e-12));
  CHECK(net.kind_step_pricing("allgather", 32.0 * 1024).size_factor == Approx(1.0).epsilon(1e-12));
  // Outside the points the nearest point's values hold; a kind not listed has factor 1 and no overhead.
  CHECK(net.kind_step_pricing("allgather", 100).step_overhead_s == Approx(400e-6).epsilon(1e-12));
  CHECK(net.kind_step_pricing("allgather", 64.0 * 1024 * 1024).size_factor == Approx(1.4));
  CHECK(net.kind_step_pricing("allreduce", 2.0 * 1024 * 1024).size_factor == 1.0);
  CHECK(net.kind_step_pricing("allreduce", 1024).step_overhead_s == 0.0);
  const Platform again = parse_platform(to_json(platform), "again.json");
  REQUIRE(again.network.kind_size_factors.count("allgather") == 1);
  REQUIRE(again.network.kind_size_factors.at("allgather").size() == 3);
  CHECK(again.network.kind_size_factors.at("allgather")[0].step_overhead_s == Approx(400e-6).epsilon(1e-12));
  CHECK(again.network.kind_size_factors.at("allgather")[2].bytes == 4.0 * 1024 * 1024);
  CHECK(again.network.kind_size_factors.at("allgather")[2].factor == 1.4);
  CHECK(again.network.kind_size_factors.at("allgather")[2].step_overhead_s == 0.0);
}

TEST_CASE("bad kind size factors name the file, the JSON path and the value") {
  nlohmann::json kind = minimal_platform();
  kind["network"]["kind_size_factors"] = {{"allgatherv", {{{"bytes", "1MiB"}, {"factor", 1.0}}}}};
  expect_error(kind, "/network/kind_size_factors/allgatherv", "allgatherv");
  nlohmann::json unsorted = minimal_platform();
  unsorted["network"]["kind_size_factors"] = {
      {"send", {{{"bytes", "4MiB"}, {"factor", 1.0}}, {{"bytes", "1MiB"}, {"factor", 1.0}}}}};
  expect_error(unsorted, "/network/kind_size_factors/send/1/bytes", "1MiB");
  nlohmann::json range = minimal_platform();
  range["network"]["kind_size_factors"] = {{"send", {{{"bytes", "1MiB"}, {"factor", 0}}}}};
  expect_error(range, "/network/kind_size_factors/send/0/factor", "0");
  nlohmann::json overhead = minimal_platform();
  overhead["network"]["kind_size_factors"] = {{"send", {{{"bytes", "1KiB"}, {"factor", 1.0}, {"step_overhead", "-1us"}}}}};
  expect_error(overhead, "/network/kind_size_factors/send/0/step_overhead", "-1us");
  nlohmann::json empty = minimal_platform();
  empty["network"]["kind_size_factors"] = {{"send", nlohmann::json::array()}};
  CHECK_THROWS_AS(parse_platform(empty, "p.json"), InputError);
}

TEST_CASE("bad mechanism parameters name the file, the JSON path and the value") {
  nlohmann::json unsorted = minimal_platform();
  unsorted["network"]["message_factors"] = {{{"from", "0B"}}, {{"from", "1MiB"}}, {{"from", "1KiB"}}};
  expect_error(unsorted, "/network/message_factors/2/from", "1KiB");
  nlohmann::json late_start = minimal_platform();
  late_start["network"]["message_factors"] = {{{"from", "1KiB"}, {"bandwidth", 0.9}}};
  expect_error(late_start, "/network/message_factors/0/from", "1KiB");
  nlohmann::json zero_factor = minimal_platform();
  zero_factor["network"]["message_factors"] = {{{"from", "0B"}, {"bandwidth", 0}}};
  expect_error(zero_factor, "/network/message_factors/0/bandwidth", "0");
  nlohmann::json fraction = minimal_platform();
  fraction["network"]["busy_bandwidth_fraction"] = 1.5;
  expect_error(fraction, "/network/busy_bandwidth_fraction", "1.5");
  nlohmann::json overhead = minimal_platform();
  overhead["iteration_overhead"] = "-1s";
  expect_error(overhead, "/iteration_overhead", "-1s");
  nlohmann::json start_wait = minimal_platform();
  start_wait["comm_start_wait_max"] = "fast";
  expect_error(start_wait, "/comm_start_wait_max", "fast");
}

TEST_CASE("image-parallel kernels keep min(images, cores) cores busy") {
  // im2col of 2 images touching 1e9 B at 1e11 B/s: roofline 0.01 s. On 32 cores looping over
  // images, 2 cores work: 0.01 · 32/2 = 0.16 s. GEMMs and updates are not image loops; 64
  // images use every core.
  Platform platform = parse_platform(minimal_platform(), "p.json");
  platform.nodes.cores = 32;
  platform.nodes.memory_bandwidth_Bps = 1e11;
  const Op im2col = Op::compute_op("conv1.im2col", 0, Phase::forward, KernelClass::im2col, 0, 1e9, 2);
  const Op update = Op::compute_op("conv1.upd", 0, Phase::update, KernelClass::update, 0, 1e9, 2);
  const Op wide = Op::compute_op("conv1.im2col", 0, Phase::forward, KernelClass::im2col, 0, 1e9, 64);
  CHECK(op_time_s(platform, im2col, 0) == Approx(0.01).epsilon(1e-12));
  platform.nodes.image_parallel_kernels = true;
  CHECK(op_time_s(platform, im2col, 0) == Approx(0.16).epsilon(1e-12));
  CHECK(op_time_s(platform, update, 0) == Approx(0.01).epsilon(1e-12));
  CHECK(op_time_s(platform, wide, 0) == Approx(0.01).epsilon(1e-12));
  platform.nodes.call_overhead_s = 1e-3;  // added once per op
  CHECK(op_time_s(platform, wide, 0) == Approx(0.011).epsilon(1e-12));
}

TEST_CASE("core bandwidth: a few busy cores stream at their own rate, all of them at the node's") {
  // A Cori Haswell node: 32 cores, DRAM 124 GB/s, one core 19.9 GB/s (single-thread STREAM).
  // im2col of 2 images touching 1e8 B keeps 2 cores busy:
  //   1e8 / min(124e9, 2 · 19.9e9) = 1e8 / 39.8e9 = 2.5126 ms
  // (the even split, 124e9 · 2/32 = 7.75e9 B/s, would give 12.903 ms). 16 images: 16 · 19.9e9 =
  // 318.4e9 > 124e9, so DRAM: 1e8 / 124e9 = 0.80645 ms. A GEMM and the update use all 32 cores:
  // the DRAM term, 1e8 / 124e9, or the compute term when larger.
  const double tolerance = 1e-12;
  Platform platform = parse_platform(minimal_platform(), "p.json");
  platform.nodes.cores = 32;
  platform.nodes.memory_bandwidth_Bps = 124e9;
  platform.nodes.image_parallel_kernels = true;
  const Op two = Op::compute_op("conv1.im2col", 0, Phase::forward, KernelClass::im2col, 0, 1e8, 2);
  const Op sixteen = Op::compute_op("conv1.im2col", 0, Phase::forward, KernelClass::im2col, 0, 1e8, 16);
  const Op update = Op::compute_op("conv1.upd", 0, Phase::update, KernelClass::update, 0, 1e8, 2);
  CHECK(op_time_s(platform, two, 0) == Approx(1e8 / 7.75e9).epsilon(tolerance));  // 0 = the even split
  platform.nodes.core_bandwidth_Bps = 19.9e9;
  CHECK(op_time_s(platform, two, 0) == Approx(2.5125628e-3).epsilon(1e-7));
  CHECK(op_time_s(platform, sixteen, 0) == Approx(1e8 / 124e9).epsilon(tolerance));
  CHECK(op_time_s(platform, update, 0) == Approx(1e8 / 124e9).epsilon(tolerance));
  // The compute term of 2 busy cores: 4e9 FLOP at 1e12 · 0.5 (minimal platform) · 2/32 = 0.128 s.
  const Op busy = Op::compute_op("pool1.fwd", 1, Phase::forward, KernelClass::pool, 4e9, 1e8, 2);
  platform.nodes.peak_flops = 1e12;
  platform.nodes.default_efficiency = 0.5;
  CHECK(op_time_s(platform, busy, 0) == Approx(0.128).epsilon(tolerance));
  // The field round-trips through the platform's JSON form and is absent when 0.
  const Platform again = parse_platform(to_json(platform), "again.json");
  CHECK(again.nodes.core_bandwidth_Bps == Approx(19.9e9).epsilon(tolerance));
  platform.nodes.core_bandwidth_Bps = 0;
  CHECK_FALSE(to_json(platform)["nodes"].contains("core_bandwidth"));
  nlohmann::json negative = minimal_platform();
  negative["nodes"]["core_bandwidth"] = "-1GBps";
  expect_error(negative, "/nodes/core_bandwidth", "-1GBps");
}

namespace {

// kinds_platform with the gpu kind's tensors resident on its device (messages staged, the
// default) and 10 us per device call.
nlohmann::json resident_platform() {
  nlohmann::json document = kinds_platform();
  nlohmann::json& device = document["nodes"]["kinds"][1]["device"];
  device["tensors"] = "resident";
  device["call_overhead"] = "10us";
  return document;
}

}  // namespace

TEST_CASE("resident tensors: a GPU conv layer priced by hand") {
  constexpr double kTol = 1e-12;
  const Platform platform = parse_platform(resident_platform(), "p.json");
  // Forward of a conv layer, 8 images, 16 -> 32 channels, 3x3, 32x32 output, on the gpu kind
  // (rank 1): im2col reads the input (8·16·32·32·4 = 524,288 B) and writes the columns
  // (8·144·1024·4 = 4,718,592 B), 5,242,880 B in all; the GEMM is (32 × 8192) = (32 × 144) ·
  // (144 × 8192), 2·32·8192·144 = 75,497,472 FLOP.
  const Op im2col = Op::compute_op("c.im2col", 0, Phase::forward, KernelClass::im2col, 0, 5242880, 8);
  const Op gemm = Op::compute_op("c.fwd", 0, Phase::forward, KernelClass::gemm, 75497472, 5767168, 8,
                                 GemmShape{32, 8192, 144});
  // im2col on the device: memory 5,242,880 / 8e10 = 6.5536e-5 s, no host link (the input is on
  // the device already) + 1e-5 s call = 7.5536e-5 s.
  CHECK(op_time_s(platform, im2col, 1) == Approx(7.5536e-5).epsilon(kTol));
  // GEMM on the device: 75,497,472 / (2e12 · 0.5) = 7.5497472e-5 s (memory 5,767,168 / 8e10 =
  // 7.2090e-5 s is less) + 1e-5 s call = 8.5497472e-5 s.
  CHECK(op_time_s(platform, gemm, 1) == Approx(8.5497472e-5).epsilon(kTol));
  // The layer: 1.61033472e-4 s. With tensors in host memory the same two ops also move the
  // columns' bytes and the GEMM's A, B, C (4·(32·144 + 144·8192 + 32·8192) = 5,785,600 B) over
  // the 4 GB/s link: + (5,242,880 + 5,785,600) / 4e9 = 2.75712e-3 s.
  nlohmann::json host = resident_platform();
  host["nodes"]["kinds"][1]["device"]["tensors"] = "host";
  const Platform copied = parse_platform(host, "p.json");
  CHECK(op_time_s(copied, im2col, 1) + op_time_s(copied, gemm, 1) ==
        Approx(1.61033472e-4 + 2.75712e-3).epsilon(kTol));
  // An op the device does not run (col2im here) reads the resident tensors over the link: on
  // the host 1e6 B / 2e10 B/s = 5e-5 s (compute 0) + 1e6 / 4e9 = 2.5e-4 s -> 3e-4 s; with
  // tensors in host memory it takes the host roofline alone.
  const Op col2im = Op::compute_op("c.col2im", 0, Phase::backward_data, KernelClass::col2im, 0, 1e6, 8);
  CHECK(op_time_s(platform, col2im, 1) == Approx(3e-4).epsilon(kTol));
  CHECK(op_time_s(copied, col2im, 1) == Approx(5e-5).epsilon(kTol));
  // Rank 0 has no device: nothing changes there.
  CHECK(op_time_s(platform, col2im, 0) == Approx(op_time_s(copied, col2im, 0)).epsilon(kTol));
}

TEST_CASE("resident tensors: staged messages copy each collective's buffers over the host link") {
  constexpr double kTol = 1e-12;
  const Platform platform = parse_platform(resident_platform(), "p.json");
  Collective allreduce;
  allreduce.kind = CollectiveKind::allreduce;
  allreduce.bytes = 4e8;
  allreduce.group = {1, 2, 3};
  // Every member copies 4e8 B out and back at 4 GB/s: 0.1 s before, 0.1 s after.
  StagingTimes times = staging_times(allreduce, platform);
  CHECK(times.before_s == Approx(0.1).epsilon(kTol));
  CHECK(times.after_s == Approx(0.1).epsilon(kTol));
  // An allgather's members send their 4e8 B and receive 3 · 4e8 B: 0.1 s and 0.3 s. Rank 0
  // (no device) in the group changes nothing.
  Collective allgather = allreduce;
  allgather.kind = CollectiveKind::allgather;
  allgather.group = {0, 1, 2};
  times = staging_times(allgather, platform);
  CHECK(times.before_s == Approx(0.1).epsilon(kTol));
  CHECK(times.after_s == Approx(0.3).epsilon(kTol));
  // Direct messages (GPU-aware MPI) and tensors in host memory copy nothing.
  nlohmann::json direct = resident_platform();
  direct["nodes"]["kinds"][1]["device"]["messages"] = "direct";
  CHECK(staging_times(allreduce, parse_platform(direct, "p.json")).total_s() == 0);
  CHECK(staging_times(allreduce, parse_platform(kinds_platform(), "p.json")).total_s() == 0);
  // A group of one rank copies nothing.
  allreduce.group = {0};
  CHECK(staging_times(allreduce, platform).total_s() == 0);
}

TEST_CASE("resident tensors round-trip through JSON, bad device fields name their path") {
  const Platform platform = parse_platform(resident_platform(), "p.json");
  const Platform again = parse_platform(to_json(platform), "again.json");
  REQUIRE(again.nodes.kinds[1].device);
  CHECK(again.nodes.kinds[1].device->tensors == DeviceTensors::resident);
  CHECK(again.nodes.kinds[1].device->messages == DeviceMessages::staged);
  CHECK(again.nodes.kinds[1].device->call_overhead_s == Approx(1e-5).epsilon(1e-12));
  const nlohmann::json resident = resident_platform();
  expect_value_error(resident, "/nodes/kinds/1/device/tensors", "gpu", "gpu");
  expect_value_error(resident, "/nodes/kinds/1/device/messages", "rdma", "rdma");
  expect_value_error(resident, "/nodes/kinds/1/device/call_overhead", "-1us", "-1us");
  nlohmann::json host = kinds_platform();
  expect_value_error(host, "/nodes/kinds/1/device/messages", "direct", "direct");
}
