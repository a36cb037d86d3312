#pragma once
// In-process part of the SimGrid engine: one simulation in the current process, plus the
// flat form in which a forked child hands the Trace's times back to its parent.
#include <functional>
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

/** Creates a SimGrid Engine with `options`, builds or loads the platform, replays `schedule`
 *  and returns its Trace. Call at most once per process. `on_platform_ready` runs once the
 *  platform exists (the parent uses it to tell XML errors from later crashes).
 *  @throws InputError for bad platform input or a schedule that deadlocks. */
Trace simulate_here(const Schedule& schedule, const Platform& platform, const SimgridOptions& options,
                    const std::function<void()>& on_platform_ready = {});

}  // namespace cnnpar::simgrid_engine
