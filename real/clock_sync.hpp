#pragma once
// Aligns the ranks' MPI_Wtime clocks on rank 0's: a few ping-pongs per rank, keeping the
// sample with the smallest round trip (its midpoint estimate has the smallest error bound,
// RTT/2), then a common origin broadcast by rank 0.
#include <vector>

#include <mpi.h>

namespace cnnpar::real {

/** One ping-pong seen from a non-zero rank: local send time, rank 0's reply time, local
 *  receive time (seconds, each on its own clock). */
struct PingSample {
  double local_send_s = 0;
  double reference_s = 0;
  double local_receive_s = 0;
  double round_trip_s() const { return local_receive_s - local_send_s; }
};

/** Offset (seconds) to add to the local clock to read rank 0's clock, from the sample with
 *  the smallest round trip: reference − (send + receive) / 2. Requires at least one sample. */
double estimate_offset_s(const std::vector<PingSample>& samples);

/** A clock common to all ranks: seconds since the origin fixed by synchronise(). */
class SyncedClock {
 public:
  /** Collective over `comm`: estimates this rank's offset to rank 0 with `rounds` ping-pongs
   *  per rank, then sets the origin to rank 0's clock after a barrier. Every blocking step
   *  is bounded by `timeout_s` (mpi::TimeoutError). */
  void synchronise(MPI_Comm comm, int rounds, double timeout_s);
  /** Seconds since the common origin. */
  double now_s() const { return MPI_Wtime() + offset_s_ - origin_s_; }
  double offset_s() const { return offset_s_; }
  /** Smallest round trip seen while estimating the offset (seconds; 0 on rank 0). */
  double best_round_trip_s() const { return best_round_trip_s_; }

 private:
  double offset_s_ = 0;
  double origin_s_ = 0;
  double best_round_trip_s_ = 0;
};

}  // namespace cnnpar::real
