#pragma once
// Marques et al.'s timing probe (Sec. "Hybrid CPU-CPU and GPU-GPU Computing"): before
// training, every device runs convolutions of the conv layers' shapes on random values; the
// times give the workload shares of Eq. 1 (workload/strategies/marques.hpp). cnnpar-run resolves
// conv_split's `--shares probe` with it.
#include "model/network.hpp"
#include "model/platform.hpp"

namespace cnnpar::real {

/** Seconds this rank takes for one forward convolution (im2col + GEMM) of every conv layer of
 *  `network` at min(batch, kProbeImages) images: the mean of at least `repeats` timed runs and
 *  of at least half a second of them, after one warm-up. With `real_compute` false (sleep compute) the platform's modelled op times of the
 *  same ops on `rank` instead. A rank slowed by `slowdown` (> 1) waits (slowdown − 1) times the
 *  measured time after each run, exactly as SlowedBackend pads its ops. */
double conv_probe_s(const Network& network, std::int64_t batch, bool real_compute, const Platform& platform,
                    int rank, double slowdown, int repeats = 3);

}  // namespace cnnpar::real
