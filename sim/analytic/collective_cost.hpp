#pragma once
// Closed-form collective times (docs/design.md "Collective costs").
//
// alpha_s = NetworkSpec::alpha_s() (latency + per-message overhead), beta_Bps = link
// bandwidth, P = group size, n = Collective::bytes under the size conventions of
// model/schedule.hpp:
//   ring allreduce            2(P-1)·α + 2·(P-1)/P · n/β
//   ring allgather            (P-1)·α + (P-1)/P · n_total/β,  n_total = P·bytes
//   ring reduce_scatter       (P-1)·α + (P-1)/P · n_total/β,  n_total = bytes
//   recursive doubling        log2 P · (α + n/β)   (allreduce only; P must be a power
//                             of two, otherwise the ring form is used)
//   binomial bcast/reduce     ⌈log2 P⌉ · (α + n/β)
//   binomial gather/scatter   ⌈log2 P⌉ · α + (P-1)/P · n_total/β,  n_total = P·bytes
//   direct alltoall           (P-1) · (α + n/(P·β))
//   direct send               α + n/β
//   reduce_scatter_allgather  2·log2 P·α + 2·(P-1)/P · n/β   (allreduce, P a power of two)
//   recursive doubling        log2 P·α + (P-1) · n/β         (allgather, P a power of two)
//   recursive halving         log2 P·α + (P-1)/P · n/β       (reduce_scatter, P a power of two)
//   pairwise                  (P-1) · (α + n/(P·β))          (reduce_scatter)
// (these four are checked against their steps in tests/sim/test_collective_cost.cpp)
// A group of one rank costs 0 s. The algorithm comes from resolve_algorithm()
// (system/collective_algorithm.hpp, rule in sim/ALGORITHM_NOTE.md).
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "system/collective.hpp"

namespace cnnpar::analytic {

bool is_power_of_two(int p);
/** ⌈log2 p⌉ for p >= 1. */
int ceil_log2(int p);

double ring_allreduce_s(int p, double bytes, double alpha_s, double beta_Bps);
/** Ring allgather / reduce-scatter moving `total_bytes` (n_total) around the ring. */
double ring_gather_like_s(int p, double total_bytes, double alpha_s, double beta_Bps);
/** Requires a power-of-two p. */
double recursive_doubling_s(int p, double bytes, double alpha_s, double beta_Bps);
double binomial_tree_s(int p, double bytes, double alpha_s, double beta_Bps);
double binomial_gather_s(int p, double total_bytes, double alpha_s, double beta_Bps);
double direct_alltoall_s(int p, double bytes, double alpha_s, double beta_Bps);
double direct_send_s(double bytes, double alpha_s, double beta_Bps);

/** Closed-form duration (seconds) of `collective` on `platform`, with its device staging
 *  (system/device_staging.hpp). */
double collective_time_s(const Collective& collective, const Platform& platform);
/** The same from the collective's critical member's plan (critical_member, resolve_algorithm),
 *  which depends on the network only through its algorithms, when the critical member's first
 *  `burst_bytes` (scaled) bytes pass as a burst from its links' token buckets
 *  (system/link_bucket.hpp, steps_time_s; 0 for none). */
double collective_time_s(const Collective& collective, const CollectivePlan& critical_plan, const NetworkSpec& network,
                         double burst_bytes);

}  // namespace cnnpar::analytic
