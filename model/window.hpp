#pragma once
// How many windows a conv or pool layer slides along one axis: the one formula of the shape
// inference (model/network_shapes.cpp) and the executor's kernel geometry (real/kernels.hpp).
#include <cstdint>

namespace cnnpar {

/** floor((in + 2·pad − kernel) / stride) + 1; in ceil mode the division rounds up, less one
 *  window when the last would start in the right padding (PyTorch's and Caffe's rule). The
 *  caller has checked kernel <= in + 2·pad and stride >= 1. */
inline std::int64_t window_count(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                                 bool ceil) {
  std::int64_t out = (in + 2 * pad - kernel + (ceil ? stride - 1 : 0)) / stride + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace cnnpar
