#pragma once
// --calibrate: measure this machine and write a platform JSON (--out) instead of training.
#include "apps/cnnpar-run/options.hpp"

namespace cnnpar::executor {

/** Checks the options (every rank agrees on a failure), calibrates, and on rank 0 writes the
 *  platform and prints the report. Returns the exit status. */
int run_calibration(const Options& o, int rank, int size, bool max_message_given);

}  // namespace cnnpar::executor
