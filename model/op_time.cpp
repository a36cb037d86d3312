#include "model/op_time.hpp"

namespace cnnpar {

double op_time_s(const Platform& platform, const Op& op, int rank) {
  // Calibration measures the nodes' CPUs; an op on a device takes the device's roofline.
  const bool on_device = platform.runs_on_device(op.kernel, rank);
  if (!platform.measured_op_s.empty() && !on_device) {
    const auto found = platform.measured_op_s.find(op.label);
    if (found != platform.measured_op_s.end()) return found->second / platform.speed_factor(rank);
  }
  if (op.kernel == KernelClass::gemm && !platform.measured_gemm_flops.empty() && !on_device) {
    const auto found = platform.measured_gemm_flops.find(op.gemm.to_string());
    if (found != platform.measured_gemm_flops.end() && found->second > 0)
      return op.flops / (found->second * platform.speed_factor(rank));
  }
  if (!on_device) {
    double seconds = platform.kernel_time_s(op.kernel, op.flops, op.bytes, rank);
    // A loop over images keeps only min(images, cores) cores busy.
    if (platform.nodes.image_parallel_kernels && op.kernel != KernelClass::gemm && op.kernel != KernelClass::update &&
        op.batch > 0 &&
        op.batch < platform.nodes.cores)
      seconds *= double(platform.nodes.cores) / double(op.batch);
    return seconds + platform.nodes.call_overhead_s / platform.speed_factor(rank);
  }
  // A GEMM moves A (m×k), B (k×n) and C (m×n) in FP32 between host and device; any other
  // device op moves the bytes it touches.
  const GemmShape& g = op.gemm;
  const bool has_shape = op.kernel == KernelClass::gemm && g.m > 0 && g.n > 0 && g.k > 0;
  const double link_bytes =
      has_shape ? 4.0 * (double(g.m) * double(g.k) + double(g.k) * double(g.n) + double(g.m) * double(g.n)) : op.bytes;
  return platform.kernel_time_s(op.kernel, op.flops, op.bytes, rank, link_bytes);
}

}  // namespace cnnpar
