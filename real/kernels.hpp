#pragma once
// FP32 layer kernels over a whole sub-batch (Lee et al. Eq. 4-8). GEMMs go to the chosen
// back-end (OpenBLAS's cblas_sgemm or oneDNN's dnnl_sgemm): the same row-major sgemm, so the
// Schedule's ops (im2col + GEMM + col2im) are the same whichever runs them.
//
// Layouts: conv/pool/lrn/batchnorm tensors are channel-major across the batch, (C, N, H, W);
// fc tensors are (N, K) row-major. Every kernel is deterministic: same inputs and thread
// count give the same bits.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/window.hpp"

namespace cnnpar::real {

/** Geometry of a conv or pool layer over a batch. */
struct ConvGeometry {
  std::int64_t channels = 0;   ///< C (input maps)
  std::int64_t batch = 0;      ///< N
  std::int64_t in_h = 0, in_w = 0;
  std::int64_t kernel_h = 0, kernel_w = 0;
  std::int64_t stride = 1, pad = 0;
  bool ceil = false;           ///< max pool: output size rounded up, the last window overhangs
  std::int64_t out_h() const { return window_count(in_h, kernel_h, stride, pad, ceil); }
  std::int64_t out_w() const { return window_count(in_w, kernel_w, stride, pad, ceil); }
  std::int64_t column_rows() const { return channels * kernel_h * kernel_w; }   ///< C·KH·KW
  std::int64_t column_cols() const { return batch * out_h() * out_w(); }        ///< N·OH·OW
};

/** Calls between_tiles() between column tiles of the GEMMs (never after the last). A GEMM is
 *  split only when between_tiles is set and non-empty: tiles cost time and buy nothing when
 *  there is no collective to progress. */
struct Tiling {
  std::int64_t columns = 0;                    ///< max output columns per tile; 0 = no split
  const std::function<void()>* between_tiles = nullptr;
};

/** The library that runs gemm(). */
enum class GemmBackend { openblas, onednn };
const char* to_string(GemmBackend backend);
/** The back-ends this build has (OpenBLAS always; oneDNN when built with CNNPAR_ONEDNN). */
std::vector<GemmBackend> available_gemm_backends();
/** "openblas" | "onednn". @throws InputError(file, path, text, reason) for another name or
 *  a back-end this build lacks. */
GemmBackend parse_gemm_backend(const std::string& text, const std::string& file, const std::string& path);
/** Process-wide; default OpenBLAS. Call between kernels, not during one. */
void set_gemm_backend(GemmBackend backend);
GemmBackend gemm_backend();

/** Row-major C (m × n) = alpha·op(A)·op(B) + beta·C with op = transpose when trans_*.
 *  lda/ldb/ldc are row strides. Split into column tiles of C as `tiling` says. */
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc, const Tiling& tiling = {});

/** im2col: input (C, N, H, W) -> columns (C·KH·KW, N·OH·OW); row (c, kh, kw), column
 *  (n, oh, ow); zero where the window reaches the padding. */
void im2col(const ConvGeometry& g, const float* input, float* columns);
/** col2im: adds columns (C·KH·KW, N·OH·OW) into input-shaped `input_grad` (C, N, H, W);
 *  the caller zeroes it first. `columns` is scratch: entries that fall into the padding
 *  may be set to 0. */
void col2im_add(const ConvGeometry& g, float* columns, float* input_grad);

/** out (O, N·OH·OW) = W (O, C·KH·KW) · columns + bias (O) broadcast over columns. */
void conv_forward_gemm(const ConvGeometry& g, std::int64_t out_maps, const float* weights,
                       const float* bias, const float* columns, float* out, const Tiling& t = {});
/** dcolumns (C·KH·KW, N·OH·OW) = W^T · E (O, N·OH·OW). */
void conv_backward_data_gemm(const ConvGeometry& g, std::int64_t out_maps, const float* weights,
                             const float* out_grad, float* dcolumns, const Tiling& t = {});
/** dW (O, C·KH·KW) = E (O, N·OH·OW) · columns^T; db (O) = row sums of E. */
void conv_backward_weight_gemm(const ConvGeometry& g, std::int64_t out_maps, const float* out_grad,
                               const float* columns, float* weight_grad, float* bias_grad,
                               const Tiling& t = {});
/** Adds bias (O) to every column of out (O, cols). */
void add_row_bias(std::int64_t rows, std::int64_t cols, const float* bias, float* out);

/** y (N, K_c) = x (N, K_b) · W^T + b, W (K_c, K_b). */
void fc_forward(std::int64_t batch, std::int64_t in, std::int64_t out, const float* x,
                const float* weights, const float* bias, float* y, const Tiling& t = {});
/** dx (N, K_b) = dy (N, K_c) · W. */
void fc_backward_data(std::int64_t batch, std::int64_t in, std::int64_t out, const float* dy,
                      const float* weights, float* dx, const Tiling& t = {});
/** dW (K_c, K_b) = dy^T · x; db (K_c) = column sums of dy. */
void fc_backward_weight(std::int64_t batch, std::int64_t in, std::int64_t out, const float* dy,
                        const float* x, float* weight_grad, float* bias_grad, const Tiling& t = {});

/** (C, N, H·W) <-> (N, C·H·W). */
void channel_major_to_rows(std::int64_t c, std::int64_t n, std::int64_t hw, const float* in, float* out);
void rows_to_channel_major(std::int64_t c, std::int64_t n, std::int64_t hw, const float* in, float* out);

/** Max pooling on (C, N, H, W); argmax (same layout as out) holds the position ih·W + iw
 *  within the input (c, n) plane of each output's maximum (first maximum in window order);
 *  padding never wins. */
void max_pool_forward(const ConvGeometry& g, const float* in, float* out, std::int32_t* argmax);
/** in_grad (zeroed by the kernel) += out_grad routed through argmax. */
void max_pool_backward(const ConvGeometry& g, const float* out_grad, const std::int32_t* argmax,
                       float* in_grad);
/** Average pooling; the divisor is the full window KH·KW (padding counts as zeros). */
void avg_pool_forward(const ConvGeometry& g, const float* in, float* out);
void avg_pool_backward(const ConvGeometry& g, const float* out_grad, float* in_grad);

void relu_forward(std::int64_t count, const float* in, float* out);
/** in_grad = out_grad where out > 0, else 0. */
void relu_backward(std::int64_t count, const float* out, const float* out_grad, float* in_grad);

/** Local response normalisation across channels (Krizhevsky et al.):
 *  scale = k + alpha/size · Σ_{c' in window} x(c')², y = x · scale^-beta, window of `size`
 *  channels centred on c. Tensor addressed as x[c·channel_stride + p·position_stride] for
 *  c < channels, p < positions ((C, N·H·W) channel-major: strides N·H·W and 1).
 *  `scale` keeps the scales for backward. */
struct LrnParams {
  std::int64_t size = 5;
  double alpha = 1e-4, beta = 0.75, k = 1.0;
};
void lrn_forward(const LrnParams& p, std::int64_t channels, std::int64_t positions,
                 std::int64_t channel_stride, std::int64_t position_stride, const float* in,
                 float* out, float* scale);
void lrn_backward(const LrnParams& p, std::int64_t channels, std::int64_t positions,
                  std::int64_t channel_stride, std::int64_t position_stride, const float* in,
                  const float* out, const float* scale, const float* out_grad, float* in_grad);

/** Keep decision of one dropout unit: a hash of (seed, iteration, layer, image, unit) against
 *  the drop ratio; independent of how the batch is split. */
bool dropout_keep(std::uint64_t seed, std::int64_t iteration, std::int64_t layer,
                  std::int64_t global_image, std::int64_t unit, double ratio);
/** Inverted dropout on a tensor of `images` images with `units` units each, addressed as
 *  x[image·image_stride + unit_index(unit)], where for channel-major (C, N, H·W) tensors
 *  unit = c·HW + s lives at c·(N·HW) + image·HW + s. `mask` (same layout as x) receives
 *  the scale (0 or 1/(1-ratio)). */
struct DropoutLayout {
  bool channel_major = false;   ///< (C, N, HW) if true, else (N, C·HW)
  std::int64_t channels = 0, hw = 1;
  /** Channel (or fc neuron) of the layer that local channel 0 is, for a model-parallel slice:
   *  the keep decision uses the layer's unit (first_channel + c)·HW + s. */
  std::int64_t first_channel = 0;
};
void dropout_forward(const DropoutLayout& layout, std::int64_t images, std::int64_t first_image,
                     std::uint64_t seed, std::int64_t iteration, std::int64_t layer, double ratio,
                     const float* in, float* out, float* mask);
void dropout_backward(std::int64_t count, const float* mask, const float* out_grad, float* in_grad);

/** Softmax over rows of logits (N, classes) -> probabilities; returns Σ -log p[label]
 *  (double) and counts arg-max hits in *correct. */
double softmax_forward(std::int64_t batch, std::int64_t classes, const float* logits,
                       const int* labels, float* probabilities, std::int64_t* correct);
/** dlogits = (p - onehot(label)) / normaliser (the GLOBAL batch N). */
void softmax_cross_entropy_backward(std::int64_t batch, std::int64_t classes,
                                    const float* probabilities, const int* labels,
                                    double normaliser, float* dlogits);

/** out = inputs[0] + inputs[1] + ..., element by element, added in that order (a residual
 *  add of equally shaped tensors, any layout). */
void sum_forward(std::int64_t count, const std::vector<const float*>& inputs, float* out);
/** dst += src (errors of a tensor read by several layers). */
void accumulate(std::int64_t count, const float* src, float* dst);

/** Batch normalisation in training mode (Ioffe & Szegedy 2015, Algorithm 1) over a
 *  channel-major tensor (C, N·H·W): channel c's `positions` = N·H·W values are contiguous at
 *  x + c·positions. Per channel the batch mean and biased variance (in double, two passes),
 *  invstd = 1/sqrt(var + epsilon), y = gamma·(x - mean)·invstd + beta. Writes mean and invstd
 *  (C) for backward and, when running_mean is not null, moves the running statistics towards
 *  the batch's as PyTorch's BatchNorm2d does: r = (1 - momentum)·r + momentum·batch, with the
 *  unbiased variance var·M/(M - 1) (M = positions) in running_var. */
struct BatchNormRunning {
  double momentum = 0.1;
  float* mean = nullptr;      ///< (C)
  float* variance = nullptr;  ///< (C)
};
void batchnorm_forward(std::int64_t channels, std::int64_t positions, double epsilon, const float* x,
                       const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                       const BatchNormRunning& running = {});
/** Backward of batchnorm_forward from its input x, mean and invstd and the output errors dy:
 *  with xhat = (x - mean)·invstd and per channel S1 = Σ dy, S2 = Σ dy·xhat (double),
 *  dgamma = S2 and dbeta = S1 (when not null), and
 *  dx = gamma·invstd·(dy - S1/M - xhat·S2/M) (when not null). */
void batchnorm_backward(std::int64_t channels, std::int64_t positions, const float* x, const float* mean,
                        const float* invstd, const float* gamma, const float* dy, float* dx, float* dgamma,
                        float* dbeta);

// Synchronised batch normalisation (the statistics of several ranks' images): each rank's
// sums, added up by an allreduce, then the statistics and the input errors from the totals.
/** sums (2·C) = per channel Σ (x - shift) then Σ (x - shift)² over the `positions` values
 *  (double, stored as FP32); a shift near the mean (the running mean, the same on every rank)
 *  keeps the squares from cancelling. */
void batchnorm_sums(std::int64_t channels, std::int64_t positions, const float* x, const float* shift, float* sums);
/** mean and invstd (C) from summed batchnorm_sums over `count` values (every rank's N·H·W):
 *  mean = shift + S/count, var = Q/count - (S/count)²; the running statistics as in
 *  batchnorm_forward. `shift` may be running.mean: each channel reads it before moving it. */
void batchnorm_statistics(std::int64_t channels, double count, const float* shift, const float* sums, double epsilon,
                          float* mean, float* invstd, const BatchNormRunning& running = {});
/** y = gamma·(x - mean)·invstd + beta, per channel. */
void batchnorm_normalise(std::int64_t channels, std::int64_t positions, const float* x, const float* mean,
                         const float* invstd, const float* gamma, const float* beta, float* y);
/** sums (2·C) = per channel S1 = Σ dy then S2 = Σ dy·xhat (double, stored as FP32). */
void batchnorm_error_sums(std::int64_t channels, std::int64_t positions, const float* x, const float* mean,
                          const float* invstd, const float* dy, float* sums);
/** dx = gamma·invstd·(dy - S1/count - xhat·S2/count) with S1, S2 summed over every rank's
 *  `count` values. */
void batchnorm_input_errors(std::int64_t channels, std::int64_t positions, double count, const float* x,
                            const float* mean, const float* invstd, const float* gamma, const float* dy,
                            const float* sums, float* dx);

/** SGD with momentum: v = momentum·v + g + weight_decay·w; w -= lr·v. */
void sgd_update(std::int64_t count, float learning_rate, float momentum, float weight_decay,
                const float* grad, float* weights, float* velocity);

/** Sets the threads of the GEMM back-ends (OpenBLAS's and oneDNN's OpenMP pool) and of the
 *  project's own loops (im2col, col2im, pooling, relu, lrn, dropout, SGD), which run as
 *  oneTBB parallel_for in an arena of `threads`: every output element is computed by one
 *  thread in a fixed order, so those loops give identical bits for any thread count (the
 *  GEMMs are reproducible for a fixed count and back-end). Process-wide; the kernels must be
 *  called from one thread at a time. Until it is called, the back-ends use their own
 *  defaults (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS or all cores) and the own loops run on
 *  the calling thread. */
void set_compute_threads(int threads);
/** Same, with a different thread count for the own loops than for the GEMMs. */
void set_compute_threads(int blas_threads, int loop_threads);
int compute_threads();  ///< threads of the own loops

/** For its lifetime GEMMs run on the thread that calls them, with no helper threads, so that
 *  several threads may run GEMMs at once (the inner DAG's tasks, inner_dag_run.cpp).
 *  OpenBLAS's count is process-wide and is restored at the end. oneDNN's (OpenMP's) count
 *  belongs to each thread: a thread calls serial_gemm_on_this_thread() before its GEMMs, and
 *  the creating thread's count is restored at the end. */
class SerialGemmScope {
 public:
  SerialGemmScope();
  ~SerialGemmScope();
  SerialGemmScope(const SerialGemmScope&) = delete;
  SerialGemmScope& operator=(const SerialGemmScope&) = delete;

 private:
  int openblas_threads_ = 1, openmp_threads_ = 1;
};
void serial_gemm_on_this_thread();

}  // namespace cnnpar::real
