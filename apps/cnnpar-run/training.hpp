#pragma once
// The training run: every rank runs its program of the same verified schedule with real kernels
// (or calibrated sleeps) and non-blocking collectives; rank 0 writes the aligned trace, weights
// and checkpoints.
#include "apps/cnnpar-run/options.hpp"

namespace cnnpar::executor {

/** Sets up (every rank agrees on a failure), runs the iterations and writes the outputs.
 *  Returns the exit status; after set-up a failure throws (local to this rank). */
int run_training(const Options& o, int rank, int size);

}  // namespace cnnpar::executor
