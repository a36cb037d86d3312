// Pooling kernels: max pooling (with its argmax) and average pooling, forward and backward, on
// channel-major (C, N, H, W) tensors.
#include "real/kernels.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/error.hpp"
#include "real/kernel_loops.hpp"

namespace cnnpar::real {

void max_pool_forward(const ConvGeometry& g, const float* in, float* out, std::int32_t* argmax) {
  const std::int64_t oh = g.out_h(), ow = g.out_w(), plane = g.in_h * g.in_w;
  CNNPAR_ASSERT(plane <= std::numeric_limits<std::int32_t>::max(), "pool plane too large");
  const bool two_by_two = g.kernel_h == 2 && g.kernel_w == 2 && g.stride == 2 && g.pad == 0 &&
                          2 * oh <= g.in_h && 2 * ow <= g.in_w;  // no window overhangs (ceil mode)
  parallel_for(g.channels * g.batch, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const float* src = in + p * plane;
      float* dst = out + p * oh * ow;
      std::int32_t* arg = argmax + p * oh * ow;
      if (two_by_two) {  // the common VGG case without bounds checks; same first-maximum rule
        // Integer masks instead of branches: random data mispredicts (measured 4-10x faster).
        const std::int32_t w = std::int32_t(g.in_w);
        for (std::int64_t y = 0; y < oh; ++y) {
          const float* r0 = src + 2 * y * g.in_w;
          const float* r1 = r0 + g.in_w;
          const std::int32_t base = std::int32_t(2 * y * g.in_w);
          for (std::int64_t x = 0; x < ow; ++x) {
            const float v0 = r0[2 * x], v1 = r0[2 * x + 1], v2 = r1[2 * x], v3 = r1[2 * x + 1];
            std::int32_t k = 0, mk;
            float m = v0;
            mk = -std::int32_t(v1 > m), k ^= (k ^ 1) & mk, m = std::max(m, v1);
            mk = -std::int32_t(v2 > m), k ^= (k ^ w) & mk, m = std::max(m, v2);
            mk = -std::int32_t(v3 > m), k ^= (k ^ (w + 1)) & mk, m = std::max(m, v3);
            dst[y * ow + x] = m;
            arg[y * ow + x] = base + std::int32_t(2 * x) + k;
          }
        }
        continue;
      }
      for (std::int64_t y = 0; y < oh; ++y) {
        const std::int64_t h0 = y * g.stride - g.pad;
        const std::int64_t hs = std::max<std::int64_t>(h0, 0), he = std::min(h0 + g.kernel_h, g.in_h);
        for (std::int64_t x = 0; x < ow; ++x) {
          const std::int64_t w0 = x * g.stride - g.pad;
          const std::int64_t ws = std::max<std::int64_t>(w0, 0), we = std::min(w0 + g.kernel_w, g.in_w);
          float best = -std::numeric_limits<float>::infinity();
          std::int32_t where = -1;
          for (std::int64_t ih = hs; ih < he; ++ih)
            for (std::int64_t iw = ws; iw < we; ++iw) {
              const float v = src[ih * g.in_w + iw];
              if (v > best || where < 0) {
                best = v;
                where = std::int32_t(ih * g.in_w + iw);
              }
            }
          dst[y * ow + x] = where < 0 ? 0.0f : best;
          arg[y * ow + x] = where;
        }
      }
    }
  });
}

void max_pool_backward(const ConvGeometry& g, const float* out_grad, const std::int32_t* argmax,
                       float* in_grad) {
  const std::int64_t outs = g.out_h() * g.out_w(), plane = g.in_h * g.in_w;
  // 2x2/2 windows that tile the plane: every input position is in exactly one window, so one
  // pass writes each (0 + its error, or 0) without zeroing the plane first.
  const bool tiles = g.kernel_h == 2 && g.kernel_w == 2 && g.stride == 2 && g.pad == 0 && g.in_h == 2 * g.out_h() &&
                     g.in_w == 2 * g.out_w();
  parallel_for(g.channels * g.batch, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      float* dst = in_grad + p * plane;
      if (tiles) {
        const float* e = out_grad + p * outs;
        const std::int32_t* arg = argmax + p * outs;
        const std::int64_t ow = g.out_w(), w = g.in_w;
        for (std::int64_t y = 0; y < g.out_h(); ++y)
          for (std::int64_t x = 0; x < ow; ++x) {
            const std::int64_t j = y * ow + x, at = 2 * y * w + 2 * x;
            const float v = 0.0f + e[j];  // the same bits as adding into a zeroed plane
            const std::int64_t a = arg[j];
            // Masks, not branches: which of the four wins is random (mispredicted branches
            // measured 4x slower).
            dst[at] = masked(v, 0u - std::uint32_t(a == at));
            dst[at + 1] = masked(v, 0u - std::uint32_t(a == at + 1));
            dst[at + w] = masked(v, 0u - std::uint32_t(a == at + w));
            dst[at + w + 1] = masked(v, 0u - std::uint32_t(a == at + w + 1));
          }
        continue;
      }
      std::memset(dst, 0, sizeof(float) * std::size_t(plane));
      const float* e = out_grad + p * outs;
      const std::int32_t* arg = argmax + p * outs;
      for (std::int64_t j = 0; j < outs; ++j)
        if (arg[j] >= 0) dst[arg[j]] += e[j];
    }
  });
}

void avg_pool_forward(const ConvGeometry& g, const float* in, float* out) {
  const std::int64_t oh = g.out_h(), ow = g.out_w(), plane = g.in_h * g.in_w;
  const float inv = 1.0f / float(g.kernel_h * g.kernel_w);
  parallel_for(g.channels * g.batch, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      const float* src = in + p * plane;
      float* dst = out + p * oh * ow;
      for (std::int64_t y = 0; y < oh; ++y) {
        const std::int64_t h0 = y * g.stride - g.pad;
        const std::int64_t hs = std::max<std::int64_t>(h0, 0), he = std::min(h0 + g.kernel_h, g.in_h);
        for (std::int64_t x = 0; x < ow; ++x) {
          const std::int64_t w0 = x * g.stride - g.pad;
          const std::int64_t ws = std::max<std::int64_t>(w0, 0), we = std::min(w0 + g.kernel_w, g.in_w);
          float sum = 0.0f;
          for (std::int64_t ih = hs; ih < he; ++ih)
            for (std::int64_t iw = ws; iw < we; ++iw) sum += src[ih * g.in_w + iw];
          dst[y * ow + x] = sum * inv;
        }
      }
    }
  });
}

void avg_pool_backward(const ConvGeometry& g, const float* out_grad, float* in_grad) {
  const std::int64_t oh = g.out_h(), ow = g.out_w(), plane = g.in_h * g.in_w;
  const float inv = 1.0f / float(g.kernel_h * g.kernel_w);
  parallel_for(g.channels * g.batch, [&](std::int64_t p0, std::int64_t p1) {
    for (std::int64_t p = p0; p < p1; ++p) {
      float* dst = in_grad + p * plane;
      std::memset(dst, 0, sizeof(float) * std::size_t(plane));
      const float* e = out_grad + p * oh * ow;
      for (std::int64_t y = 0; y < oh; ++y) {
        const std::int64_t h0 = y * g.stride - g.pad;
        const std::int64_t hs = std::max<std::int64_t>(h0, 0), he = std::min(h0 + g.kernel_h, g.in_h);
        for (std::int64_t x = 0; x < ow; ++x) {
          const std::int64_t w0 = x * g.stride - g.pad;
          const std::int64_t ws = std::max<std::int64_t>(w0, 0), we = std::min(w0 + g.kernel_w, g.in_w);
          const float v = e[y * ow + x] * inv;
          for (std::int64_t ih = hs; ih < he; ++ih)
            for (std::int64_t iw = ws; iw < we; ++iw) dst[ih * g.in_w + iw] += v;
        }
      }
    }
  });
}

}  // namespace cnnpar::real
