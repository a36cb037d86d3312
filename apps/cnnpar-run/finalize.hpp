#pragma once
// Leaving after the final barrier without letting a stuck MPI_Finalize hang a complete run.
#include <memory>

#include "real/mpi_wrap.hpp"

namespace cnnpar::executor {

/** Every rank passed the final barrier: the run's work and its outputs are complete, so a
 *  finalize that cannot end must not turn it into a hang. On MPICH 4.0 ch4:ucx, whose
 *  MPI_Finalize races (mpi::finalize_can_hang), the ranks of a job of several ranks, each alone
 *  on its host, leave without it; elsewhere MPI_Finalize runs, bounded by kFinalizeBound_s. */
void finish_after_final_barrier(std::unique_ptr<cnnpar::real::mpi::Environment> environment, int rank,
                                double timeout_s);

}  // namespace cnnpar::executor
