#pragma once
// The one rule that picks the algorithm a collective runs with, shared by every engine
// (sim/analytic times it in closed form, sim/simgrid runs it as point-to-point messages).
// The rule is written down in sim/ALGORITHM_NOTE.md.
#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

/** Allreduce size (bytes) from which `automatic` prefers the ring (64 KiB). */
inline constexpr double kRingAllreduceThresholdBytes = 64.0 * 1024.0;

/** Algorithms that an engine implements for `kind`:
 *  allreduce {ring, recursive_doubling}; allgather, reduce_scatter {ring};
 *  bcast, reduce, gather, scatter {binomial}; alltoall, send {direct}. */
bool algorithm_applies(CollectiveKind kind, Algorithm algorithm);

/** The algorithm actually run for `collective` on `platform`: the collective's own choice,
 *  else the platform's per-kind choice, else `automatic`; a choice that does not apply to the
 *  kind counts as `automatic`. `automatic`: allreduce → ring if P is not a power of two or
 *  bytes >= 64 KiB, else recursive doubling; allgather, reduce_scatter → ring;
 *  bcast, reduce, gather, scatter → binomial; alltoall, send → direct.
 *  Recursive doubling on a group whose size is not a power of two becomes ring. */
Algorithm resolve_algorithm(const Collective& collective, const Platform& platform);

}  // namespace cnnpar
