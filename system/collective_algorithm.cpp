#include "system/collective_algorithm.hpp"

namespace cnnpar {

namespace {

bool power_of_two(std::size_t p) { return p > 0 && (p & (p - 1)) == 0; }

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
  switch (kind) {
    case CollectiveKind::allreduce:
      return algorithm == Algorithm::ring || algorithm == Algorithm::recursive_doubling;
    case CollectiveKind::allgather:
    case CollectiveKind::reduce_scatter:
      return algorithm == Algorithm::ring;
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

Algorithm resolve_algorithm(const Collective& collective, const Platform& platform) {
  Algorithm chosen = collective.algorithm;
  if (chosen == Algorithm::automatic) chosen = platform.algorithm_for(to_string(collective.kind));
  if (chosen == Algorithm::automatic || !algorithm_applies(collective.kind, chosen))
    chosen = automatic_algorithm(collective);
  if (chosen == Algorithm::recursive_doubling && !power_of_two(collective.group.size()))
    chosen = Algorithm::ring;
  return chosen;
}

}  // namespace cnnpar
