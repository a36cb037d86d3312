#pragma once
// The SimGrid engine's Trace outside a simulation: its skeleton (every record, times 0) and the
// flat form in which a forked child hands the times back to its parent.
#include <vector>

#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"
#include "sim/simgrid/simgrid_engine.hpp"

namespace cnnpar::simgrid_engine {

/** The Trace of `schedule` with every record in place (labels, kinds, sizes) and all times 0:
 *  compute records in program order, collective records in posting order, marks in order;
 *  metadata names the platform, as every engine's does. */
Trace trace_skeleton(const Schedule& schedule, const Platform& platform);

/** Every time of `trace` in a fixed order: per rank, compute (start, end), collectives
 *  (posted, comm_start, comm_end, wait_start, wait_end), marks. */
std::vector<double> flatten_times(const Trace& trace);
/** Inverse of flatten_times on a skeleton of the same schedule; false if the sizes differ. */
bool unflatten_times(const std::vector<double>& times, Trace& trace);

/** Records the SimGrid settings of a run in `trace.metadata` ("simgrid": {...}). */
void annotate(Trace& trace, const SimgridOptions& options);

}  // namespace cnnpar::simgrid_engine
