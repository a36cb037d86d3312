// Closed-form collective times (sim/analytic/collective_cost.hpp) against the equations,
// each evaluated by hand in the comment.
#include <catch2/catch.hpp>

#include <array>
#include <vector>

#include "model/scenarios.hpp"
#include "sim/analytic/collective_cost.hpp"
#include "sim/analytic/collective_durations.hpp"
#include "system/collective.hpp"
#include "system/collective_algorithm.hpp"
#include "tests/sim/schedule_cases.hpp"
#include "workload/strategy.hpp"

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

TEST_CASE("mpich follows MPICH 4.0's selection for its nonblocking collectives", "[collective]") {
  // maint/tuning/coll/mpir/generic.json of MPICH 4.0.2, for FP32 MPI_SUM (built in, commutative):
  //  iallreduce: avg_msg_size <= 2048 B or count < pof2 → recursive doubling, else
  //    reduce-scatter + allgather;
  //  iallgather, P a power of two: P · part < 524288 B → recursive doubling, else ring;
  //  ireduce_scatter_block: recvcount · P < 524288 (elements) → recursive halving, else pairwise.
  const Platform p = network_platform(1e-6, 0, 1e9);
  const auto rule = [&](CollectiveKind kind, int ranks, double bytes) {
    return resolve_algorithm(make(kind, ranks, bytes, Algorithm::mpich), p);
  };
  CHECK(rule(CollectiveKind::allreduce, 4, 2048) == Algorithm::recursive_doubling);
  CHECK(rule(CollectiveKind::allreduce, 4, 2052) == Algorithm::reduce_scatter_allgather);
  CHECK(rule(CollectiveKind::allreduce, 4, 36881920) == Algorithm::reduce_scatter_allgather);
  CHECK(rule(CollectiveKind::allgather, 4, 131068) == Algorithm::recursive_doubling);  // 524272 B gathered
  CHECK(rule(CollectiveKind::allgather, 4, 131072) == Algorithm::ring);                // 524288 B gathered
  CHECK(rule(CollectiveKind::reduce_scatter, 4, 4.0 * 524287) == Algorithm::recursive_halving);
  CHECK(rule(CollectiveKind::reduce_scatter, 4, 4.0 * 524288) == Algorithm::pairwise);
  // MPICH folds a group that is not a power of two; the engines price a ring there, and the
  // kinds MPICH's table leaves to other algorithms keep the automatic choice.
  CHECK(rule(CollectiveKind::allreduce, 6, 1e6) == Algorithm::ring);
  CHECK(rule(CollectiveKind::allgather, 6, 1000) == Algorithm::ring);
  CHECK(rule(CollectiveKind::reduce_scatter, 6, 4000) == Algorithm::ring);
  CHECK(rule(CollectiveKind::reduce_scatter, 6, 4e7) == Algorithm::pairwise);
  CHECK(rule(CollectiveKind::bcast, 4, 1e6) == Algorithm::binomial);
  // A platform's per-kind choice: "mpich" in network.algorithms.
  Platform chosen = p;
  chosen.network.algorithms["allreduce"] = algorithm_from_string("mpich");
  CHECK(resolve_algorithm(make(CollectiveKind::allreduce, 8, 8e6), chosen) == Algorithm::reduce_scatter_allgather);
  // 2 · 3 · α + 2 · (7/8) · n/β = 6e-6 + 0.014 s on P = 8, n = 8e6 B
  CHECK(collective_time_s(make(CollectiveKind::allreduce, 8, 8e6), chosen) == Approx(6e-6 + 0.014).epsilon(kTol));
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

TEST_CASE("the steps of every kind and algorithm sum to its closed form, P = 1..17", "[collective]") {
  // Σ over the critical member's rounds of α + max(send, receive)/β must equal the closed
  // forms of collective_cost.hpp (each checked against a hand value above): the analytic
  // engine prices the same steps the SimGrid engine and the executors run.
  const double alpha = 2.5e-6, beta = 3e9;
  const Platform platform = network_platform(2e-6, 0.5e-6, beta);
  struct Case {
    CollectiveKind kind;
    Algorithm algorithm;
  };
  const std::vector<Case> cases = {
      {CollectiveKind::allreduce, Algorithm::ring},       {CollectiveKind::allreduce, Algorithm::recursive_doubling},
      {CollectiveKind::allgather, Algorithm::ring},       {CollectiveKind::reduce_scatter, Algorithm::ring},
      {CollectiveKind::bcast, Algorithm::binomial},       {CollectiveKind::reduce, Algorithm::binomial},
      {CollectiveKind::gather, Algorithm::binomial},      {CollectiveKind::scatter, Algorithm::binomial},
      {CollectiveKind::alltoall, Algorithm::direct},      {CollectiveKind::send, Algorithm::direct},
      {CollectiveKind::allreduce, Algorithm::reduce_scatter_allgather},
      {CollectiveKind::allgather, Algorithm::recursive_doubling},
      {CollectiveKind::reduce_scatter, Algorithm::recursive_halving},
      {CollectiveKind::reduce_scatter, Algorithm::pairwise}};
  for (const Case& k : cases)
    for (int p = 1; p <= 17; ++p)
      for (double bytes : {4.0, 1000.0, 8e6, 123456.0}) {
        if (k.kind == CollectiveKind::send && p != 2) continue;
        if (needs_power_of_two_group(k.algorithm) && !is_power_of_two(p)) continue;
        const Collective c = make(k.kind, p, bytes, k.algorithm);
        double expected = 0;
        switch (k.kind) {
          case CollectiveKind::allreduce:
            expected = k.algorithm == Algorithm::ring ? ring_allreduce_s(p, bytes, alpha, beta)
                                                      : recursive_doubling_s(p, bytes, alpha, beta);
            // Recursive halving then doubling: log2 P rounds each way, n/2 + n/4 + ... + n/P =
            // (P - 1)/P · n each way: 2 log2 P · α + 2 (P - 1)/P · n/β (the ring's bandwidth term).
            if (k.algorithm == Algorithm::reduce_scatter_allgather)
              expected = p <= 1 ? 0 : 2 * ceil_log2(p) * alpha + 2.0 * (p - 1) / p * bytes / beta;
            break;
          case CollectiveKind::allgather:
            expected = ring_gather_like_s(p, p * bytes, alpha, beta);
            // Rounds of 1, 2, 4, ... parts: log2 P · α + (P - 1) · n/β.
            if (k.algorithm == Algorithm::recursive_doubling)
              expected = p <= 1 ? 0 : ceil_log2(p) * alpha + (p - 1) * bytes / beta;
            break;
          case CollectiveKind::reduce_scatter:
            expected = ring_gather_like_s(p, bytes, alpha, beta);
            // Halving: log2 P · α + (P - 1)/P · n/β; pairwise: P - 1 rounds of n/P, the ring's cost.
            if (k.algorithm == Algorithm::recursive_halving)
              expected = p <= 1 ? 0 : ceil_log2(p) * alpha + (p - 1.0) / p * bytes / beta;
            break;
          case CollectiveKind::bcast:
          case CollectiveKind::reduce: expected = binomial_tree_s(p, bytes, alpha, beta); break;
          case CollectiveKind::gather:
          case CollectiveKind::scatter: expected = binomial_gather_s(p, p * bytes, alpha, beta); break;
          case CollectiveKind::alltoall: expected = direct_alltoall_s(p, bytes, alpha, beta); break;
          case CollectiveKind::send: expected = direct_send_s(bytes, alpha, beta); break;
        }
        CAPTURE(to_string(k.kind), to_string(k.algorithm), p, bytes);
        const CollectivePlan plan = plan_collective(c, k.algorithm, critical_member(c));
        CHECK(steps_time_s(plan, alpha, beta) == Approx(expected).epsilon(1e-12).margin(1e-18));
        CHECK(collective_time_s(c, platform) == Approx(expected).epsilon(1e-12).margin(1e-18));
        // No member takes longer than the critical one.
        for (int m = 0; m < p; ++m)
          CHECK(steps_time_s(plan_collective(c, k.algorithm, m), alpha, beta) <= steps_time_s(plan, alpha, beta) * (1 + 1e-12));
      }
}

TEST_CASE("the steps move the right data: a replay on one value per block", "[collective]") {
  // Every member starts with its own numbers; replaying all members' steps round by round
  // (sends read the state before the round) must end with the kind's result, e.g. allreduce:
  // every member holds Σ_r x_r in every block.
  for (int p = 1; p <= 9; ++p) {
    for (const auto& [kind, algorithm] :
         std::vector<std::pair<CollectiveKind, Algorithm>>{{CollectiveKind::allreduce, Algorithm::ring},
                                                           {CollectiveKind::allreduce, Algorithm::recursive_doubling},
                                                           {CollectiveKind::reduce_scatter, Algorithm::ring},
                                                           {CollectiveKind::allgather, Algorithm::ring},
                                                           {CollectiveKind::bcast, Algorithm::binomial},
                                                           {CollectiveKind::reduce, Algorithm::binomial},
                                                           {CollectiveKind::gather, Algorithm::binomial},
                                                           {CollectiveKind::scatter, Algorithm::binomial},
                                                           {CollectiveKind::alltoall, Algorithm::direct},
                                                           {CollectiveKind::allreduce, Algorithm::reduce_scatter_allgather},
                                                           {CollectiveKind::allgather, Algorithm::recursive_doubling},
                                                           {CollectiveKind::reduce_scatter, Algorithm::recursive_halving},
                                                           {CollectiveKind::reduce_scatter, Algorithm::pairwise}}) {
      if (needs_power_of_two_group(algorithm) && !is_power_of_two(p)) continue;
      Collective c = make(kind, p, 4.0 * p);
      const bool rooted = kind == CollectiveKind::bcast || kind == CollectiveKind::reduce ||
                          kind == CollectiveKind::gather || kind == CollectiveKind::scatter;
      if (rooted) c.root = p / 2;  // a root that is not member 0
      std::vector<CollectivePlan> plans;
      for (int m = 0; m < p; ++m) plans.push_back(plan_collective(c, algorithm, m));
      const int blocks = plans[0].blocks;
      // value[m][buffer][block]: buffers work, send, recv; start: member m's block b = 1000·m + b.
      std::vector<std::array<std::vector<double>, 3>> value(static_cast<std::size_t>(p));
      for (int m = 0; m < p; ++m)
        for (auto& buffer : value[std::size_t(m)]) buffer.assign(std::size_t(std::max(blocks, p)), 0.0);
      const auto rel = [&](int m) { return ((m - c.root) % p + p) % p; };
      for (int m = 0; m < p; ++m) {
        auto& v = value[std::size_t(m)];
        for (int b = 0; b < std::max(blocks, p); ++b) v[1][std::size_t(b)] = 1000.0 * m + b;
        if (kind == CollectiveKind::allgather) v[0][std::size_t(m)] = v[1][0];
        else if (kind == CollectiveKind::gather) v[0][std::size_t(rel(m))] = v[1][0];
        else if (kind == CollectiveKind::scatter) {
          if (m == c.root)
            for (int b = 0; b < p; ++b) v[0][std::size_t(rel(b))] = v[1][std::size_t(b)];
        } else if (kind == CollectiveKind::alltoall) v[2][std::size_t(m)] = v[1][std::size_t(m)];
        else v[0] = v[1];
      }
      std::vector<std::size_t> at(static_cast<std::size_t>(p), 0);
      for (int round = 0; round < 4 * p; ++round) {
        // A blocking point-to-point model: a member's next step runs when its peers' matching
        // steps are next too; apply every matched pair of this sweep.
        const auto snapshot = value;
        std::vector<int> advance(static_cast<std::size_t>(p), 0);
        for (int m = 0; m < p; ++m) {
          if (at[std::size_t(m)] >= plans[std::size_t(m)].steps.size()) continue;
          const CollectiveStep& s = plans[std::size_t(m)].steps[at[std::size_t(m)]];
          bool ready = true;
          if (s.send_to >= 0) {
            const auto& peer = plans[std::size_t(s.send_to)].steps;
            ready = ready && at[std::size_t(s.send_to)] < peer.size() && peer[at[std::size_t(s.send_to)]].receive_from == m;
          }
          if (s.receive_from >= 0) {
            const auto& peer = plans[std::size_t(s.receive_from)].steps;
            ready = ready && at[std::size_t(s.receive_from)] < peer.size() && peer[at[std::size_t(s.receive_from)]].send_to == m;
          }
          advance[std::size_t(m)] = ready;
        }
        for (int m = 0; m < p; ++m) {
          if (!advance[std::size_t(m)]) continue;
          const CollectiveStep& s = plans[std::size_t(m)].steps[at[std::size_t(m)]];
          if (s.receive_from >= 0) {
            const CollectiveStep& from = plans[std::size_t(s.receive_from)].steps[at[std::size_t(s.receive_from)]];
            REQUIRE(from.send_span.count == s.receive_span.count);
            for (int k = 0; k < s.receive_span.count; ++k) {
              const double incoming = snapshot[std::size_t(s.receive_from)][std::size_t(from.send_buffer)]
                                              [std::size_t(from.send_span.first + k)];
              double& slot = value[std::size_t(m)][std::size_t(s.receive_buffer)][std::size_t(s.receive_span.first + k)];
              slot = s.reduce ? slot + incoming : incoming;
            }
          }
        }
        for (int m = 0; m < p; ++m) at[std::size_t(m)] += std::size_t(advance[std::size_t(m)]);
      }
      for (int m = 0; m < p; ++m) REQUIRE(at[std::size_t(m)] == plans[std::size_t(m)].steps.size());
      CAPTURE(to_string(kind), to_string(algorithm), p);
      double total = 0;  // Σ_r x_r of block b is Σ_r (1000 r + b)
      for (int r = 0; r < p; ++r) total += 1000.0 * r;
      for (int m = 0; m < p; ++m) {
        const auto& v = value[std::size_t(m)];
        for (int b = 0; b < blocks; ++b) {
          const double summed = total + double(p) * b;
          switch (kind) {
            case CollectiveKind::allreduce: CHECK(v[0][std::size_t(b)] == summed); break;
            case CollectiveKind::reduce_scatter: if (b == m) CHECK(v[0][std::size_t(b)] == summed); break;
            case CollectiveKind::allgather: CHECK(v[0][std::size_t(b)] == 1000.0 * b); break;
            case CollectiveKind::bcast: CHECK(v[0][std::size_t(b)] == 1000.0 * c.root + b); break;
            case CollectiveKind::reduce: if (m == c.root) CHECK(v[0][std::size_t(b)] == summed); break;
            case CollectiveKind::gather:  // root's work in root-relative order: slot rel(r) holds r's value
              if (m == c.root) CHECK(v[0][std::size_t(rel(b))] == 1000.0 * b);
              break;
            case CollectiveKind::scatter: if (b == rel(m)) CHECK(v[0][std::size_t(b)] == 1000.0 * c.root + m); break;
            case CollectiveKind::alltoall: CHECK(v[2][std::size_t(b)] == 1000.0 * b + m); break;
            default: break;
          }
        }
      }
    }
  }
}

TEST_CASE("collective durations priced once per distinct collective equal pricing each one", "[analytic]") {
  // Schedules that repeat collectives every iteration (dp, hybrid's transitions) and that have
  // groups of two with different roots (param_server's sends): each duration is exactly
  // collective_time_s of its own collective.
  const Network network = load_network("vgg-a");
  const Platform platform = load_platform("cori-haswell");
  for (const char* strategy : {"dp", "hybrid", "param_server"}) {
    for (int ranks : {3, 8}) {
      const Schedule schedule = test::uneven_schedule(network, platform, strategy, ranks);
      const std::vector<double> durations_s = collective_durations_s(schedule, platform);
      REQUIRE(durations_s.size() == schedule.collectives.size());
      CAPTURE(strategy, ranks);
      for (std::size_t c = 0; c < schedule.collectives.size(); ++c)
        CHECK(durations_s[c] == collective_time_s(schedule.collectives[c], platform));
    }
  }
}
