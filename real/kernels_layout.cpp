// Layout changes of the conv and fc tensors: im2col and col2im (the column matrices of the conv
// GEMMs) and the channel-major (C, N, H·W) <-> rows (N, C·H·W) transposes.
#include "real/kernels.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "real/kernel_loops.hpp"

namespace cnnpar::real {
namespace {

// The part of one column-matrix row (kh, kw) that reads inside the input, shared by im2col
// and col2im so both walk exactly the same window.
struct ColumnRowWindow {
  std::int64_t ow_lo = 0, ow_hi = 0;  ///< output columns [ow_lo, ow_hi) whose input column is inside [0, W)
  std::int64_t shift = 0;             ///< input column of output column x: x·stride + shift
  // "Same" convolution (stride 1, OW == W): column index y·W + x reads plane index + off.
  bool same = false;
  std::int64_t off = 0;               ///< input offset of a column index
  std::int64_t y_lo = 0, y_hi = 0;    ///< output rows whose input row is inside [0, H)
  std::int64_t begin = 0, end = 0;    ///< column indices [begin, end) of those rows
  std::int64_t copy_begin = 0, copy_end = 0;  ///< [begin, end) clipped to the input plane
};

ColumnRowWindow column_row_window(const ConvGeometry& g, std::int64_t kh, std::int64_t kw) {
  ColumnRowWindow w;
  const std::int64_t oh = g.out_h(), ow = g.out_w();
  w.ow_hi = ow;
  while (w.ow_lo < ow && w.ow_lo * g.stride - g.pad + kw < 0) ++w.ow_lo;
  while (w.ow_hi > w.ow_lo && (w.ow_hi - 1) * g.stride - g.pad + kw >= g.in_w) --w.ow_hi;
  w.shift = kw - g.pad;
  w.same = g.stride == 1 && ow == g.in_w;
  if (w.same) {
    const std::int64_t plane = g.in_h * g.in_w;
    w.off = (kh - g.pad) * g.in_w + w.shift;
    w.y_lo = std::max<std::int64_t>(0, g.pad - kh);
    w.y_hi = std::min<std::int64_t>(oh, g.in_h + g.pad - kh);
    w.begin = w.y_lo * ow;
    w.end = std::max(w.begin, w.y_hi * ow);
    w.copy_begin = std::max(w.begin, -w.off);
    w.copy_end = std::min(w.end, plane - w.off);
  }
  return w;
}

// Zeroes the entries of a "same" column-matrix row (all images, OH·OW each) whose input lies
// in the padding: the rows outside [y_lo, y_hi) and the edge columns of the others.
void zero_padding_entries(const ColumnRowWindow& w, std::int64_t oh, std::int64_t ow, std::int64_t batch, float* row) {
  const std::int64_t block = oh * ow;
  for (std::int64_t n = 0; n < batch; ++n) {
    float* dst = row + n * block;
    std::fill(dst, dst + w.begin, 0.0f);
    std::fill(dst + w.end, dst + block, 0.0f);
    for (std::int64_t y = w.y_lo; y < w.y_hi; ++y) {
      for (std::int64_t x = 0; x < w.ow_lo; ++x) dst[y * ow + x] = 0.0f;
      for (std::int64_t x = w.ow_hi; x < ow; ++x) dst[y * ow + x] = 0.0f;
    }
  }
}

// The "same" rows with OH == H (every stride-1 conv whose kernel is 2·pad + 1): row (c, kh, kw)
// over all images is the channel's images (contiguous in (C, N, H, W)) shifted by `off`, with
// the entries that read padding set to 0. A mask per (kh, kw) over a tile of whole images
// (all ones where the entry reads inside its own image, else 0) does that with a bitwise AND,
// branch-free and vectorisable, in one pass.
struct SameRowMasks {
  std::int64_t tile_images = 1;                      ///< images per mask tile (>= 256 entries)
  std::vector<std::vector<std::uint32_t>> by_kernel;  ///< [kh·KW + kw], tile_images·OH·OW entries
};

SameRowMasks same_row_masks(const ConvGeometry& g) {
  SameRowMasks m;
  const std::int64_t oh = g.out_h(), ow = g.out_w(), block = oh * ow;
  if (g.stride != 1 || ow != g.in_w || oh != g.in_h) return m;  // no row takes the masked path
  m.tile_images = std::min(g.batch, std::max<std::int64_t>(1, (256 + block - 1) / block));
  for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
    for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
      const ColumnRowWindow w = column_row_window(g, kh, kw);
      std::vector<std::uint32_t> mask(std::size_t(m.tile_images * block), 0u);
      for (std::int64_t n = 0; n < m.tile_images; ++n)
        for (std::int64_t y = w.y_lo; y < w.y_hi; ++y)
          for (std::int64_t x = w.ow_lo; x < w.ow_hi; ++x) mask[std::size_t(n * block + y * ow + x)] = ~0u;
      m.by_kernel.push_back(std::move(mask));
    }
  return m;
}

}  // namespace

void im2col(const ConvGeometry& g, const float* input, float* columns) {
  const std::int64_t oh = g.out_h(), ow = g.out_w();
  const std::int64_t plane = g.in_h * g.in_w;
  const std::int64_t cols = g.column_cols();
  const SameRowMasks masks = same_row_masks(g);
  // One column-matrix row (c, kh, kw) per task: contiguous writes, reads along input rows.
  parallel_for(g.column_rows(), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t c = r / (g.kernel_h * g.kernel_w), kh = (r / g.kernel_w) % g.kernel_h, kw = r % g.kernel_w;
      float* row = columns + r * cols;
      const ColumnRowWindow w = column_row_window(g, kh, kw);
      const std::int64_t ow_lo = w.ow_lo, ow_hi = w.ow_hi, shift = w.shift;
      if (w.same && oh == g.in_h) {
        // Column index y·W + x of image n reads input index n·H·W + y·W + x + off of the
        // channel, off = (kh - pad)·W + (kw - pad); see SameRowMasks.
        const std::int64_t total = g.batch * plane, off = w.off;
        const float* src = input + c * total;
        const std::uint32_t* mask = masks.by_kernel[std::size_t(kh * g.kernel_w + kw)].data();
        for (std::int64_t n0 = 0; n0 < g.batch; n0 += masks.tile_images) {
          const std::int64_t base = n0 * plane, len = std::min(masks.tile_images, g.batch - n0) * plane;
          float* dst = row + base;
          const float* from = src + base + off;
          if (base + off >= 0 && base + len + off <= total) {
            for (std::int64_t j = 0; j < len; ++j) dst[j] = masked(from[j], mask[j]);
          } else {  // the channel's first or last tile: the shift leaves the channel (padding)
            for (std::int64_t j = 0; j < len; ++j) {
              const std::int64_t at = base + j + off;
              dst[j] = at >= 0 && at < total ? masked(src[at], mask[j]) : 0.0f;
            }
          }
        }
        continue;
      }
      if (w.same) {  // OH != H (a kernel that is "same" only along W): one copy per image
        const std::int64_t block = oh * ow;
        for (std::int64_t n = 0; n < g.batch; ++n) {
          const float* src = input + (c * g.batch + n) * plane;
          float* dst = row + n * block;
          // Clipped to the input plane (the first/last element may fall just outside it; they
          // are edge columns and zeroed below).
          if (w.copy_end > w.copy_begin)
            std::memcpy(dst + w.copy_begin, src + w.copy_begin + w.off,
                        sizeof(float) * std::size_t(w.copy_end - w.copy_begin));
        }
        zero_padding_entries(w, oh, ow, g.batch, row);
        continue;
      }
      for (std::int64_t n = 0; n < g.batch; ++n) {
        const float* src_plane = input + (c * g.batch + n) * plane;
        for (std::int64_t y = 0; y < oh; ++y) {
          float* dst = row + (n * oh + y) * ow;
          const std::int64_t ih = y * g.stride - g.pad + kh;
          if (ih < 0 || ih >= g.in_h) {
            std::memset(dst, 0, sizeof(float) * std::size_t(ow));
            continue;
          }
          const float* src = src_plane + ih * g.in_w;  // input column of x: x·s - pad + kw
          for (std::int64_t x = 0; x < ow_lo; ++x) dst[x] = 0.0f;
          if (g.stride == 1) {
            if (ow_hi > ow_lo)
              std::memcpy(dst + ow_lo, src + ow_lo + shift, sizeof(float) * std::size_t(ow_hi - ow_lo));
          } else {
            for (std::int64_t x = ow_lo; x < ow_hi; ++x) dst[x] = src[x * g.stride + shift];
          }
          for (std::int64_t x = ow_hi; x < ow; ++x) dst[x] = 0.0f;
        }
      }
    }
  });
}

void col2im_add(const ConvGeometry& g, float* columns, float* input_grad) {
  const std::int64_t oh = g.out_h(), ow = g.out_w();
  const std::int64_t plane = g.in_h * g.in_w;
  const std::int64_t cols = g.column_cols();
  const SameRowMasks masks = same_row_masks(g);
  // Rows of one channel c add into the same input planes: split by channel, fixed order inside.
  parallel_for(g.channels, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t c = c0; c < c1; ++c)
      for (std::int64_t kh = 0; kh < g.kernel_h; ++kh)
        for (std::int64_t kw = 0; kw < g.kernel_w; ++kw) {
          float* row = columns + ((c * g.kernel_h + kh) * g.kernel_w + kw) * cols;
          const ColumnRowWindow w = column_row_window(g, kh, kw);
          const std::int64_t ow_lo = w.ow_lo, ow_hi = w.ow_hi, shift = w.shift;
          if (w.same && oh == g.in_h) {
            // The adjoint of im2col's shifted copy: add the row's masked entries (padding
            // entries add +0, which leaves every value exact) at the shifted positions.
            const std::int64_t total = g.batch * plane, off = w.off;
            float* dst = input_grad + c * total;
            const std::uint32_t* mask = masks.by_kernel[std::size_t(kh * g.kernel_w + kw)].data();
            for (std::int64_t n0 = 0; n0 < g.batch; n0 += masks.tile_images) {
              const std::int64_t base = n0 * plane, len = std::min(masks.tile_images, g.batch - n0) * plane;
              const float* src = row + base;
              float* to = dst + base + off;
              if (base + off >= 0 && base + len + off <= total) {
                for (std::int64_t j = 0; j < len; ++j) to[j] += masked(src[j], mask[j]);
              } else {
                for (std::int64_t j = 0; j < len; ++j) {
                  const std::int64_t at = base + j + off;
                  if (at >= 0 && at < total) dst[at] += masked(src[j], mask[j]);
                }
              }
            }
            continue;
          }
          if (w.same) {  // OH != H: zero this scratch row's padding entries, one add per image
            zero_padding_entries(w, oh, ow, g.batch, row);
            const std::int64_t block = oh * ow;
            for (std::int64_t n = 0; n < g.batch; ++n) {
              const float* src = row + n * block;
              float* dst = input_grad + (c * g.batch + n) * plane + w.off;
              for (std::int64_t i = w.copy_begin; i < w.copy_end; ++i) dst[i] += src[i];
            }
            continue;
          }
          for (std::int64_t n = 0; n < g.batch; ++n) {
            float* dst_plane = input_grad + (c * g.batch + n) * plane;
            for (std::int64_t y = 0; y < oh; ++y) {
              const std::int64_t ih = y * g.stride - g.pad + kh;
              if (ih < 0 || ih >= g.in_h) continue;
              const float* src = row + (n * oh + y) * ow;
              float* dst = dst_plane + ih * g.in_w;
              if (g.stride == 1) {
                for (std::int64_t x = ow_lo; x < ow_hi; ++x) dst[x + shift] += src[x];
              } else {
                for (std::int64_t x = ow_lo; x < ow_hi; ++x) dst[x * g.stride + shift] += src[x];
              }
            }
          }
        }
  });
}

void channel_major_to_rows(std::int64_t c, std::int64_t n, std::int64_t hw, const float* in, float* out) {
  parallel_for(n, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i)
      for (std::int64_t ch = 0; ch < c; ++ch)
        std::memcpy(out + (i * c + ch) * hw, in + (ch * n + i) * hw, sizeof(float) * std::size_t(hw));
  });
}

void rows_to_channel_major(std::int64_t c, std::int64_t n, std::int64_t hw, const float* in, float* out) {
  parallel_for(c, [&](std::int64_t c0, std::int64_t c1) {
    for (std::int64_t ch = c0; ch < c1; ++ch)
      for (std::int64_t i = 0; i < n; ++i)
        std::memcpy(out + (ch * n + i) * hw, in + (i * c + ch) * hw, sizeof(float) * std::size_t(hw));
  });
}

}  // namespace cnnpar::real
