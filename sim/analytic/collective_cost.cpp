#include "sim/analytic/collective_cost.hpp"

#include <cmath>

#include "model/collective_algorithm.hpp"
#include "model/error.hpp"

namespace cnnpar::analytic {

bool is_power_of_two(int p) { return p > 0 && (p & (p - 1)) == 0; }

int ceil_log2(int p) {
  CNNPAR_ASSERT(p >= 1, "ceil_log2 needs p >= 1");
  int rounds = 0;
  while ((1 << rounds) < p) ++rounds;
  return rounds;
}

double ring_allreduce_s(int p, double bytes, double alpha_s, double beta_Bps) {
  if (p <= 1) return 0.0;
  return 2.0 * (p - 1) * alpha_s + 2.0 * double(p - 1) / double(p) * bytes / beta_Bps;
}

double ring_gather_like_s(int p, double total_bytes, double alpha_s, double beta_Bps) {
  if (p <= 1) return 0.0;
  return (p - 1) * alpha_s + double(p - 1) / double(p) * total_bytes / beta_Bps;
}

double recursive_doubling_s(int p, double bytes, double alpha_s, double beta_Bps) {
  if (p <= 1) return 0.0;
  CNNPAR_ASSERT(is_power_of_two(p), "recursive doubling needs a power-of-two group");
  return ceil_log2(p) * (alpha_s + bytes / beta_Bps);
}

double binomial_tree_s(int p, double bytes, double alpha_s, double beta_Bps) {
  if (p <= 1) return 0.0;
  return ceil_log2(p) * (alpha_s + bytes / beta_Bps);
}

double binomial_gather_s(int p, double total_bytes, double alpha_s, double beta_Bps) {
  if (p <= 1) return 0.0;
  return ceil_log2(p) * alpha_s + double(p - 1) / double(p) * total_bytes / beta_Bps;
}

double direct_alltoall_s(int p, double bytes, double alpha_s, double beta_Bps) {
  if (p <= 1) return 0.0;
  return (p - 1) * (alpha_s + bytes / (double(p) * beta_Bps));
}

double direct_send_s(double bytes, double alpha_s, double beta_Bps) { return alpha_s + bytes / beta_Bps; }

double collective_time_s(const Collective& collective, const Platform& platform) {
  const int p = int(collective.group.size());
  if (p <= 1) return 0.0;
  const double alpha = platform.network.alpha_s();
  const double beta = platform.network.bandwidth_Bps;
  const double n = collective.bytes;
  const Algorithm algorithm = resolve_algorithm(collective, platform);
  switch (collective.kind) {
    case CollectiveKind::allreduce:
      return algorithm == Algorithm::recursive_doubling ? recursive_doubling_s(p, n, alpha, beta)
                                                        : ring_allreduce_s(p, n, alpha, beta);
    case CollectiveKind::allgather:
      return ring_gather_like_s(p, double(p) * n, alpha, beta);
    case CollectiveKind::reduce_scatter:
      return ring_gather_like_s(p, n, alpha, beta);
    case CollectiveKind::bcast:
    case CollectiveKind::reduce:
      return binomial_tree_s(p, n, alpha, beta);
    case CollectiveKind::gather:
    case CollectiveKind::scatter:
      return binomial_gather_s(p, double(p) * n, alpha, beta);
    case CollectiveKind::alltoall:
      return direct_alltoall_s(p, n, alpha, beta);
    case CollectiveKind::send:
      return direct_send_s(n, alpha, beta);
  }
  CNNPAR_ASSERT(false, "unknown collective kind");
  return 0.0;
}

}  // namespace cnnpar::analytic
