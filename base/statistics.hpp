#pragma once
// Small statistics shared by the metrics (analysis/) and calibration (real/): one median, one
// quantile.
#include <vector>

namespace cnnpar {

/** Median of `values` (mean of the middle two for an even count); 0 for none. */
double median(std::vector<double> values);

/** The q-quantile of `values`, q in [0, 1], interpolated linearly between order statistics
 *  (Hyndman & Fan type 7, R's default): sorted x_0..x_{n-1}, h = (n − 1)·q, then
 *  x_⌊h⌋ + (h − ⌊h⌋)·(x_⌊h⌋+1 − x_⌊h⌋). quantile(v, 0.5) is the median. 0 for none. */
double quantile(std::vector<double> values, double q);

}  // namespace cnnpar
