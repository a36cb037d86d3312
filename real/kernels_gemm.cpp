// GEMMs: the back-ends (OpenBLAS's cblas_sgemm, oneDNN's dnnl_sgemm), the column-tiled gemm(),
// and the conv and fc layer kernels built on it.
#include "real/kernels.hpp"

#include <cblas.h>
#ifdef CNNPAR_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "real/kernel_loops.hpp"
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

}  // namespace cnnpar::real
