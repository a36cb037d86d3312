#pragma once
// The parameter-server cases both engines replay (tests/sim/test_analytic_serve.cpp by hand,
// tests/simgrid/test_simgrid_serve.cpp against the analytic engine): server rank 0, worker 1
// slow (t1 = 0.02 s a round), worker 2 fast (t2 = 0.01 s), every push and reply 1e6 B.
#include "model/platform.hpp"
#include "tests/model/serve_fixture.hpp"

namespace cnnpar::test {

inline constexpr double kServeAlpha_s = 1e-3;                     // latency 0.5 ms + overhead 0.5 ms
inline constexpr double kServeBandwidth_Bps = 1e9;
inline constexpr double kServeBytes = 1e6;
inline constexpr double kServeMessage_s = kServeAlpha_s + kServeBytes / kServeBandwidth_Bps;  // c = 2e-3 s
inline constexpr double kServeFlops_s = 1e12 * 0.5;              // peak x efficiency, FLOP/s
inline constexpr double kSlowTrain_s = 0.02, kFastTrain_s = 0.01;  // t1, t2

/** A contention-free crossbar of 3 nodes: α = 1 ms, β = 1 GB/s, 5e11 FLOP/s for every kernel. */
inline Platform serve_platform() {
  Platform platform;
  platform.name = "serve-test";
  platform.nodes.count = 3;
  platform.nodes.peak_flops = 1e12;
  platform.nodes.default_efficiency = 0.5;
  platform.nodes.memory_bandwidth_Bps = 1e15;
  platform.network.topology = Topology::crossbar;
  platform.network.bandwidth_Bps = kServeBandwidth_Bps;
  platform.network.latency_s = 0.5e-3;
  platform.network.overhead_s = 0.5e-3;
  platform.resolve_speed_factors();
  return platform;
}

/** 2 rounds of workers 1 (slow) and 2 (fast); one merge takes merge_s. */
inline ServeSetup serve_case(ServeOrder order, double merge_s) {
  return {.order = order,
          .rounds = 2,
          .worker_flops = {kSlowTrain_s * kServeFlops_s, kFastTrain_s * kServeFlops_s},
          .bytes = kServeBytes,
          .merge_flops = merge_s * kServeFlops_s};
}

}  // namespace cnnpar::test
