#pragma once
// Direct convolutions through oneDNN's convolution primitives (forward, backward data,
// backward weights): no column matrix, the library's own blocked layouts inside one call, and
// reorders from and to the executor's channel-major tensors around it. The alternative to
// im2col + GEMM (kernels.hpp) that `--conv direct` runs, and with Winograd's F(4x4, 3x3)
// transforms (fewer multiplications for 3x3 stride-1 layers) the one `--conv winograd` runs.
#include <cstdint>
#include <memory>

#include "real/kernels.hpp"

namespace cnnpar::real {

/** True when this build has oneDNN (CNNPAR_ONEDNN), so DirectConv can run. */
bool direct_convolution_available();

/** Which of oneDNN's convolution algorithms a DirectConv runs. */
enum class ConvAlgorithm { direct, winograd };

/** True when this build has oneDNN and its Winograd convolutions run `geometry` with `out_maps`
 *  maps on this CPU (oneDNN 2.x has them for 3x3 kernels, stride 1, pad <= 1, on AVX-512 only). */
bool winograd_convolution_available(const ConvGeometry& geometry, std::int64_t out_maps);

/** One conv layer's shape on one batch, its primitives made once and run many times. Every
 *  instance keeps its reordered copies in a few process-wide buffers: run one at a time (a
 *  rank runs one kernel at a time). */
class DirectConv {
 public:
  /** @throws InternalError without oneDNN (check direct_convolution_available() first), or for
   *  Winograd where winograd_convolution_available is false. */
  DirectConv(const ConvGeometry& geometry, std::int64_t out_maps, ConvAlgorithm algorithm = ConvAlgorithm::direct);
  ~DirectConv();
  DirectConv(const DirectConv&) = delete;
  DirectConv& operator=(const DirectConv&) = delete;

  /** out (O, N, OH, OW) = conv(in (C, N, H, W), W (O, C, KH, KW)) + bias (O, or null). */
  void forward(const float* in, const float* weights, const float* bias, float* out);
  /** in_grad (C, N, H, W) += the errors out_grad (O, N, OH, OW) carry back through W: a tensor
   *  read by several layers sums their errors. */
  void backward_data_add(const float* weights, const float* out_grad, float* in_grad);
  /** weight_grad (O, C, KH, KW) and bias_grad (O, or null) = the gradients summed over the
   *  batch (overwritten). */
  void backward_weights(const float* in, const float* out_grad, float* weight_grad, float* bias_grad);

  ConvAlgorithm algorithm() const { return algorithm_; }

 private:
  ConvAlgorithm algorithm_;
  struct Primitives;
  std::unique_ptr<Primitives> primitives_;
};

}  // namespace cnnpar::real
