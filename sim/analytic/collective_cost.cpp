#include "sim/analytic/collective_cost.hpp"

#include <cmath>

#include "base/error.hpp"
#include "system/collective_algorithm.hpp"
#include "system/device_staging.hpp"

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
  if (collective.group.size() <= 1) return 0.0;
  const CollectivePlan plan =
      plan_collective(collective, resolve_algorithm(collective, platform), critical_member(collective));
  return collective_time_s(collective, plan, platform.network, 0.0) + staging_times(collective, platform).total_s();
}

double collective_time_s(const Collective& collective, const CollectivePlan& critical_plan, const NetworkSpec& network,
                         double burst_bytes) {
  if (collective.group.size() <= 1) return 0.0;
  // The steps of the one collective layer (system/collective.hpp), priced round by round; the
  // closed forms above are what this sums to (tests/sim/test_collective_cost.cpp).
  return steps_time_s(critical_plan, network, step_pricing(collective, network), burst_bytes);
}

}  // namespace cnnpar::analytic
