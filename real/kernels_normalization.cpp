// The kernels of graph networks: batch normalisation (per rank and synchronised), and the sums
// of residual adds and of errors from several readers.
#include <algorithm>
#include <cmath>
#include <vector>

#include "real/kernel_loops.hpp"
#include "real/kernels.hpp"

namespace cnnpar::real {

void sum_forward(std::int64_t count, const std::vector<const float*>& inputs, float* out) {
  parallel_for(count, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      float s = inputs.front()[i];
      for (std::size_t j = 1; j < inputs.size(); ++j) s += inputs[j][i];
      out[i] = s;
    }
  }, kElementGrain);
}

void accumulate(std::int64_t count, const float* src, float* dst) {
  parallel_for(count, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) dst[i] += src[i];
  }, kElementGrain);
}

namespace {

// One channel: y = x·scale + shift with scale = gamma·invstd, shift = beta - gamma·mean·invstd.
void normalise_channel(std::int64_t positions, const float* x, double mean, double invstd, float gamma, float beta,
                       float* y) {
  const float scale = float(double(gamma) * invstd);
  const float shift = float(double(beta) - double(gamma) * mean * invstd);
  for (std::int64_t i = 0; i < positions; ++i) y[i] = x[i] * scale + shift;
}

// PyTorch's BatchNorm2d: r = (1 - momentum)·r + momentum·batch, the variance unbiased.
void move_running(const BatchNormRunning& running, std::int64_t c, double mean, double variance, double count) {
  if (!running.mean) return;
  const double unbiased = count > 1 ? variance * count / (count - 1.0) : variance;
  running.mean[c] = float((1.0 - running.momentum) * running.mean[c] + running.momentum * mean);
  running.variance[c] = float((1.0 - running.momentum) * running.variance[c] + running.momentum * unbiased);
}

// dx of one channel from the sums S1, S2 over `count` values:
// dx = gamma·inv·dy - gamma·inv·S1/count - xhat·gamma·inv·S2/count.
void input_errors_channel(std::int64_t positions, double count, const float* x, float mean, float inv, float gamma,
                          const float* dy, double sum_dy, double sum_dy_xhat, float* dx) {
  const float k = float(double(gamma) * inv);
  const float offset = float(double(gamma) * inv * sum_dy / count);
  const float slope = float(double(gamma) * inv * sum_dy_xhat / count);
  for (std::int64_t i = 0; i < positions; ++i) dx[i] = k * dy[i] - offset - (x[i] - mean) * inv * slope;
}

struct ErrorSums {
  double dy = 0, dy_xhat = 0;
};
ErrorSums error_sums_channel(std::int64_t positions, const float* x, float mean, float inv, const float* dy) {
  return {.dy = lane_sum(positions, [dy](std::int64_t i) { return double(dy[i]); }),
          .dy_xhat = lane_sum(positions, [=](std::int64_t i) { return double(dy[i]) * double((x[i] - mean) * inv); })};
}

}  // namespace

void batchnorm_forward(std::int64_t channels, std::int64_t positions, double epsilon, const float* x,
                       const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                       const BatchNormRunning& running) {
  const double m = double(positions);
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const float* xc = x + c * positions;
      const double mu = lane_sum(positions, [xc](std::int64_t i) { return double(xc[i]); }) / m;
      // A second pass: no cancellation when |mean| >> stddev.
      const double variance = lane_sum(positions, [xc, mu](std::int64_t i) {
                                const double d = double(xc[i]) - mu;
                                return d * d;
                              }) / m;
      const double inv = 1.0 / std::sqrt(variance + epsilon);
      mean[c] = float(mu);
      invstd[c] = float(inv);
      normalise_channel(positions, xc, mu, inv, gamma[c], beta[c], y + c * positions);
      move_running(running, c, mu, variance, m);
    }
  });
}

void batchnorm_backward(std::int64_t channels, std::int64_t positions, const float* x, const float* mean,
                        const float* invstd, const float* gamma, const float* dy, float* dx, float* dgamma,
                        float* dbeta) {
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const float* xc = x + c * positions;
      const float* dyc = dy + c * positions;
      const ErrorSums s = error_sums_channel(positions, xc, mean[c], invstd[c], dyc);
      if (dgamma) dgamma[c] = float(s.dy_xhat);
      if (dbeta) dbeta[c] = float(s.dy);
      if (dx)
        input_errors_channel(positions, double(positions), xc, mean[c], invstd[c], gamma[c], dyc, s.dy, s.dy_xhat,
                             dx + c * positions);
    }
  });
}

void batchnorm_sums(std::int64_t channels, std::int64_t positions, const float* x, const float* shift, float* sums) {
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const float* xc = x + c * positions;
      const double k = shift[c];
      sums[c] = float(lane_sum(positions, [xc, k](std::int64_t i) { return double(xc[i]) - k; }));
      sums[channels + c] = float(lane_sum(positions, [xc, k](std::int64_t i) {
        const double d = double(xc[i]) - k;
        return d * d;
      }));
    }
  });
}

void batchnorm_statistics(std::int64_t channels, double count, const float* shift, const float* sums, double epsilon,
                          float* mean, float* invstd, const BatchNormRunning& running) {
  for (std::int64_t c = 0; c < channels; ++c) {
    const double centre = double(sums[c]) / count;  // the mean minus the shift
    const double variance = std::max(0.0, double(sums[channels + c]) / count - centre * centre);
    const double mu = double(shift[c]) + centre;
    mean[c] = float(mu);
    invstd[c] = float(1.0 / std::sqrt(variance + epsilon));
    move_running(running, c, mu, variance, count);
  }
}

void batchnorm_normalise(std::int64_t channels, std::int64_t positions, const float* x, const float* mean,
                         const float* invstd, const float* gamma, const float* beta, float* y) {
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c)
      normalise_channel(positions, x + c * positions, mean[c], invstd[c], gamma[c], beta[c], y + c * positions);
  });
}

void batchnorm_error_sums(std::int64_t channels, std::int64_t positions, const float* x, const float* mean,
                          const float* invstd, const float* dy, float* sums) {
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c) {
      const ErrorSums s = error_sums_channel(positions, x + c * positions, mean[c], invstd[c], dy + c * positions);
      sums[c] = float(s.dy);
      sums[channels + c] = float(s.dy_xhat);
    }
  });
}

void batchnorm_input_errors(std::int64_t channels, std::int64_t positions, double count, const float* x,
                            const float* mean, const float* invstd, const float* gamma, const float* dy,
                            const float* sums, float* dx) {
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c)
      input_errors_channel(positions, count, x + c * positions, mean[c], invstd[c], gamma[c], dy + c * positions,
                           sums[c], sums[channels + c], dx + c * positions);
  });
}

}  // namespace cnnpar::real
