#pragma once
// In-process part of the SimGrid engine: one simulation in the current process
// (sim/simgrid/sg_trace.hpp: its Trace's skeleton and flat form).
#include <functional>

#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"
#include "sim/simgrid/simgrid_engine.hpp"

namespace cnnpar::simgrid_engine {

/** Creates a SimGrid Engine with `options`, builds or loads the platform, replays `schedule`
 *  and returns its Trace. Call at most once per process. `on_platform_ready` runs once the
 *  platform exists (the parent uses it to tell XML errors from later crashes).
 *  @throws InputError for bad platform input or a schedule that deadlocks. */
Trace simulate_here(const Schedule& schedule, const Platform& platform, const SimgridOptions& options,
                    const std::function<void()>& on_platform_ready = {});

}  // namespace cnnpar::simgrid_engine
