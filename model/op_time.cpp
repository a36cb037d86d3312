#include "model/op_time.hpp"

namespace cnnpar {

double op_time_s(const Platform& platform, const Op& op, int rank) {
  if (!platform.measured_op_s.empty()) {
    const auto found = platform.measured_op_s.find(op.label);
    if (found != platform.measured_op_s.end()) return found->second / platform.speed_factor(rank);
  }
  if (op.kernel == KernelClass::gemm && !platform.measured_gemm_flops.empty()) {
    const auto found = platform.measured_gemm_flops.find(op.gemm.to_string());
    if (found != platform.measured_gemm_flops.end() && found->second > 0)
      return op.flops / (found->second * platform.speed_factor(rank));
  }
  return platform.kernel_time_s(op.kernel, op.flops, op.bytes, rank);
}

}  // namespace cnnpar
