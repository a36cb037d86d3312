#pragma once
// The one rule that picks the algorithm a collective runs with, shared by every engine
// (sim/analytic times it in closed form, sim/simgrid runs it as point-to-point messages).
// The rule is written down in sim/ALGORITHM_NOTE.md.
#include "model/platform.hpp"
#include "model/schedule.hpp"

namespace cnnpar {

/** Allreduce size (bytes) from which `automatic` prefers the ring (64 KiB). */
inline constexpr double kRingAllreduceThresholdBytes = 64.0 * 1024.0;

// MPICH 4.0's default selection for its nonblocking collectives (maint/tuning/coll/mpir/
// generic.json, compiled in; ch4:ucx hands MPI_Iallreduce etc. to that layer). Sizes are of
// FP32 vectors, as the executor posts them.
/** MPI_Iallreduce: recursive doubling up to this many bytes (avg_msg_size<=2048). */
inline constexpr double kMpichAllreduceShortBytes = 2048;
/** MPI_Iallgather on a power-of-two group: recursive doubling below this total (P × part). */
inline constexpr double kMpichAllgatherShortTotalBytes = 524288;
/** MPI_Ireduce_scatter_block: recursive halving below this total, counted in elements
 *  (4.0's csel.c leaves the datatype size out of it): 2 MiB of floats. */
inline constexpr double kMpichReduceScatterShortElements = 524288;

/** Algorithms that an engine implements for `kind`:
 *  allreduce {ring, recursive_doubling, reduce_scatter_allgather};
 *  allgather {ring, recursive_doubling}; reduce_scatter {ring, recursive_halving, pairwise};
 *  bcast, reduce, gather, scatter {binomial}; alltoall, send {direct}; every kind {mpich}. */
bool algorithm_applies(CollectiveKind kind, Algorithm algorithm);

/** True for algorithms whose steps pair members by XOR of a power of two: they need a
 *  power-of-two group. */
bool needs_power_of_two_group(Algorithm algorithm);

/** The algorithm actually run for `collective` on `platform`: the collective's own choice,
 *  else the platform's per-kind choice, else `automatic`; a choice that does not apply to the
 *  kind counts as `automatic`. `automatic`: allreduce → ring if P is not a power of two or
 *  bytes >= 64 KiB, else recursive doubling; allgather, reduce_scatter → ring;
 *  bcast, reduce, gather, scatter → binomial; alltoall, send → direct.
 *  `mpich`: what MPICH 4.0 runs for the nonblocking call (mpich_algorithm).
 *  An algorithm that needs a power-of-two group becomes ring on any other group. */
Algorithm resolve_algorithm(const Collective& collective, const Platform& platform);

/** MPICH 4.0's default choice among the algorithms the engines implement:
 *  allreduce: bytes <= 2048 or fewer floats than the largest power of two <= P → recursive
 *  doubling, else reduce_scatter_allgather; allgather: P a power of two and P·bytes < 512 KiB →
 *  recursive doubling, else ring (MPICH: Bruck below 80 KiB on other P); reduce_scatter:
 *  fewer than 524288 floats → recursive halving, else pairwise; the rest as `automatic`
 *  (MPICH's large bcast and reduce on 8 ranks or more use scatter/gather algorithms the
 *  engines price as binomial trees). On a group that is not a power of two MPICH folds the
 *  extra ranks in first; the engines price a ring there. */
Algorithm mpich_algorithm(const Collective& collective);

}  // namespace cnnpar
