#include "real/clock_sync.hpp"

#include <algorithm>
#include <limits>

#include "base/error.hpp"
#include "real/mpi_wrap.hpp"

namespace cnnpar::real {

double estimate_offset_s(const std::vector<PingSample>& samples) {
  CNNPAR_ASSERT(!samples.empty(), "clock offset needs at least one ping-pong sample");
  const auto best = std::min_element(samples.begin(), samples.end(), [](const PingSample& a, const PingSample& b) {
    return a.round_trip_s() < b.round_trip_s();
  });
  return best->reference_s - 0.5 * (best->local_send_s + best->local_receive_s);
}

namespace {
constexpr int kTag = 7001;

void send_double(double value, int peer, MPI_Comm comm, double timeout_s) {
  mpi::Request request;
  CNNPAR_MPI(MPI_Isend(&value, 1, MPI_DOUBLE, peer, kTag, comm, request.out()));
  mpi::wait_with_timeout(request, timeout_s, "clock synchronisation (send)", std::chrono::microseconds(0));
}

double receive_double(int peer, MPI_Comm comm, double timeout_s) {
  double value = 0;
  mpi::Request request;
  CNNPAR_MPI(MPI_Irecv(&value, 1, MPI_DOUBLE, peer, kTag, comm, request.out()));
  // No sleep between polls: the sample's accuracy is bounded by how fast we see the reply.
  mpi::wait_with_timeout(request, timeout_s, "clock synchronisation (receive)", std::chrono::microseconds(0));
  return value;
}
}  // namespace

void SyncedClock::synchronise(MPI_Comm comm, int rounds, double timeout_s) {
  int rank = 0, size = 1;
  CNNPAR_MPI(MPI_Comm_rank(comm, &rank));
  CNNPAR_MPI(MPI_Comm_size(comm, &size));
  rounds = std::max(rounds, 1);
  offset_s_ = 0;
  best_round_trip_s_ = 0;
  mpi::barrier(comm, timeout_s, "clock synchronisation (barrier)");
  // Rank 0 serves each other rank in turn, so samples are not disturbed by each other.
  for (int peer = 1; peer < size; ++peer) {
    if (rank == 0) {
      for (int i = 0; i < rounds; ++i) {
        receive_double(peer, comm, timeout_s);
        send_double(MPI_Wtime(), peer, comm, timeout_s);
      }
    } else if (rank == peer) {
      std::vector<PingSample> samples;
      for (int i = 0; i < rounds; ++i) {
        PingSample sample;
        sample.local_send_s = MPI_Wtime();
        send_double(sample.local_send_s, 0, comm, timeout_s);
        sample.reference_s = receive_double(0, comm, timeout_s);
        sample.local_receive_s = MPI_Wtime();
        samples.push_back(sample);
      }
      offset_s_ = estimate_offset_s(samples);
      best_round_trip_s_ = std::numeric_limits<double>::infinity();
      for (const auto& s : samples) best_round_trip_s_ = std::min(best_round_trip_s_, s.round_trip_s());
    }
  }
  mpi::barrier(comm, timeout_s, "clock synchronisation (barrier)");
  double origin = rank == 0 ? MPI_Wtime() : 0.0;
  mpi::bcast(&origin, 1, MPI_DOUBLE, 0, comm, timeout_s, "clock synchronisation (origin)");
  origin_s_ = origin;
}

}  // namespace cnnpar::real
