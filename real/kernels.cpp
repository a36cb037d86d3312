#include "real/kernels.hpp"

#include <cblas.h>
#ifdef CNNPAR_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
// The OpenMP API function (libgomp, linked by real/CMakeLists.txt); omp.h would need -fopenmp
// with some compilers.
extern "C" void omp_set_num_threads(int threads);
#endif
#include <tbb/blocked_range.h>
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "base/error.hpp"
#include "workload/run_spec.hpp"

namespace cnnpar::real {
namespace {

int as_blas_int(std::int64_t v, const char* what) {
  CNNPAR_ASSERT(v >= 0 && v <= std::numeric_limits<int>::max(),
                std::string("GEMM dimension out of the 32-bit BLAS range: ") + what);
  return int(v);
}

GemmBackend g_backend = GemmBackend::openblas;

void sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
           const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
           std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS leaves C scaled by beta; make that explicit
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
#ifdef CNNPAR_HAVE_ONEDNN
  if (g_backend == GemmBackend::onednn) {
    // dnnl_sgemm is row-major with the same argument order as cblas (dnnl.h).
    const dnnl_status_t status = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    CNNPAR_ASSERT(status == dnnl_success, "dnnl_sgemm failed with status " + std::to_string(int(status)));
    return;
  }
#endif
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              as_blas_int(m, "m"), as_blas_int(n, "n"), as_blas_int(k, "k"), alpha, a,
              as_blas_int(lda, "lda"), b, as_blas_int(ldb, "ldb"), beta, c, as_blas_int(ldc, "ldc"));
}

int g_threads = 1;
// The own loops' workers: an arena of g_threads (the calling thread joins it), so the loops
// never take more cores than the GEMMs were given.
std::unique_ptr<tbb::task_arena> g_arena;
// oneTBB caps its workers at the cores by default; --threads above that is the user's choice.
std::unique_ptr<tbb::global_control> g_parallelism;

// f(begin, end) over [0, count), split into about compute_threads() contiguous chunks. Every
// element is written by one chunk and computed the same way in any chunk, so the result does
// not depend on the split. Small loops (below 2·grain elements) stay on the calling thread.
template <class F>
void parallel_for(std::int64_t count, F&& f, std::int64_t grain = 1) {
  const int t = g_threads;
  if (t <= 1 || !g_arena || count < 2 * grain || count < 2) {
    if (count > 0) f(std::int64_t(0), count);
    return;
  }
  g_arena->execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count, std::max<std::int64_t>(grain, 1)),
                      [&](const tbb::blocked_range<std::int64_t>& r) { f(r.begin(), r.end()); },
                      tbb::static_partitioner());
  });
}

}  // namespace

const char* to_string(GemmBackend backend) { return backend == GemmBackend::onednn ? "onednn" : "openblas"; }

std::vector<GemmBackend> available_gemm_backends() {
#ifdef CNNPAR_HAVE_ONEDNN
  return {GemmBackend::openblas, GemmBackend::onednn};
#else
  return {GemmBackend::openblas};
#endif
}

GemmBackend parse_gemm_backend(const std::string& text, const std::string& file, const std::string& path) {
  check_gemm_backend_name(text, file, path);
  for (GemmBackend b : available_gemm_backends())
    if (text == to_string(b)) return b;
  throw InputError(file, path, text, "this build has no oneDNN (configure with -DCNNPAR_ONEDNN=ON; libdnnl-dev)");
}

void set_gemm_backend(GemmBackend backend) {
  const auto have = available_gemm_backends();
  CNNPAR_ASSERT(std::find(have.begin(), have.end(), backend) != have.end(),
                std::string("GEMM back-end not in this build: ") + to_string(backend));
  g_backend = backend;
}

GemmBackend gemm_backend() { return g_backend; }

void set_compute_threads(int blas_threads, int loop_threads) {
  CNNPAR_ASSERT(blas_threads >= 1 && loop_threads >= 1, "thread counts must be positive");
  openblas_set_num_threads(blas_threads);
#ifdef CNNPAR_HAVE_ONEDNN
  omp_set_num_threads(blas_threads);  // dnnl_sgemm's threads (Debian builds oneDNN on OpenMP)
#endif
  if (loop_threads != g_threads || (loop_threads > 1 && !g_arena)) {
    g_arena.reset();
    g_parallelism.reset();
    if (loop_threads > 1) {
      g_parallelism = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                            std::size_t(loop_threads));
      g_arena = std::make_unique<tbb::task_arena>(loop_threads);
    }
  }
  g_threads = loop_threads;
}

void set_compute_threads(int threads) { set_compute_threads(threads, threads); }

int compute_threads() { return g_threads; }

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc, const Tiling& tiling) {
  const bool progress = tiling.between_tiles && *tiling.between_tiles;
  const std::int64_t tile = progress && tiling.columns > 0 ? tiling.columns : n;
  for (std::int64_t j0 = 0; j0 < n; j0 += tile) {
    if (j0 > 0) (*tiling.between_tiles)();
    const std::int64_t w = std::min(tile, n - j0);
    // Column tile j0..j0+w of C uses columns j0.. of op(B): B (k × n) -> b + j0; B^T stored (n × k) -> rows.
    const float* bt = trans_b ? b + j0 * ldb : b + j0;
    sgemm(trans_a, trans_b, m, w, k, alpha, a, lda, bt, ldb, beta, c + j0, ldc);
  }
}

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

inline float masked(float v, std::uint32_t mask) {
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) & mask);  // exact: v or +0
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

void add_row_bias(std::int64_t rows, std::int64_t cols, const float* bias, float* out) {
  parallel_for(rows, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      float* o = out + r * cols;
      const float b = bias[r];
      for (std::int64_t j = 0; j < cols; ++j) o[j] += b;
    }
  });
}

void conv_forward_gemm(const ConvGeometry& g, std::int64_t out_maps, const float* weights,
                       const float* bias, const float* columns, float* out, const Tiling& t) {
  const std::int64_t k = g.column_rows(), n = g.column_cols();
  gemm(false, false, out_maps, n, k, 1.0f, weights, k, columns, n, 0.0f, out, n, t);
  if (bias) add_row_bias(out_maps, n, bias, out);
}

void conv_backward_data_gemm(const ConvGeometry& g, std::int64_t out_maps, const float* weights,
                             const float* out_grad, float* dcolumns, const Tiling& t) {
  const std::int64_t k = g.column_rows(), n = g.column_cols();
  gemm(true, false, k, n, out_maps, 1.0f, weights, k, out_grad, n, 0.0f, dcolumns, n, t);
}

void conv_backward_weight_gemm(const ConvGeometry& g, std::int64_t out_maps, const float* out_grad,
                               const float* columns, float* weight_grad, float* bias_grad,
                               const Tiling& t) {
  const std::int64_t k = g.column_rows(), n = g.column_cols();
  gemm(false, true, out_maps, k, n, 1.0f, out_grad, n, columns, n, 0.0f, weight_grad, k, t);
  if (bias_grad) {
    parallel_for(out_maps, [&](std::int64_t o0, std::int64_t o1) {
      for (std::int64_t o = o0; o < o1; ++o) {
        const float* e = out_grad + o * n;
        double s = 0;
        for (std::int64_t j = 0; j < n; ++j) s += e[j];
        bias_grad[o] = float(s);
      }
    });
  }
}

void fc_forward(std::int64_t batch, std::int64_t in, std::int64_t out, const float* x,
                const float* weights, const float* bias, float* y, const Tiling& t) {
  gemm(false, true, batch, out, in, 1.0f, x, in, weights, in, 0.0f, y, out, t);
  if (bias)
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t o = 0; o < out; ++o) y[i * out + o] += bias[o];
}

void fc_backward_data(std::int64_t batch, std::int64_t in, std::int64_t out, const float* dy,
                      const float* weights, float* dx, const Tiling& t) {
  gemm(false, false, batch, in, out, 1.0f, dy, out, weights, in, 0.0f, dx, in, t);
}

void fc_backward_weight(std::int64_t batch, std::int64_t in, std::int64_t out, const float* dy,
                        const float* x, float* weight_grad, float* bias_grad, const Tiling& t) {
  gemm(true, false, out, in, batch, 1.0f, dy, out, x, in, 0.0f, weight_grad, in, t);
  if (bias_grad) {
    std::vector<double> s(std::size_t(out), 0.0);
    for (std::int64_t i = 0; i < batch; ++i)
      for (std::int64_t o = 0; o < out; ++o) s[std::size_t(o)] += dy[i * out + o];
    for (std::int64_t o = 0; o < out; ++o) bias_grad[o] = float(s[std::size_t(o)]);
  }
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

void max_pool_forward(const ConvGeometry& g, const float* in, float* out, std::int32_t* argmax) {
  const std::int64_t oh = g.out_h(), ow = g.out_w(), plane = g.in_h * g.in_w;
  CNNPAR_ASSERT(plane <= std::numeric_limits<std::int32_t>::max(), "pool plane too large");
  const bool two_by_two = g.kernel_h == 2 && g.kernel_w == 2 && g.stride == 2 && g.pad == 0;
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

constexpr std::int64_t kElementGrain = 1 << 15;  // elements below which threads do not pay

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
