// platform_check PLATFORM.json RANKS: the calibration output parses as a platform
// (model/platform.cpp), has a GEMM grid (every rate positive and finite), a fitted memory
// bandwidth and call overhead, no per-op seconds (written only with --op-seconds), and -
// when RANKS >= 2 - a network bandwidth and latency that are positive and finite and
// message factors that start at 0 B (measured), unless `source` says the curves could not be
// fitted and the base network was kept, and measured progress mechanisms: `source` reports
// them, comm_compute_slowdown finite in [0, 100], network.busy_bandwidth_fraction in (0, 1].
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

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
  expect(p.measured_op_s.empty(), "per-op seconds written without --op-seconds");
  expect(std::isfinite(p.nodes.memory_bandwidth_Bps) && p.nodes.memory_bandwidth_Bps > 0, "memory bandwidth");
  expect(std::isfinite(p.nodes.call_overhead_s) && p.nodes.call_overhead_s >= 0, "call overhead");
  for (const auto& [shape, rate] : p.measured_gemm_flops) expect(std::isfinite(rate) && rate > 0, shape.c_str());
  for (const auto& [label, seconds] : p.measured_op_s) expect(std::isfinite(seconds) && seconds > 0, label.c_str());
  if (std::atoi(argv[2]) >= 2) {
    expect(std::isfinite(p.network.bandwidth_Bps) && p.network.bandwidth_Bps > 0, "bandwidth");
    expect(std::isfinite(p.network.latency_s) && p.network.latency_s >= 0, "latency");
    // Two ranks oversubscribing a loaded 2-core machine can give curves too noisy to fit; the
    // calibration then keeps the base network and must say so in `source`.
    const bool kept = p.source.find("not fitted") != std::string::npos;
    if (kept) std::printf("platform_check: network not fitted (see source): base network kept\n");
    expect(kept || (!p.network.message_factors.empty() && p.network.message_factors.front().from_bytes == 0),
           "message factors from 0 B");
    expect(p.source.find("; progress: ") != std::string::npos && p.source.find("progress: not fitted") == std::string::npos,
           "progress mechanisms measured (source)");
    expect(std::isfinite(p.comm_compute_slowdown) && p.comm_compute_slowdown >= 0 && p.comm_compute_slowdown <= 100,
           "comm_compute_slowdown in [0, 100]");
    expect(p.network.busy_bandwidth_fraction > 0 && p.network.busy_bandwidth_fraction <= 1,
           "busy_bandwidth_fraction in (0, 1]");
  }
  std::printf("platform_check: %s: %zu GEMM rates, %zu op times, bandwidth %.3g B/s, latency %.3g s, comm_compute_slowdown "
              "%.3g, busy_bandwidth_fraction %.3g, %d failure(s)\n",
              argv[1], p.measured_gemm_flops.size(), p.measured_op_s.size(), p.network.bandwidth_Bps,
              p.network.latency_s, p.comm_compute_slowdown, p.network.busy_bandwidth_fraction, failures);
  return failures == 0 ? 0 : 1;
}
