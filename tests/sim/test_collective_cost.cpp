// Closed-form collective times (sim/analytic/collective_cost.hpp) against the equations,
// each evaluated by hand in the comment.
#include <catch2/catch.hpp>

#include "model/collective_algorithm.hpp"
#include "sim/analytic/collective_cost.hpp"

using namespace cnnpar;
using namespace cnnpar::analytic;

namespace {

constexpr double kTol = 1e-12;  // relative; closed forms are a handful of flops

Platform network_platform(double alpha_latency_s, double overhead_s, double bandwidth_Bps) {
  Platform p;
  p.name = "test";
  p.nodes.count = 256;
  p.network.latency_s = alpha_latency_s;
  p.network.overhead_s = overhead_s;
  p.network.bandwidth_Bps = bandwidth_Bps;
  return p;
}

Collective make(CollectiveKind kind, int p, double bytes, Algorithm algorithm = Algorithm::automatic) {
  Collective c;
  c.id = 0;
  c.kind = kind;
  c.bytes = bytes;
  for (int r = 0; r < p; ++r) c.group.push_back(r);
  c.root = (kind == CollectiveKind::bcast || kind == CollectiveKind::reduce || kind == CollectiveKind::gather ||
            kind == CollectiveKind::scatter || kind == CollectiveKind::send)
               ? 0
               : -1;
  c.algorithm = algorithm;
  return c;
}

}  // namespace

TEST_CASE("ring allreduce closed form", "[collective]") {
  // α = 1 µs + 0.5 µs = 1.5e-6 s, β = 1e9 B/s, P = 4, n = 8e6 B:
  // 2·3·1.5e-6 + 2·(3/4)·8e6/1e9 = 9e-6 + 0.012 = 0.012009 s
  const Platform p = network_platform(1e-6, 0.5e-6, 1e9);
  const Collective c = make(CollectiveKind::allreduce, 4, 8e6);
  CHECK(resolve_algorithm(c, p) == Algorithm::ring);  // 8e6 >= 64 KiB
  CHECK(collective_time_s(c, p) == Approx(0.012009).epsilon(kTol));
  CHECK(ring_allreduce_s(4, 8e6, 1.5e-6, 1e9) == Approx(0.012009).epsilon(kTol));
}

TEST_CASE("automatic allreduce uses recursive doubling for small power-of-two groups", "[collective]") {
  // P = 8, n = 4096 B < 64 KiB: log2 8 · (α + n/β) = 3 · (2e-6 + 4096/1e9) = 3 · 6.096e-6 = 1.8288e-5 s
  const Platform p = network_platform(2e-6, 0, 1e9);
  const Collective small = make(CollectiveKind::allreduce, 8, 4096);
  CHECK(resolve_algorithm(small, p) == Algorithm::recursive_doubling);
  CHECK(collective_time_s(small, p) == Approx(1.8288e-5).epsilon(kTol));
  // P = 6 (not a power of two), same size: ring 2·5·2e-6 + 2·(5/6)·4096/1e9 = 2e-5 + 6.826666…e-6
  const Collective six = make(CollectiveKind::allreduce, 6, 4096);
  CHECK(resolve_algorithm(six, p) == Algorithm::ring);
  CHECK(collective_time_s(six, p) == Approx(2e-5 + 2.0 * 5.0 / 6.0 * 4096 / 1e9).epsilon(kTol));
  // Explicit recursive doubling on P = 6 falls back to ring too.
  const Collective forced = make(CollectiveKind::allreduce, 6, 4096, Algorithm::recursive_doubling);
  CHECK(collective_time_s(forced, p) == Approx(collective_time_s(six, p)).epsilon(kTol));
}

TEST_CASE("ring allgather and reduce-scatter closed forms", "[collective]") {
  // α = 1e-6, β = 2e9, P = 5, bytes = 1e6 per rank.
  // allgather: n_total = 5e6: 4·1e-6 + (4/5)·5e6/2e9 = 4e-6 + 2e-3 = 0.002004 s
  // reduce_scatter: n_total = 1e6: 4e-6 + (4/5)·1e6/2e9 = 4e-6 + 4e-4 = 0.000404 s
  const Platform p = network_platform(1e-6, 0, 2e9);
  CHECK(collective_time_s(make(CollectiveKind::allgather, 5, 1e6), p) == Approx(0.002004).epsilon(kTol));
  CHECK(collective_time_s(make(CollectiveKind::reduce_scatter, 5, 1e6), p) == Approx(0.000404).epsilon(kTol));
}

TEST_CASE("binomial, direct and send closed forms", "[collective]") {
  // α = 1e-6, β = 1e9, P = 5 (⌈log2 5⌉ = 3), bytes = 1e6.
  const Platform p = network_platform(1e-6, 0, 1e9);
  // bcast/reduce: 3·(1e-6 + 1e-3) = 0.003003 s
  CHECK(collective_time_s(make(CollectiveKind::bcast, 5, 1e6), p) == Approx(0.003003).epsilon(kTol));
  CHECK(collective_time_s(make(CollectiveKind::reduce, 5, 1e6), p) == Approx(0.003003).epsilon(kTol));
  // gather/scatter: 3·1e-6 + (4/5)·5e6/1e9 = 3e-6 + 4e-3 = 0.004003 s
  CHECK(collective_time_s(make(CollectiveKind::gather, 5, 1e6), p) == Approx(0.004003).epsilon(kTol));
  CHECK(collective_time_s(make(CollectiveKind::scatter, 5, 1e6), p) == Approx(0.004003).epsilon(kTol));
  // alltoall: 4·(1e-6 + 1e6/(5·1e9)) = 4·(1e-6 + 2e-4) = 0.000804 s
  CHECK(collective_time_s(make(CollectiveKind::alltoall, 5, 1e6), p) == Approx(0.000804).epsilon(kTol));
  // send: 1e-6 + 1e-3 = 0.001001 s
  CHECK(collective_time_s(make(CollectiveKind::send, 2, 1e6), p) == Approx(0.001001).epsilon(kTol));
}

TEST_CASE("a group of one costs nothing", "[collective]") {
  const Platform p = network_platform(1e-6, 1e-6, 1e9);
  for (CollectiveKind kind : {CollectiveKind::allreduce, CollectiveKind::allgather, CollectiveKind::reduce_scatter,
                              CollectiveKind::bcast, CollectiveKind::gather, CollectiveKind::alltoall})
    CHECK(collective_time_s(make(kind, 1, 1e9), p) == 0.0);
}

TEST_CASE("ceil_log2 and powers of two", "[collective]") {
  CHECK(ceil_log2(1) == 0);
  CHECK(ceil_log2(2) == 1);
  CHECK(ceil_log2(5) == 3);
  CHECK(ceil_log2(128) == 7);
  CHECK(ceil_log2(129) == 8);
  CHECK(is_power_of_two(64));
  CHECK_FALSE(is_power_of_two(96));
}
