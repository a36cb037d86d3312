#include "system/collective_algorithm.hpp"

namespace cnnpar {

namespace {

bool power_of_two(std::size_t p) { return p > 0 && (p & (p - 1)) == 0; }

/** The largest power of two <= p (MPICH's comm->coll.pof2). */
std::size_t largest_power_of_two_within(std::size_t p) {
  std::size_t pof2 = 1;
  while (2 * pof2 <= p) pof2 *= 2;
  return pof2;
}

Algorithm automatic_algorithm(const Collective& collective) {
  switch (collective.kind) {
    case CollectiveKind::allreduce:
      return (!power_of_two(collective.group.size()) || collective.bytes >= kRingAllreduceThresholdBytes)
                 ? Algorithm::ring
                 : Algorithm::recursive_doubling;
    case CollectiveKind::allgather:
    case CollectiveKind::reduce_scatter:
      return Algorithm::ring;
    case CollectiveKind::bcast:
    case CollectiveKind::reduce:
    case CollectiveKind::gather:
    case CollectiveKind::scatter:
      return Algorithm::binomial;
    case CollectiveKind::alltoall:
    case CollectiveKind::send:
      return Algorithm::direct;
  }
  return Algorithm::ring;
}

}  // namespace

bool algorithm_applies(CollectiveKind kind, Algorithm algorithm) {
  if (algorithm == Algorithm::mpich) return true;
  switch (kind) {
    case CollectiveKind::allreduce:
      return algorithm == Algorithm::ring || algorithm == Algorithm::recursive_doubling ||
             algorithm == Algorithm::reduce_scatter_allgather;
    case CollectiveKind::allgather:
      return algorithm == Algorithm::ring || algorithm == Algorithm::recursive_doubling;
    case CollectiveKind::reduce_scatter:
      return algorithm == Algorithm::ring || algorithm == Algorithm::recursive_halving ||
             algorithm == Algorithm::pairwise;
    case CollectiveKind::bcast:
    case CollectiveKind::reduce:
    case CollectiveKind::gather:
    case CollectiveKind::scatter:
      return algorithm == Algorithm::binomial;
    case CollectiveKind::alltoall:
    case CollectiveKind::send:
      return algorithm == Algorithm::direct;
  }
  return false;
}

bool needs_power_of_two_group(Algorithm algorithm) {
  return algorithm == Algorithm::recursive_doubling || algorithm == Algorithm::reduce_scatter_allgather ||
         algorithm == Algorithm::recursive_halving;
}

Algorithm mpich_algorithm(const Collective& collective) {
  const std::size_t p = collective.group.size();
  const double floats = collective.bytes / 4;
  switch (collective.kind) {
    case CollectiveKind::allreduce:
      if (collective.bytes <= kMpichAllreduceShortBytes || floats < double(largest_power_of_two_within(p)))
        return Algorithm::recursive_doubling;
      return Algorithm::reduce_scatter_allgather;
    case CollectiveKind::allgather:
      return power_of_two(p) && double(p) * collective.bytes < kMpichAllgatherShortTotalBytes
                 ? Algorithm::recursive_doubling
                 : Algorithm::ring;
    case CollectiveKind::reduce_scatter:
      return floats < kMpichReduceScatterShortElements ? Algorithm::recursive_halving : Algorithm::pairwise;
    default:
      return automatic_algorithm(collective);
  }
}

Algorithm resolve_algorithm(const Collective& collective, const Platform& platform) {
  Algorithm chosen = collective.algorithm;
  if (chosen == Algorithm::automatic) chosen = platform.algorithm_for(to_string(collective.kind));
  if (chosen == Algorithm::automatic || !algorithm_applies(collective.kind, chosen))
    chosen = automatic_algorithm(collective);
  if (chosen == Algorithm::mpich) chosen = mpich_algorithm(collective);
  if (needs_power_of_two_group(chosen) && !power_of_two(collective.group.size())) chosen = Algorithm::ring;
  return chosen;
}

}  // namespace cnnpar
