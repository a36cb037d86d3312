// platform_check PLATFORM.json RANKS: the calibration output parses as a platform
// (model/platform.cpp), has a measured GEMM rate for at least one shape, measured seconds
// for at least one non-GEMM op label, every rate and time positive and finite, and - when
// RANKS >= 2 - a network bandwidth and latency that are positive and finite (measured).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/platform.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: platform_check PLATFORM.json RANKS\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "platform_check: cannot read %s\n", argv[1]);
    return 1;
  }
  const cnnpar::Platform p = cnnpar::parse_platform(nlohmann::json::parse(in), argv[1]);
  int failures = 0;
  const auto expect = [&](bool ok, const char* what) {
    if (!ok) {
      std::fprintf(stderr, "platform_check: FAIL: %s\n", what);
      ++failures;
    }
  };
  expect(!p.measured_gemm_flops.empty(), "no calibrated GEMM rates");
  expect(!p.measured_op_s.empty(), "no calibrated op times");
  for (const auto& [shape, rate] : p.measured_gemm_flops) expect(std::isfinite(rate) && rate > 0, shape.c_str());
  for (const auto& [label, seconds] : p.measured_op_s) expect(std::isfinite(seconds) && seconds > 0, label.c_str());
  if (std::atoi(argv[2]) >= 2) {
    expect(std::isfinite(p.network.bandwidth_Bps) && p.network.bandwidth_Bps > 0, "bandwidth");
    expect(std::isfinite(p.network.latency_s) && p.network.latency_s >= 0, "latency");
  }
  std::printf("platform_check: %s: %zu GEMM rates, %zu op times, bandwidth %.3g B/s, latency %.3g s, %d failure(s)\n",
              argv[1], p.measured_gemm_flops.size(), p.measured_op_s.size(), p.network.bandwidth_Bps,
              p.network.latency_s, failures);
  return failures == 0 ? 0 : 1;
}
