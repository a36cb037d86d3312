#pragma once
// `--conv auto` resolved from a platform's prices, so a prediction, a sleep-compute run and a
// calibrated real run all take the same paths: each conv layer runs on the path whose ops the
// platform prices lowest (summed over the ranks and phases): im2col + GEMM (+ col2im), direct,
// or Winograd. A platform without a measured grid of a path (calibration.conv_flops,
// winograd_flops) states no rate of its own for it, so auto does not take it there; with
// neither, auto is im2col: the path every uncalibrated platform's rates describe.
#include "model/network.hpp"
#include "model/platform.hpp"
#include "workload/conv_paths.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

/** Whether `platform` measured direct or Winograd convolutions (cnnpar calibrate with --conv
 *  other than im2col), the only case in which auto can choose them without timing. */
bool prices_direct_convolutions(const Platform& platform);

/** The conv layers of `options`' schedule (options.conv is ignored) that `platform` prices
 *  faster as direct or Winograd convolutions: Mode::layers with their names, or im2col when none
 *  is or the platform has neither grid. */
ConvPaths conv_paths_priced_faster(const Network& network, const Platform& platform, const StrategyOptions& options);
/** The same, from the schedule of those options with every conv layer on im2col. */
ConvPaths conv_paths_priced_faster(const Network& network, const Platform& platform, const Schedule& as_im2col);

}  // namespace cnnpar
