#pragma once
// The timing probes a strategy resolves its options from before training (RankProbe in
// workload/registry.hpp). Marques et al.'s (Sec. "Hybrid CPU-CPU and GPU-GPU Computing"): every
// device runs convolutions of the conv layers' shapes on random values; the times give the
// workload shares of Eq. 1 (conv_split's `--shares probe`). BPT-CNN's: every worker times
// training steps, and the seconds per sample are IDPA's t̄_j (param_server's `--per-sample probe`).
#include <string>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "real/kernels.hpp"
#include "workload/conv_paths.hpp"

namespace cnnpar::real {

/** Seconds this rank takes for one forward convolution (im2col + GEMM) of every conv layer of
 *  `network` at min(batch, kProbeImages) images: the mean of at least `repeats` timed runs and
 *  of at least half a second of them, after one warm-up. With `real_compute` false (sleep compute) the platform's modelled op times of the
 *  same ops on `rank` instead. A rank slowed by `slowdown` (> 1) waits (slowdown − 1) times the
 *  measured time after each run, exactly as SlowedBackend pads its ops. */
double conv_probe_s(const Network& network, std::int64_t batch, bool real_compute, const Platform& platform,
                    int rank, double slowdown, int repeats = 3);

/** Seconds per sample of one training step (forward, backward and SGD update of every layer) on
 *  this rank, at min(batch, kProbeSamples) images of synthetic data: the mean over at least
 *  `repeats` steps and half a second, after one warm-up step. With `real_compute` false the
 *  modelled time of the same step on `rank` (engine_per_sample_s). A slowed rank waits
 *  (slowdown − 1) times each measured step, as SlowedBackend pads its ops. */
double training_probe_s(const Network& network, std::int64_t batch, bool real_compute, const Platform& platform,
                        int rank, double slowdown, int repeats = 3);

/** Conv layer `layer`'s geometry over `images` images (every input map). */
ConvGeometry conv_layer_geometry(const Layer& layer, std::int64_t images);

/** The first conv layer of `network` that `paths` runs as Winograd and this CPU has no oneDNN
 *  kernel for (oneDNN 2.x: AVX-512 only), or "" when every such layer runs. */
std::string winograd_layer_without_kernel(const Network& network, const ConvPaths& paths);

/** Seconds of one conv layer's training step on this rank's shape (`geometry` over its images,
 *  `out_maps` output maps) by each path: im2col + GEMM (forward; W^T E + col2im when
 *  `backward_data`; columns again + the weight GEMM), oneDNN's direct convolutions and its
 *  Winograd ones. The median of `repeats` runs of each, alternated, after one warm-up of each. */
struct ConvPathSeconds {
  double im2col_s = 0;
  double direct_s = 0;
  double winograd_s = 0;  ///< infinity where this CPU has no Winograd kernel for the shape
};
ConvPathSeconds conv_path_seconds(const ConvGeometry& geometry, std::int64_t out_maps, bool backward_data, int repeats = 3);

}  // namespace cnnpar::real
