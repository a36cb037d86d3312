#pragma once
// A parameter server's serve op run for real (model/schedule.hpp Serve): pushes received from
// any worker in the order they arrive (MPI_Irecv(MPI_ANY_SOURCE)), merged on the back-end as they
// come (arrival order: Eq. 10 with Eq. 9's gamma or a fixed one) or all at once (together: Eq. 7),
// and replies sent with the new global weights. The loop makes its own MPI calls on the calling
// thread in both progress modes: a server does nothing else meanwhile, so its communication
// engine stays idle.
#include <cstddef>

#include "model/schedule.hpp"
#include "model/trace.hpp"
#include "real/clock_sync.hpp"
#include "real/interpreter.hpp"
#include "system/serve_ledger.hpp"

namespace cnnpar::real {

struct ServeContext {
  const Schedule& schedule;
  int rank;
  ComputeBackend& backend;
  const Communicators& comms;
  const SyncedClock& clock;
  const InterpreterOptions& options;
  ServeLedger& ledger;  ///< one for the whole program: versions carry over between serve ops
};

/** Runs serve op `op_index` (Schedule::serves[serve]) to its last reply; appends the merges'
 *  compute records, the pushes' and replies' collective records (in posting order: a push when it
 *  arrived) and the MergeRecords to `trace`.
 *  @throws StallError when nothing arrives or completes for options.timeout_s. */
void run_serve(const ServeContext& context, int serve, std::size_t op_index, RankTrace& trace);

}  // namespace cnnpar::real
