// A bounded MPI_Finalize after the final barrier (or none where it races, on MPICH 4.0
// ch4:ucx with ranks alone on their hosts).
#include "apps/cnnpar-run/finalize.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include "base/file_descriptors.hpp"

namespace cnnpar::executor {

using namespace cnnpar::real;

namespace {

constexpr double kFinalizeBound_s = 30;  // MPI_Finalize may take this long once the run is complete
// Time for Hydra's proxy to see this rank's stdout and stderr end (it then stops reading and waits).
constexpr double kProxyStopsReading_s = 0.25;

/** Leaves with status 0 without MPI_Finalize. Hydra's proxy reports status 1 for a rank whose
 *  PMI socket closes while it still reads it, and it stops reading once the rank's stdout and
 *  stderr have ended: they end first, every copy of them (Hydra leaves two), and the PMI socket
 *  with the exit (docs/testbed.md). */
[[noreturn]] void leave_now() {
  std::fflush(nullptr);
  close_every_copy(STDOUT_FILENO);
  close_every_copy(STDERR_FILENO);
  if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) {  // later writes go nowhere, not to a reused fd
    ::dup2(null, STDOUT_FILENO);
    ::dup2(null, STDERR_FILENO);
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(kProxyStopsReading_s));
  ::_exit(0);
}

}  // namespace

void finish_after_final_barrier(std::unique_ptr<mpi::Environment> environment, int rank, double timeout_s) {
  // Only a job of several ranks skips it: one rank has no peer whose close it could wait for,
  // and Hydra's proxy reports status 1 for a rank whose PMI socket closed without finalize
  // when it sees the close before the exit (a 1-rank CI run failed so after all its output).
  if (mpi::world_size() > 1 && mpi::finalize_can_hang(mpi::library_version()) &&
      !mpi::ranks_share_hosts(MPI_COMM_WORLD, timeout_s))
    leave_now();
  std::thread([rank] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kFinalizeBound_s));
    fmt::print(stderr, "cnnpar-run: rank {}: MPI_Finalize did not return within {:.0f} s; the run is complete, leaving without it\n",
               rank, kFinalizeBound_s);
    leave_now();
  }).detach();
  environment.reset();  // MPI_Finalize
}

}  // namespace cnnpar::executor
