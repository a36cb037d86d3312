// A bounded MPI_Finalize after the final barrier (or none where it races, on MPICH 4.0
// ch4:ucx with ranks alone on their hosts).
#include "apps/cnnpar-run/finalize.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

namespace cnnpar::executor {

using namespace cnnpar::real;

namespace {

constexpr double kFinalizeBound_s = 30;  // MPI_Finalize may take this long once the run is complete

[[noreturn]] void leave_now() {
  std::fflush(nullptr);
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
