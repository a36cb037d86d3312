#include "real/reference_kernels.hpp"

#include <cmath>
#include <limits>
#include <vector>

namespace cnnpar::real::ref {

void matmul(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
            const float* b, float* c) {
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * m + i] : a[i * k + p];
        const double bv = tb ? b[j * k + p] : b[p * n + j];
        s += av * bv;
      }
      c[i * n + j] = float(s);
    }
}

namespace {
// Input value at (c, n, ih, iw) or 0 in the padding; (C, N, H, W).
inline double at(const ConvGeometry& g, const float* in, std::int64_t c, std::int64_t n,
                 std::int64_t ih, std::int64_t iw) {
  if (ih < 0 || iw < 0 || ih >= g.in_h || iw >= g.in_w) return 0.0;
  return in[((c * g.batch + n) * g.in_h + ih) * g.in_w + iw];
}
}  // namespace

void conv_forward(const ConvGeometry& g, std::int64_t O, const float* w, const float* bias,
                  const float* in, float* out) {
  const std::int64_t OH = g.out_h(), OW = g.out_w();
  for (std::int64_t o = 0; o < O; ++o)
    for (std::int64_t n = 0; n < g.batch; ++n)
      for (std::int64_t y = 0; y < OH; ++y)
        for (std::int64_t x = 0; x < OW; ++x) {
          double s = bias ? bias[o] : 0.0;
          for (std::int64_t c = 0; c < g.channels; ++c)
            for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
              for (std::int64_t kw = 0; kw < g.kernel_w; ++kw)
                s += double(w[((o * g.channels + c) * g.kernel_h + kh) * g.kernel_w + kw]) *
                     at(g, in, c, n, y * g.stride - g.pad + kh, x * g.stride - g.pad + kw);
          out[((o * g.batch + n) * OH + y) * OW + x] = float(s);
        }
}

void conv_backward_data(const ConvGeometry& g, std::int64_t O, const float* w,
                        const float* out_grad, float* in_grad) {
  const std::int64_t OH = g.out_h(), OW = g.out_w();
  // Gather form: in_grad(c,n,ih,iw) = Σ over (o, kh, kw) with ih = y·s - pad + kh, iw likewise.
  for (std::int64_t c = 0; c < g.channels; ++c)
    for (std::int64_t n = 0; n < g.batch; ++n)
      for (std::int64_t ih = 0; ih < g.in_h; ++ih)
        for (std::int64_t iw = 0; iw < g.in_w; ++iw) {
          double s = 0;
          for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
            for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
              const std::int64_t ty = ih + g.pad - kh, tx = iw + g.pad - kw;
              if (ty < 0 || tx < 0 || ty % g.stride || tx % g.stride) continue;
              const std::int64_t y = ty / g.stride, x = tx / g.stride;
              if (y >= OH || x >= OW) continue;
              for (std::int64_t o = 0; o < O; ++o)
                s += double(w[((o * g.channels + c) * g.kernel_h + kh) * g.kernel_w + kw]) *
                     out_grad[((o * g.batch + n) * OH + y) * OW + x];
            }
          in_grad[((c * g.batch + n) * g.in_h + ih) * g.in_w + iw] = float(s);
        }
}

void conv_backward_weight(const ConvGeometry& g, std::int64_t O, const float* in,
                          const float* out_grad, float* wg, float* bg) {
  const std::int64_t OH = g.out_h(), OW = g.out_w();
  for (std::int64_t o = 0; o < O; ++o) {
    for (std::int64_t c = 0; c < g.channels; ++c)
      for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
        for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
          double s = 0;
          for (std::int64_t n = 0; n < g.batch; ++n)
            for (std::int64_t y = 0; y < OH; ++y)
              for (std::int64_t x = 0; x < OW; ++x)
                s += double(out_grad[((o * g.batch + n) * OH + y) * OW + x]) *
                     at(g, in, c, n, y * g.stride - g.pad + kh, x * g.stride - g.pad + kw);
          wg[((o * g.channels + c) * g.kernel_h + kh) * g.kernel_w + kw] = float(s);
        }
    if (bg) {
      double s = 0;
      for (std::int64_t j = 0; j < g.batch * OH * OW; ++j) s += out_grad[o * g.batch * OH * OW + j];
      bg[o] = float(s);
    }
  }
}

void fc_forward(std::int64_t N, std::int64_t in, std::int64_t out, const float* x, const float* w,
                const float* bias, float* y) {
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = bias ? bias[o] : 0.0;
      for (std::int64_t k = 0; k < in; ++k) s += double(x[i * in + k]) * w[o * in + k];
      y[i * out + o] = float(s);
    }
}

void fc_backward_data(std::int64_t N, std::int64_t in, std::int64_t out, const float* dy,
                      const float* w, float* dx) {
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t k = 0; k < in; ++k) {
      double s = 0;
      for (std::int64_t o = 0; o < out; ++o) s += double(dy[i * out + o]) * w[o * in + k];
      dx[i * in + k] = float(s);
    }
}

void fc_backward_weight(std::int64_t N, std::int64_t in, std::int64_t out, const float* dy,
                        const float* x, float* wg, float* bg) {
  for (std::int64_t o = 0; o < out; ++o) {
    for (std::int64_t k = 0; k < in; ++k) {
      double s = 0;
      for (std::int64_t i = 0; i < N; ++i) s += double(dy[i * out + o]) * x[i * in + k];
      wg[o * in + k] = float(s);
    }
    if (bg) {
      double s = 0;
      for (std::int64_t i = 0; i < N; ++i) s += dy[i * out + o];
      bg[o] = float(s);
    }
  }
}

namespace {
template <class F>
void for_each_window(const ConvGeometry& g, F f) {
  const std::int64_t OH = g.out_h(), OW = g.out_w();
  for (std::int64_t c = 0; c < g.channels; ++c)
    for (std::int64_t n = 0; n < g.batch; ++n)
      for (std::int64_t y = 0; y < OH; ++y)
        for (std::int64_t x = 0; x < OW; ++x) f(c, n, y, x, ((c * g.batch + n) * OH + y) * OW + x);
}
}  // namespace

void max_pool_forward(const ConvGeometry& g, const float* in, float* out) {
  for_each_window(g, [&](std::int64_t c, std::int64_t n, std::int64_t y, std::int64_t x, std::int64_t o) {
    double best = -std::numeric_limits<double>::infinity();
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const std::int64_t ih = y * g.stride - g.pad + kh, iw = x * g.stride - g.pad + kw;
        if (ih < 0 || iw < 0 || ih >= g.in_h || iw >= g.in_w) continue;
        best = std::max(best, at(g, in, c, n, ih, iw));
      }
    out[o] = float(best);
  });
}

void max_pool_backward(const ConvGeometry& g, const float* in, const float* out_grad, float* in_grad) {
  for (std::int64_t i = 0; i < g.channels * g.batch * g.in_h * g.in_w; ++i) in_grad[i] = 0.0f;
  for_each_window(g, [&](std::int64_t c, std::int64_t n, std::int64_t y, std::int64_t x, std::int64_t o) {
    double best = -std::numeric_limits<double>::infinity();
    std::int64_t where = -1;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const std::int64_t ih = y * g.stride - g.pad + kh, iw = x * g.stride - g.pad + kw;
        if (ih < 0 || iw < 0 || ih >= g.in_h || iw >= g.in_w) continue;
        const double v = at(g, in, c, n, ih, iw);
        if (where < 0 || v > best) {
          best = v;
          where = ((c * g.batch + n) * g.in_h + ih) * g.in_w + iw;
        }
      }
    if (where >= 0) in_grad[where] += out_grad[o];
  });
}

void avg_pool_forward(const ConvGeometry& g, const float* in, float* out) {
  for_each_window(g, [&](std::int64_t c, std::int64_t n, std::int64_t y, std::int64_t x, std::int64_t o) {
    double s = 0;
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw)
        s += at(g, in, c, n, y * g.stride - g.pad + kh, x * g.stride - g.pad + kw);
    out[o] = float(s / double(g.kernel_h * g.kernel_w));
  });
}

void avg_pool_backward(const ConvGeometry& g, const float* out_grad, float* in_grad) {
  std::vector<double> acc(std::size_t(g.channels * g.batch * g.in_h * g.in_w), 0.0);
  for_each_window(g, [&](std::int64_t c, std::int64_t n, std::int64_t y, std::int64_t x, std::int64_t o) {
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
        const std::int64_t ih = y * g.stride - g.pad + kh, iw = x * g.stride - g.pad + kw;
        if (ih < 0 || iw < 0 || ih >= g.in_h || iw >= g.in_w) continue;
        acc[std::size_t(((c * g.batch + n) * g.in_h + ih) * g.in_w + iw)] +=
            double(out_grad[o]) / double(g.kernel_h * g.kernel_w);
      }
  });
  for (std::size_t i = 0; i < acc.size(); ++i) in_grad[i] = float(acc[i]);
}

namespace {
double lrn_scale(const LrnParams& p, std::int64_t C, std::int64_t P, const float* in, std::int64_t c,
                 std::int64_t q) {
  double s = 0;
  for (std::int64_t j = c - (p.size - 1) / 2; j <= c + p.size / 2; ++j)
    if (j >= 0 && j < C) s += double(in[j * P + q]) * in[j * P + q];
  return p.k + p.alpha / double(p.size) * s;
}
}  // namespace

void lrn_forward(const LrnParams& p, std::int64_t C, std::int64_t P, const float* in, float* out) {
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t q = 0; q < P; ++q)
      out[c * P + q] = float(in[c * P + q] * std::pow(lrn_scale(p, C, P, in, c, q), -p.beta));
}

void lrn_backward(const LrnParams& p, std::int64_t C, std::int64_t P, const float* in,
                  const float* out_grad, float* in_grad) {
  // Full Jacobian-vector product: dx_c = Σ_{c'} dy_{c'} · ∂y_{c'}/∂x_c.
  for (std::int64_t q = 0; q < P; ++q)
    for (std::int64_t c = 0; c < C; ++c) {
      double s = 0;
      for (std::int64_t cp = 0; cp < C; ++cp) {
        const bool in_window = c >= cp - (p.size - 1) / 2 && c <= cp + p.size / 2;
        const double sc = lrn_scale(p, C, P, in, cp, q);
        double d = cp == c ? std::pow(sc, -p.beta) : 0.0;
        if (in_window)
          d -= p.beta * std::pow(sc, -p.beta - 1) * 2.0 * p.alpha / double(p.size) * in[cp * P + q] * in[c * P + q];
        s += double(out_grad[cp * P + q]) * d;
      }
      in_grad[c * P + q] = float(s);
    }
}

double softmax_cross_entropy(std::int64_t N, std::int64_t K, const float* z, const int* labels) {
  double loss = 0;
  for (std::int64_t i = 0; i < N; ++i) {
    double m = z[i * K];
    for (std::int64_t j = 1; j < K; ++j) m = std::max(m, double(z[i * K + j]));
    double s = 0;
    for (std::int64_t j = 0; j < K; ++j) s += std::exp(double(z[i * K + j]) - m);
    loss += -(double(z[i * K + labels[i]]) - m - std::log(s));
  }
  return loss;
}

void sgd_update(std::int64_t count, float lr, float momentum, float wd, const float* grad,
                float* weights, float* velocity) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double v = double(momentum) * velocity[i] + grad[i] + double(wd) * weights[i];
    velocity[i] = float(v);
    weights[i] = float(double(weights[i]) - double(lr) * v);
  }
}

namespace {
struct ChannelMoments {
  double mean = 0, variance = 0;
};
ChannelMoments moments(const float* x, std::int64_t m) {
  ChannelMoments r;
  for (std::int64_t i = 0; i < m; ++i) r.mean += x[i];
  r.mean /= double(m);
  for (std::int64_t i = 0; i < m; ++i) r.variance += (x[i] - r.mean) * (x[i] - r.mean);
  r.variance /= double(m);
  return r;
}
}  // namespace

void batchnorm_forward(std::int64_t C, std::int64_t M, double epsilon, const float* x, const float* gamma,
                       const float* beta, float* y) {
  for (std::int64_t c = 0; c < C; ++c) {
    const ChannelMoments mo = moments(x + c * M, M);
    for (std::int64_t i = 0; i < M; ++i)
      y[c * M + i] = float(gamma[c] * (x[c * M + i] - mo.mean) / std::sqrt(mo.variance + epsilon) + beta[c]);
  }
}

void batchnorm_backward(std::int64_t C, std::int64_t M, double epsilon, const float* x, const float* gamma,
                        const float* dy, float* dx, float* dgamma, float* dbeta) {
  for (std::int64_t c = 0; c < C; ++c) {
    const float* xc = x + c * M;
    const float* dyc = dy + c * M;
    const ChannelMoments mo = moments(xc, M);
    const double sd = std::sqrt(mo.variance + epsilon);
    double dvariance = 0, dmean = 0, centred_sum = 0, g = 0, b = 0;
    for (std::int64_t i = 0; i < M; ++i) {
      const double dxhat = double(dyc[i]) * gamma[c];
      dvariance += dxhat * (xc[i] - mo.mean) * -0.5 / (sd * sd * sd);
      dmean += -dxhat / sd;
      centred_sum += -2.0 * (xc[i] - mo.mean);
      g += double(dyc[i]) * (xc[i] - mo.mean) / sd;
      b += dyc[i];
    }
    dmean += dvariance * centred_sum / double(M);
    for (std::int64_t i = 0; i < M; ++i)
      dx[c * M + i] = float(double(dyc[i]) * gamma[c] / sd + dvariance * 2.0 * (xc[i] - mo.mean) / double(M) +
                            dmean / double(M));
    dgamma[c] = float(g);
    dbeta[c] = float(b);
  }
}

}  // namespace cnnpar::real::ref
