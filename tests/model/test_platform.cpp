#include <catch2/catch.hpp>

#include "model/error.hpp"
#include "model/platform.hpp"

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

TEST_CASE("bad platform input names the file, the JSON path and the value") {
  const auto expect_error = [](nlohmann::json document, const std::string& path, const std::string& value) {
    try {
      parse_platform(document, "bad.json");
      FAIL("no error for " << path);
    } catch (const InputError& error) {
      CHECK(error.file() == "bad.json");
      CHECK(error.json_path() == path);
      CHECK(error.value() == value);
    }
  };
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
