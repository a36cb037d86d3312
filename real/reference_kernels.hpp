#pragma once
// Plain-loop reference kernels beside the fast ones in kernels.hpp (same layouts), used by
// the tests. Sums are accumulated in double; nothing here calls BLAS.
#include <cstdint>

#include "real/kernels.hpp"

namespace cnnpar::real::ref {

/** Row-major C (m × n) = op(A) · op(B), naive triple loop. */
void matmul(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
            const float* a, const float* b, float* c);

/** Direct convolution: in (C, N, H, W), W (O, C, KH, KW), bias (O) -> out (O, N, OH, OW). */
void conv_forward(const ConvGeometry& g, std::int64_t out_maps, const float* weights,
                  const float* bias, const float* in, float* out);
/** Errors to the input: in_grad (C, N, H, W) from out_grad (O, N, OH, OW). */
void conv_backward_data(const ConvGeometry& g, std::int64_t out_maps, const float* weights,
                        const float* out_grad, float* in_grad);
/** Weight (O, C, KH, KW) and bias (O) gradients summed over the batch. */
void conv_backward_weight(const ConvGeometry& g, std::int64_t out_maps, const float* in,
                          const float* out_grad, float* weight_grad, float* bias_grad);

/** fc with x (N, K_b), W (K_c, K_b), y (N, K_c). */
void fc_forward(std::int64_t batch, std::int64_t in, std::int64_t out, const float* x,
                const float* weights, const float* bias, float* y);
void fc_backward_data(std::int64_t batch, std::int64_t in, std::int64_t out, const float* dy,
                      const float* weights, float* dx);
void fc_backward_weight(std::int64_t batch, std::int64_t in, std::int64_t out, const float* dy,
                        const float* x, float* weight_grad, float* bias_grad);

/** Pooling straight from the definition (max: first maximum of the window). */
void max_pool_forward(const ConvGeometry& g, const float* in, float* out);
void max_pool_backward(const ConvGeometry& g, const float* in, const float* out_grad, float* in_grad);
void avg_pool_forward(const ConvGeometry& g, const float* in, float* out);
void avg_pool_backward(const ConvGeometry& g, const float* out_grad, float* in_grad);

/** LRN on a (C, P) channel-major tensor, per position, in double. */
void lrn_forward(const LrnParams& p, std::int64_t channels, std::int64_t positions, const float* in,
                 float* out);
void lrn_backward(const LrnParams& p, std::int64_t channels, std::int64_t positions,
                  const float* in, const float* out_grad, float* in_grad);

/** Mean-free form: returns Σ -log softmax(z)[label] in double. */
double softmax_cross_entropy(std::int64_t batch, std::int64_t classes, const float* logits,
                             const int* labels);

/** Batch normalisation in training mode on (C, M) channel-major data, in double: forward
 *  with the batch mean and biased variance; backward by Ioffe & Szegedy's chain rule through
 *  the variance and the mean (their Sec. 3), not the folded form of the fast kernel. */
void batchnorm_forward(std::int64_t channels, std::int64_t positions, double epsilon, const float* x,
                       const float* gamma, const float* beta, float* y);
void batchnorm_backward(std::int64_t channels, std::int64_t positions, double epsilon, const float* x,
                        const float* gamma, const float* dy, float* dx, float* dgamma, float* dbeta);

/** One SGD-with-momentum step, element by element in double. */
void sgd_update(std::int64_t count, float learning_rate, float momentum, float weight_decay,
                const float* grad, float* weights, float* velocity);

}  // namespace cnnpar::real::ref
