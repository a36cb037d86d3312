#pragma once
// Small statistics shared by the metrics (analysis/) and calibration (real/): one median.
#include <vector>

namespace cnnpar {

/** Median of `values` (mean of the middle two for an even count); 0 for none. */
double median(std::vector<double> values);

}  // namespace cnnpar
