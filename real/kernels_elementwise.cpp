// The kernels outside the GEMMs, layouts and pooling: relu, LRN across channels, dropout,
// softmax with cross-entropy, and the SGD step.
#include "real/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "real/kernel_loops.hpp"

namespace cnnpar::real {

void relu_forward(std::int64_t count, const float* in, float* out) {
  parallel_for(count, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
  }, kElementGrain);
}

void relu_backward(std::int64_t count, const float* out, const float* out_grad, float* in_grad) {
  parallel_for(count, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const float g = out_grad[i];  // unconditional load: a select, not an unpredictable branch
      in_grad[i] = out[i] > 0.0f ? g : 0.0f;
    }
  }, kElementGrain);
}

namespace {
// Channel window of LRN around c: [c - (size-1)/2, c + size/2], clipped.
inline std::int64_t lrn_lo(const LrnParams& p, std::int64_t c) { return std::max<std::int64_t>(0, c - (p.size - 1) / 2); }
inline std::int64_t lrn_hi(const LrnParams& p, std::int64_t c, std::int64_t channels) {
  return std::min<std::int64_t>(channels - 1, c + p.size / 2);
}
}  // namespace

void lrn_forward(const LrnParams& p, std::int64_t channels, std::int64_t positions,
                 std::int64_t cs, std::int64_t ps, const float* in, float* out, float* scale) {
  const float a = float(p.alpha / double(p.size)), k = float(p.k), beta = float(p.beta);
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    std::vector<float> sq(static_cast<std::size_t>(positions));
    for (std::int64_t c = c0; c < c1; ++c) {
      std::fill(sq.begin(), sq.end(), 0.0f);
      for (std::int64_t j = lrn_lo(p, c); j <= lrn_hi(p, c, channels); ++j) {
        const float* x = in + j * cs;
        for (std::int64_t q = 0; q < positions; ++q) sq[std::size_t(q)] += x[q * ps] * x[q * ps];
      }
      const float* x = in + c * cs;
      float* y = out + c * cs;
      float* s = scale + c * cs;
      for (std::int64_t q = 0; q < positions; ++q) {
        const float sc = k + a * sq[std::size_t(q)];
        s[q * ps] = sc;
        y[q * ps] = x[q * ps] * std::pow(sc, -beta);
      }
    }
  });
}

void lrn_backward(const LrnParams& p, std::int64_t channels, std::int64_t positions,
                  std::int64_t cs, std::int64_t ps, const float* in, const float* out,
                  const float* scale, const float* out_grad, float* in_grad) {
  // dx_c = dy_c·s_c^-β − (2αβ/size)·x_c·Σ_{c': c in window(c')} dy_c'·y_c'/s_c'
  const float coef = float(2.0 * p.alpha * p.beta / double(p.size)), beta = float(p.beta);
  std::vector<float> ratio(static_cast<std::size_t>(channels * positions));  // dy·y/s, (C, positions)
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c)
      for (std::int64_t q = 0; q < positions; ++q) {
        const std::int64_t o = c * cs + q * ps;
        ratio[std::size_t(c * positions + q)] = out_grad[o] * out[o] / scale[o];
      }
  });
  parallel_for(channels, [&](std::int64_t c0, std::int64_t c1) {
    std::vector<float> acc(static_cast<std::size_t>(positions));
    for (std::int64_t c = c0; c < c1; ++c) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      // c' whose window holds c: c' - (size-1)/2 <= c <= c' + size/2
      const std::int64_t lo = std::max<std::int64_t>(0, c - p.size / 2);
      const std::int64_t hi = std::min<std::int64_t>(channels - 1, c + (p.size - 1) / 2);
      for (std::int64_t j = lo; j <= hi; ++j) {
        const float* r = ratio.data() + j * positions;
        for (std::int64_t q = 0; q < positions; ++q) acc[std::size_t(q)] += r[q];
      }
      for (std::int64_t q = 0; q < positions; ++q) {
        const std::int64_t o = c * cs + q * ps;
        in_grad[o] = out_grad[o] * std::pow(scale[o], -beta) - coef * in[o] * acc[std::size_t(q)];
      }
    }
  });
}

namespace {
inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

bool dropout_keep(std::uint64_t seed, std::int64_t iteration, std::int64_t layer,
                  std::int64_t global_image, std::int64_t unit, double ratio) {
  std::uint64_t h = mix64(seed ^ 0x64726f706f7574ull);
  h = mix64(h ^ std::uint64_t(iteration));
  h = mix64(h ^ std::uint64_t(layer));
  h = mix64(h ^ std::uint64_t(global_image));
  h = mix64(h ^ std::uint64_t(unit));
  const double u = double(h >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return u >= ratio;
}

void dropout_forward(const DropoutLayout& l, std::int64_t images, std::int64_t first_image,
                     std::uint64_t seed, std::int64_t iteration, std::int64_t layer, double ratio,
                     const float* in, float* out, float* mask) {
  const float keep_scale = ratio < 1.0 ? float(1.0 / (1.0 - ratio)) : 0.0f;
  const std::int64_t units = l.channels * l.hw;
  parallel_for(images, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t c = 0; c < l.channels; ++c)
        for (std::int64_t s = 0; s < l.hw; ++s) {
          const std::int64_t unit = c * l.hw + s;
          const std::int64_t o = l.channel_major ? (c * images + i) * l.hw + s : i * units + unit;
          const std::int64_t layer_unit = (l.first_channel + c) * l.hw + s;
          const float m = dropout_keep(seed, iteration, layer, first_image + i, layer_unit, ratio) ? keep_scale : 0.0f;
          mask[o] = m;
          out[o] = in[o] * m;
        }
  });
}

void dropout_backward(std::int64_t count, const float* mask, const float* out_grad, float* in_grad) {
  parallel_for(count, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) in_grad[i] = out_grad[i] * mask[i];
  }, kElementGrain);
}

double softmax_forward(std::int64_t batch, std::int64_t classes, const float* logits,
                       const int* labels, float* probabilities, std::int64_t* correct) {
  double loss = 0;
  std::int64_t hits = 0;
  for (std::int64_t i = 0; i < batch; ++i) {
    const float* z = logits + i * classes;
    float* pr = probabilities + i * classes;
    std::int64_t best = 0;
    for (std::int64_t j = 1; j < classes; ++j)
      if (z[j] > z[best]) best = j;
    const float zmax = z[best];
    double sum = 0;
    for (std::int64_t j = 0; j < classes; ++j) sum += std::exp(double(z[j] - zmax));
    for (std::int64_t j = 0; j < classes; ++j) pr[j] = float(std::exp(double(z[j] - zmax)) / sum);
    const int y = labels[i];
    loss += -(double(z[y] - zmax) - std::log(sum));
    if (best == y) ++hits;
  }
  if (correct) *correct = hits;
  return loss;
}

void softmax_cross_entropy_backward(std::int64_t batch, std::int64_t classes,
                                    const float* probabilities, const int* labels,
                                    double normaliser, float* dlogits) {
  const float inv = float(1.0 / normaliser);
  for (std::int64_t i = 0; i < batch; ++i)
    for (std::int64_t j = 0; j < classes; ++j)
      dlogits[i * classes + j] =
          (probabilities[i * classes + j] - (j == labels[i] ? 1.0f : 0.0f)) * inv;
}

void sgd_update(std::int64_t count, float learning_rate, float momentum, float weight_decay,
                const float* grad, float* weights, float* velocity) {
  parallel_for(count, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      const float v = momentum * velocity[i] + grad[i] + weight_decay * weights[i];
      velocity[i] = v;
      weights[i] -= learning_rate * v;
    }
  }, kElementGrain);
}

}  // namespace cnnpar::real
