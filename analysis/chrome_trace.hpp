#pragma once
// Export of a Trace in the Chrome trace-event format (chrome://tracing, Perfetto).
#include <nlohmann/json.hpp>

#include "model/trace.hpp"

namespace cnnpar {

/** {"traceEvents": [...]}: one process per rank; thread 0 = compute stream ("X" events per
 *  compute op), thread 1 = communication engine (comm_start..comm_end per collective),
 *  thread 2 = waits (wait_start..wait_end, only when > 0), instant events for marks.
 *  Timestamps in microseconds. */
nlohmann::json to_chrome_trace(const Trace& trace);

}  // namespace cnnpar
