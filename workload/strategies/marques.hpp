#pragma once
// Marques, Falcao & Alexandre (2018) closed forms: the workload shares of Eq. 1 and the upload
// volume of Eq. 2, in one place for the conv_split builder, its metrics and the reports.
#include <cstdint>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/platform.hpp"

namespace cnnpar {

/** Images of the timing probe's convolutions (at most the batch): the ratios of Eq. 1 do not
 *  depend on it, and a full batch of a large net would not fit (500:1500 at 1024 images needs
 *  5 GB of im2col columns). */
inline constexpr std::int64_t kProbeImages = 8;

/** Eq. 1: w_i = (max(t) / t_i) / Σ_j (max(t) / t_j) for probe times t_i (seconds, > 0).
 *  The shares sum to 1 and are inversely proportional to the times.
 *  @throws InputError(origin, "/shares/I", t_i) for an empty list or a time that is not > 0. */
std::vector<double> probe_shares(const std::vector<double>& probe_times_s, const std::string& origin = "<probe>");

/** Output maps (kernels) per rank of a layer with `kernels` maps, from `shares` (summing to 1):
 *  floor(kernels·w_i) each, the remainder one by one to the largest fractional parts (ties to
 *  the lower rank). A rank whose share is worth less than a map may get none and sit the layer
 *  out: a very slow node given a whole map would become the layer's slowest. */
std::vector<std::int64_t> apportion_kernels(std::int64_t kernels, const std::vector<double>& shares);

/** Checks explicit shares: each >= 0, at least one > 0, summing to 1 within 1e-6.
 *  @throws InputError(origin, path + "/I", value) naming the share (or the sum). */
void check_shares(const std::vector<double>& shares, const std::string& origin, const std::string& path);

/** The engines' probe: modelled seconds of `rank` for one forward pass of every conv layer at
 *  `batch` images (op_time_s), what the executor measures with real convolutions. */
double engine_probe_s(const Network& network, const Platform& platform, std::int64_t batch, int rank);

/** Eq. 2 for one conv layer: (in_h·in_w·inCh + out_h·out_w·numK)·batch + kh·kw·numK·inCh
 *  elements (the paper's squares in², out², k² generalised to rectangles). */
double upload_elements(const Layer& conv, std::int64_t batch);
/** Eq. 2 summed over every conv layer of the network (elements per iteration). */
double upload_elements(const Network& network, std::int64_t batch);

}  // namespace cnnpar
