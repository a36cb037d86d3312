// Fast kernels (im2col + sgemm, ...) against the plain-loop reference kernels.
// Each check prints the largest absolute difference and compares it with a named tolerance.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "real/kernels.hpp"
#include "real/kernels_conv_direct.hpp"
#include "real/reference_kernels.hpp"

using namespace cnnpar::real;

namespace {

// FP32 sums of at most 125 products of values in [-1, 1]: rounding ~ sqrt(125)·6e-8·|sum|,
// about 1e-6 for sums of size ~10.
constexpr double kGemmTolerance = 1e-5;
// Kernels without reductions (pooling, relu, transposes): exact up to one rounding.
constexpr double kExactTolerance = 1e-6;
// LRN uses float pow and sums of 5 squares against a double reference.
constexpr double kLrnTolerance = 1e-5;
// Winograd F(4x4, 3x3) (Lavin & Gray 2016) sums each output over transformed 6x6 tiles whose
// coefficients reach 5.25 and whose inverse transform multiplies by up to 8: FP32 rounding grows
// ~10x over a direct sum's, to ~1e-4 on sums of ~300 products in [-1, 1] (size ~10).
constexpr double kWinogradTolerance = 2e-4;

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(double(a[i]) - double(b[i])));
  return m;
}

double report(const char* what, const std::vector<float>& fast, const std::vector<float>& ref) {
  const double d = max_abs_diff(fast, ref);
  std::printf("%-48s max |fast - ref| = %.3e\n", what, d);
  return d;
}

struct Case {
  std::int64_t c, n, h, w, kh, kw, stride, pad, o;
};

// Shapes include stride > 1, pad > 0, non-square inputs and kernels, a 1x1 kernel, and the
// stride-1 "same" shapes (K = 2·pad + 1) that take im2col/col2im's contiguous path.
const Case kConvCases[] = {
    {3, 2, 7, 9, 3, 3, 1, 1, 4},  {2, 3, 8, 6, 3, 2, 2, 1, 5}, {4, 1, 11, 7, 5, 5, 2, 2, 3},
    {5, 2, 6, 6, 1, 1, 1, 0, 6},  {1, 4, 9, 10, 4, 3, 3, 0, 2}, {3, 2, 5, 5, 3, 3, 2, 2, 3},
    {2, 2, 6, 7, 5, 5, 1, 2, 3},  {1, 3, 4, 4, 3, 3, 1, 1, 2},  // "same" convolutions: contiguous fast path
    {2, 3, 5, 6, 2, 3, 1, 1, 4},  // "same" along W only (OH = 6 != H = 5): one copy per image
};

ConvGeometry geometry(const Case& k) { return ConvGeometry{k.c, k.n, k.h, k.w, k.kh, k.kw, k.stride, k.pad}; }

// A case's forward operands, random in [-1, 1]: in (C, N, H, W), W (O, C·KH·KW), bias (O).
struct ConvOperands {
  std::vector<float> in, w, b;
};
ConvOperands random_operands(const Case& k, std::mt19937& rng) {
  const std::int64_t rows = k.c * k.kh * k.kw;
  auto in = random_vector(std::size_t(k.c * k.n * k.h * k.w), rng);
  auto w = random_vector(std::size_t(k.o * rows), rng);
  auto b = random_vector(std::size_t(k.o), rng);
  return {std::move(in), std::move(w), std::move(b)};
}

// im2col/col2im GEMM path of conv, using the Runtime's composition of kernels.
void fast_conv(const ConvGeometry& g, std::int64_t o, const std::vector<float>& w, const std::vector<float>& b,
               const std::vector<float>& in, std::vector<float>& out, std::int64_t tile) {
  std::vector<float> cols(std::size_t(g.column_rows() * g.column_cols()));
  im2col(g, in.data(), cols.data());
  int calls = 0;
  std::function<void()> cb = [&] { ++calls; };
  conv_forward_gemm(g, o, w.data(), b.data(), cols.data(), out.data(), Tiling{tile, &cb});
  if (tile > 0) CHECK(calls == int((g.column_cols() + tile - 1) / tile) - 1);
}

}  // namespace

TEST_CASE("conv forward: im2col + sgemm equals direct convolution") {
  std::mt19937 rng(1);
  for (const Case& k : kConvCases) {
    const ConvGeometry g = geometry(k);
    const auto [in, w, b] = random_operands(k, rng);
    std::vector<float> fast(std::size_t(k.o * g.column_cols())), ref(fast.size());
    ref::conv_forward(g, k.o, w.data(), b.data(), in.data(), ref.data());
    for (std::int64_t tile : {std::int64_t(0), std::int64_t(7)}) {
      fast_conv(g, k.o, w, b, in, fast, tile);
      CHECK(report("conv forward", fast, ref) < kGemmTolerance);
    }
  }
}

TEST_CASE("conv backward data: W^T E + col2im equals the direct adjoint") {
  std::mt19937 rng(2);
  for (const Case& k : kConvCases) {
    const ConvGeometry g = geometry(k);
    auto w = random_vector(std::size_t(k.o * g.column_rows()), rng);
    auto e = random_vector(std::size_t(k.o * g.column_cols()), rng);
    std::vector<float> dcols(std::size_t(g.column_rows() * g.column_cols()));
    std::vector<float> fast(std::size_t(k.c * k.n * k.h * k.w), 0.0f), ref(fast.size());
    std::function<void()> cb = [] {};
    conv_backward_data_gemm(g, k.o, w.data(), e.data(), dcols.data(), Tiling{5, &cb});
    col2im_add(g, dcols.data(), fast.data());
    ref::conv_backward_data(g, k.o, w.data(), e.data(), ref.data());
    CHECK(report("conv backward data", fast, ref) < kGemmTolerance);
  }
}

TEST_CASE("conv backward weight: E columns^T equals the direct sum") {
  std::mt19937 rng(3);
  for (const Case& k : kConvCases) {
    const ConvGeometry g = geometry(k);
    auto in = random_vector(std::size_t(k.c * k.n * k.h * k.w), rng);
    auto e = random_vector(std::size_t(k.o * g.column_cols()), rng);
    std::vector<float> cols(std::size_t(g.column_rows() * g.column_cols()));
    im2col(g, in.data(), cols.data());
    std::vector<float> fw(std::size_t(k.o * g.column_rows())), rw(fw.size()), fb(std::size_t(k.o)), rb(fb.size());
    std::function<void()> cb = [] {};
    conv_backward_weight_gemm(g, k.o, e.data(), cols.data(), fw.data(), fb.data(), Tiling{4, &cb});
    ref::conv_backward_weight(g, k.o, in.data(), e.data(), rw.data(), rb.data());
    CHECK(report("conv weight gradient", fw, rw) < kGemmTolerance);
    CHECK(report("conv bias gradient", fb, rb) < kGemmTolerance);
  }
}

namespace {

// One of oneDNN's convolutions against the reference kernels on a random case: forward with and
// without bias, backward data adding to earlier errors, weight and bias gradients.
void check_against_reference(DirectConv& conv, const Case& k, std::mt19937& rng, const std::string& name,
                             double tolerance) {
  const ConvGeometry g = geometry(k);
  const auto [in, w, b] = random_operands(k, rng);
  auto e = random_vector(std::size_t(k.o * g.column_cols()), rng);
  const auto label = [&](const char* what) { return name + " conv " + what; };

  std::vector<float> out(std::size_t(k.o * g.column_cols())), ref_out(out.size());
  ref::conv_forward(g, k.o, w.data(), b.data(), in.data(), ref_out.data());
  conv.forward(in.data(), w.data(), b.data(), out.data());
  CHECK(report(label("forward").c_str(), out, ref_out) < tolerance);
  std::vector<float> zero_bias(b.size(), 0.0f);
  ref::conv_forward(g, k.o, w.data(), zero_bias.data(), in.data(), ref_out.data());
  conv.forward(in.data(), w.data(), nullptr, out.data());
  CHECK(report(label("forward, no bias").c_str(), out, ref_out) < tolerance);

  // The errors add to what the tensor's other readers left there.
  const auto earlier = random_vector(in.size(), rng);
  std::vector<float> in_grad = earlier, ref_in_grad(in.size());
  ref::conv_backward_data(g, k.o, w.data(), e.data(), ref_in_grad.data());
  for (std::size_t i = 0; i < ref_in_grad.size(); ++i) ref_in_grad[i] += earlier[i];
  conv.backward_data_add(w.data(), e.data(), in_grad.data());
  CHECK(report(label("backward data (added)").c_str(), in_grad, ref_in_grad) < tolerance);

  std::vector<float> dw(w.size()), ref_dw(w.size()), db(b.size()), ref_db(b.size());
  ref::conv_backward_weight(g, k.o, in.data(), e.data(), ref_dw.data(), ref_db.data());
  conv.backward_weights(in.data(), e.data(), dw.data(), db.data());
  CHECK(report(label("weight gradient").c_str(), dw, ref_dw) < tolerance);
  // The bias gradient is a plain sum over the errors in both algorithms.
  CHECK(report(label("bias gradient").c_str(), db, ref_db) < kGemmTolerance);
}

}  // namespace

TEST_CASE("direct convolution (oneDNN): forward, backward data (adding) and weights equal the reference") {
  if (!direct_convolution_available()) {
    WARN("this build has no oneDNN (CNNPAR_ONEDNN=OFF): direct convolutions not tested");
    return;
  }
  std::mt19937 rng(4);
  for (const Case& k : kConvCases) {
    DirectConv direct(geometry(k), k.o);
    check_against_reference(direct, k, rng, "direct", kGemmTolerance);
  }
}

TEST_CASE("Winograd convolution (oneDNN): forward, backward data (adding) and weights equal the reference") {
  // 3x3 kernels of stride 1 (pad 1 and 0), the only ones Winograd F(4x4, 3x3) takes; channel
  // counts that are and are not multiples of oneDNN's 16-wide blocks; tiles cut at the edges.
  const Case cases[] = {{3, 2, 7, 9, 3, 3, 1, 1, 4}, {32, 2, 8, 8, 3, 3, 1, 1, 48}, {17, 3, 5, 7, 3, 3, 1, 0, 20},
                        {64, 1, 2, 2, 3, 3, 1, 1, 64}};
  std::mt19937 rng(5);
  int tested = 0;
  for (const Case& k : cases) {
    if (!winograd_convolution_available(geometry(k), k.o)) continue;
    ++tested;
    DirectConv winograd(geometry(k), k.o, ConvAlgorithm::winograd);
    CHECK(winograd.algorithm() == ConvAlgorithm::winograd);
    check_against_reference(winograd, k, rng, "winograd", kWinogradTolerance);
  }
  if (tested == 0) WARN("this CPU or build has no oneDNN Winograd kernels (oneDNN 2.x: AVX-512 only): not tested");
  // Not a shape Winograd F(4x4, 3x3) takes, on any CPU.
  CHECK_FALSE(winograd_convolution_available(ConvGeometry{4, 2, 8, 8, 3, 3, 2, 1}, 8));
  CHECK_FALSE(winograd_convolution_available(ConvGeometry{4, 2, 8, 8, 5, 5, 1, 2}, 8));
}

TEST_CASE("gemm with column tiles equals the naive product for every transpose") {
  std::mt19937 rng(4);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const std::int64_t m = 13, n = 29, k = 17;
      auto a = random_vector(std::size_t(m * k), rng), b = random_vector(std::size_t(k * n), rng);
      std::vector<float> fast(std::size_t(m * n)), ref(fast.size());
      int calls = 0;
      std::function<void()> cb = [&] { ++calls; };
      gemm(ta, tb, m, n, k, 1.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f, fast.data(), n, Tiling{8, &cb});
      ref::matmul(ta, tb, m, n, k, a.data(), b.data(), ref.data());
      CHECK(report("gemm (tiles of 8 columns)", fast, ref) < kGemmTolerance);
      CHECK(calls == 3);  // ceil(29 / 8) = 4 tiles, 3 gaps
    }
}

TEST_CASE("every GEMM back-end of the build equals the naive product, whole and tiled") {
  std::mt19937 rng(14);
  const GemmBackend in_use = gemm_backend();
  for (GemmBackend backend : available_gemm_backends()) {
    set_gemm_backend(backend);
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        // Strides larger than the matrices (a sub-matrix of a wider buffer) and beta = 1.
        const std::int64_t m = 19, n = 33, k = 23, pad = 3;
        const std::int64_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
        auto a = random_vector(std::size_t((ta ? k : m) * lda), rng), b = random_vector(std::size_t((tb ? n : k) * ldb), rng);
        auto c0 = random_vector(std::size_t(m * ldc), rng);
        std::vector<float> fast = c0, tiled = c0, ref(std::size_t(m * n));
        gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, fast.data(), ldc);
        int calls = 0;
        std::function<void()> cb = [&] { ++calls; };
        gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, tiled.data(), ldc, Tiling{8, &cb});
        CHECK(calls == 4);  // ceil(33 / 8) = 5 tiles
        // Reference on the packed matrices, plus C0.
        std::vector<float> ap(std::size_t(m * k)), bp(std::size_t(k * n));
        const std::int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
        for (std::int64_t i = 0; i < ar; ++i)
          for (std::int64_t j = 0; j < ac; ++j) ap[std::size_t(i * ac + j)] = a[std::size_t(i * lda + j)];
        for (std::int64_t i = 0; i < br; ++i)
          for (std::int64_t j = 0; j < bc; ++j) bp[std::size_t(i * bc + j)] = b[std::size_t(i * ldb + j)];
        ref::matmul(ta, tb, m, n, k, ap.data(), bp.data(), ref.data());
        std::vector<float> want(std::size_t(m * n)), got(want.size()), got_tiled(want.size());
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            const std::size_t p = std::size_t(i * n + j), q = std::size_t(i * ldc + j);
            want[p] = ref[p] + c0[q];
            got[p] = fast[q];
            got_tiled[p] = tiled[q];
          }
        const std::string what = std::string(to_string(backend)) + (ta ? " A^T" : " A") + (tb ? " B^T" : " B");
        CHECK(report(what.c_str(), got, want) < kGemmTolerance);
        CHECK(report((what + " (tiles of 8)").c_str(), got_tiled, want) < kGemmTolerance);
        // The padding columns of C are not written.
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = n; j < ldc; ++j) CHECK(fast[std::size_t(i * ldc + j)] == c0[std::size_t(i * ldc + j)]);
      }
  }
  set_gemm_backend(in_use);
}

TEST_CASE("GEMM back-end names: the in-use one is what the test environment asked for") {
  const char* asked = std::getenv("CNNPAR_TEST_GEMM");
  CHECK(std::string(to_string(gemm_backend())) == (asked && *asked ? asked : "openblas"));
  CHECK(parse_gemm_backend("openblas", "f", "/gemm") == GemmBackend::openblas);
  try {
    parse_gemm_backend("blis", "f", "/gemm");
    FAIL("blis accepted");
  } catch (const cnnpar::InputError& e) {
    CHECK(e.json_path() == "/gemm");
    CHECK(std::string(e.what()).find("blis") != std::string::npos);
  }
}

TEST_CASE("fc forward and backward equal the naive loops") {
  std::mt19937 rng(5);
  const std::int64_t N = 6, kb = 37, kc = 11;
  auto x = random_vector(std::size_t(N * kb), rng), w = random_vector(std::size_t(kc * kb), rng);
  auto b = random_vector(std::size_t(kc), rng), dy = random_vector(std::size_t(N * kc), rng);
  std::vector<float> fy(std::size_t(N * kc)), ry(fy.size());
  fc_forward(N, kb, kc, x.data(), w.data(), b.data(), fy.data());
  ref::fc_forward(N, kb, kc, x.data(), w.data(), b.data(), ry.data());
  CHECK(report("fc forward", fy, ry) < kGemmTolerance);
  std::vector<float> fdx(std::size_t(N * kb)), rdx(fdx.size());
  fc_backward_data(N, kb, kc, dy.data(), w.data(), fdx.data());
  ref::fc_backward_data(N, kb, kc, dy.data(), w.data(), rdx.data());
  CHECK(report("fc backward data", fdx, rdx) < kGemmTolerance);
  std::vector<float> fw(std::size_t(kc * kb)), rw(fw.size()), fb(static_cast<std::size_t>(kc)), rb(fb.size());
  fc_backward_weight(N, kb, kc, dy.data(), x.data(), fw.data(), fb.data());
  ref::fc_backward_weight(N, kb, kc, dy.data(), x.data(), rw.data(), rb.data());
  CHECK(report("fc weight gradient", fw, rw) < kGemmTolerance);
  CHECK(report("fc bias gradient", fb, rb) < kGemmTolerance);
}

TEST_CASE("layout transposes round-trip and place (c, n, s) at (n, c, s)") {
  std::mt19937 rng(6);
  const std::int64_t c = 3, n = 4, hw = 5;
  auto a = random_vector(std::size_t(c * n * hw), rng);
  std::vector<float> rows(a.size()), back(a.size());
  channel_major_to_rows(c, n, hw, a.data(), rows.data());
  // element (c=2, n=1, s=3) sits at (2·4 + 1)·5 + 3 = 48 in (C, N, HW) and (1·3 + 2)·5 + 3 = 28 in (N, C·HW)
  CHECK(rows[28] == a[48]);
  rows_to_channel_major(c, n, hw, rows.data(), back.data());
  CHECK(report("transpose round trip", back, a) == 0.0);
}

TEST_CASE("max and average pooling equal the definition") {
  std::mt19937 rng(7);
  const Case pools[] = {{2, 3, 8, 8, 2, 2, 2, 0, 0}, {3, 2, 7, 9, 3, 3, 2, 1, 0}, {1, 2, 6, 5, 3, 2, 1, 1, 0},
                        {2, 2, 7, 9, 2, 2, 2, 0, 0}};  // 2x2/2 that does not tile the plane
  for (const Case& k : pools) {
    const ConvGeometry g = geometry(k);
    const std::size_t in_n = std::size_t(k.c * k.n * k.h * k.w), out_n = std::size_t(k.c * k.n * g.out_h() * g.out_w());
    auto in = random_vector(in_n, rng), e = random_vector(out_n, rng);
    std::vector<float> fo(out_n), ro(out_n), fg(in_n), rg(in_n);
    std::vector<std::int32_t> arg(out_n);
    max_pool_forward(g, in.data(), fo.data(), arg.data());
    ref::max_pool_forward(g, in.data(), ro.data());
    CHECK(report("max pool forward", fo, ro) <= kExactTolerance);
    max_pool_backward(g, e.data(), arg.data(), fg.data());
    ref::max_pool_backward(g, in.data(), e.data(), rg.data());
    CHECK(report("max pool backward", fg, rg) <= kExactTolerance);
    avg_pool_forward(g, in.data(), fo.data());
    ref::avg_pool_forward(g, in.data(), ro.data());
    CHECK(report("avg pool forward", fo, ro) <= kExactTolerance);
    avg_pool_backward(g, e.data(), fg.data());
    ref::avg_pool_backward(g, e.data(), rg.data());
    CHECK(report("avg pool backward", fg, rg) <= kExactTolerance);
  }
}

// Batch normalisation: per channel sums of M = 2·5·6 = 60 values in double against the
// reference's double; the fast kernel folds scale and shift into one FP32 multiply-add, about
// 2 roundings of |y| <= 4: within 1e-5. Its backward folds Ioffe & Szegedy's chain rule
// (through the variance and the mean) into S1 and S2: a few roundings of |dx| <= 10.
constexpr double kBatchNormTolerance = 2e-5;

TEST_CASE("batch normalisation equals the chain rule of Ioffe & Szegedy, and keeps PyTorch's running statistics") {
  std::mt19937 rng(21);
  const std::int64_t C = 3, M = 60;
  auto x = random_vector(std::size_t(C * M), rng, 2.0f);
  for (std::int64_t i = 0; i < M; ++i) x[std::size_t(2 * M + i)] += 5.0f;  // a mean far from 0
  auto gamma = random_vector(std::size_t(C), rng), beta = random_vector(std::size_t(C), rng);
  auto dy = random_vector(std::size_t(C * M), rng);
  std::vector<float> y(x.size()), ry(x.size()), mean(C), invstd(C);
  std::vector<float> running_mean(C, 0.5f), running_var(C, 2.0f);
  batchnorm_forward(C, M, 1e-5, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data(),
                    {.momentum = 0.1, .mean = running_mean.data(), .variance = running_var.data()});
  ref::batchnorm_forward(C, M, 1e-5, x.data(), gamma.data(), beta.data(), ry.data());
  CHECK(report("batchnorm forward", y, ry) <= kBatchNormTolerance);
  std::vector<float> dx(x.size()), rdx(x.size()), dg(C), db(C), rdg(C), rdb(C);
  batchnorm_backward(C, M, x.data(), mean.data(), invstd.data(), gamma.data(), dy.data(), dx.data(), dg.data(),
                     db.data());
  ref::batchnorm_backward(C, M, 1e-5, x.data(), gamma.data(), dy.data(), rdx.data(), rdg.data(), rdb.data());
  CHECK(report("batchnorm backward data", dx, rdx) <= kBatchNormTolerance);
  CHECK(report("batchnorm backward scale", dg, rdg) <= kBatchNormTolerance);
  CHECK(report("batchnorm backward shift", db, rdb) <= kBatchNormTolerance);
  // Running statistics (PyTorch's BatchNorm2d, momentum 0.1): r = 0.9·r + 0.1·batch, the
  // variance unbiased (M - 1). Channel 2's mean is 5 + its values' mean.
  for (std::int64_t c = 0; c < C; ++c) {
    double sum = 0, squares = 0;
    for (std::int64_t i = 0; i < M; ++i) sum += x[std::size_t(c * M + i)];
    const double mu = sum / double(M);
    for (std::int64_t i = 0; i < M; ++i) squares += (x[std::size_t(c * M + i)] - mu) * (x[std::size_t(c * M + i)] - mu);
    CHECK(running_mean[std::size_t(c)] == Approx(0.9 * 0.5 + 0.1 * mu).epsilon(1e-6));
    CHECK(running_var[std::size_t(c)] == Approx(0.9 * 2.0 + 0.1 * squares / double(M - 1)).epsilon(1e-6));
  }
}

TEST_CASE("residual sums and error accumulation equal the element-wise sum") {
  std::mt19937 rng(22);
  const std::int64_t count = 100003;  // above the threads' grain, odd
  auto a = random_vector(std::size_t(count), rng), b = random_vector(std::size_t(count), rng);
  auto c = random_vector(std::size_t(count), rng);
  std::vector<float> out(static_cast<std::size_t>(count)), ref_out(static_cast<std::size_t>(count));
  sum_forward(count, {a.data(), b.data(), c.data()}, out.data());
  for (std::size_t i = 0; i < ref_out.size(); ++i) ref_out[i] = (a[i] + b[i]) + c[i];
  CHECK(report("add of three inputs", out, ref_out) == 0.0);
  std::vector<float> acc = a;
  accumulate(count, b.data(), acc.data());
  for (std::size_t i = 0; i < ref_out.size(); ++i) ref_out[i] = a[i] + b[i];
  CHECK(report("accumulated errors", acc, ref_out) == 0.0);
}

TEST_CASE("ceil-mode max pooling (GoogLeNet's) equals the definition, overhanging windows included") {
  std::mt19937 rng(23);
  struct CeilCase {
    ConvGeometry g;
    std::int64_t floor_h;  // rows the floor rule gives
  };
  // 8 rows, 3x3/2: floor 3, ceil 4; 7 rows, 2x2/2: floor 3, ceil 4 (not the 2x2 fast path's
  // shape); 3x3/1 pad 1: the same either way.
  const CeilCase cases[] = {{{2, 3, 8, 9, 3, 3, 2, 0, true}, 3}, {{3, 2, 7, 7, 2, 2, 2, 0, true}, 3},
                            {{2, 2, 6, 5, 3, 3, 1, 1, true}, 6}};
  for (const CeilCase& k : cases) {
    const ConvGeometry& g = k.g;
    ConvGeometry floor_g = g;
    floor_g.ceil = false;
    CHECK(floor_g.out_h() == k.floor_h);
    const std::size_t in_n = std::size_t(g.channels * g.batch * g.in_h * g.in_w);
    const std::size_t out_n = std::size_t(g.channels * g.batch * g.out_h() * g.out_w());
    auto in = random_vector(in_n, rng), e = random_vector(out_n, rng);
    std::vector<float> fo(out_n), ro(out_n), fg(in_n), rg(in_n);
    std::vector<std::int32_t> arg(out_n);
    max_pool_forward(g, in.data(), fo.data(), arg.data());
    ref::max_pool_forward(g, in.data(), ro.data());
    CHECK(report("ceil-mode max pool forward", fo, ro) <= kExactTolerance);
    max_pool_backward(g, e.data(), arg.data(), fg.data());
    ref::max_pool_backward(g, in.data(), e.data(), rg.data());
    CHECK(report("ceil-mode max pool backward", fg, rg) <= kExactTolerance);
  }
}

TEST_CASE("LRN across channels equals the per-position definition") {
  std::mt19937 rng(8);
  const LrnParams p{5, 1e-2, 0.75, 2.0};  // alpha larger than AlexNet's so the term matters
  for (std::int64_t channels : {3, 7}) {
    const std::int64_t positions = 10;
    auto in = random_vector(std::size_t(channels * positions), rng, 3.0f);
    auto e = random_vector(in.size(), rng);
    std::vector<float> fo(in.size()), ro(in.size()), scale(in.size()), fg(in.size()), rg(in.size());
    lrn_forward(p, channels, positions, positions, 1, in.data(), fo.data(), scale.data());
    ref::lrn_forward(p, channels, positions, in.data(), ro.data());
    CHECK(report("lrn forward", fo, ro) < kLrnTolerance);
    lrn_backward(p, channels, positions, positions, 1, in.data(), fo.data(), scale.data(), e.data(), fg.data());
    ref::lrn_backward(p, channels, positions, in.data(), e.data(), rg.data());
    CHECK(report("lrn backward", fg, rg) < kLrnTolerance);
    // Same tensor stored position-major (stride C between positions) gives the same values.
    std::vector<float> tin(in.size()), tout(in.size()), tscale(in.size()), back(in.size());
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t q = 0; q < positions; ++q) tin[std::size_t(q * channels + c)] = in[std::size_t(c * positions + q)];
    lrn_forward(p, channels, positions, 1, channels, tin.data(), tout.data(), tscale.data());
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t q = 0; q < positions; ++q) back[std::size_t(c * positions + q)] = tout[std::size_t(q * channels + c)];
    CHECK(report("lrn forward, position-major strides", back, ro) < kLrnTolerance);
  }
}

TEST_CASE("softmax cross-entropy: loss equals the reference, gradient rows sum to zero") {
  std::mt19937 rng(9);
  const std::int64_t N = 5, K = 7;
  auto z = random_vector(std::size_t(N * K), rng, 4.0f);
  std::vector<int> y = {0, 6, 3, 3, 1};
  std::vector<float> p(z.size()), g(z.size());
  std::int64_t correct = -1;
  const double loss = softmax_forward(N, K, z.data(), y.data(), p.data(), &correct);
  const double ref_loss = ref::softmax_cross_entropy(N, K, z.data(), y.data());
  std::printf("softmax loss |fast - ref| = %.3e\n", std::abs(loss - ref_loss));
  CHECK(std::abs(loss - ref_loss) < 1e-5);
  std::int64_t hits = 0;
  for (std::int64_t i = 0; i < N; ++i)
    hits += std::max_element(z.begin() + i * K, z.begin() + (i + 1) * K) - (z.begin() + i * K) == y[std::size_t(i)];
  CHECK(correct == hits);
  softmax_cross_entropy_backward(N, K, p.data(), y.data(), 20.0, g.data());
  for (std::int64_t i = 0; i < N; ++i) {
    double s = 0;
    for (std::int64_t j = 0; j < K; ++j) s += g[std::size_t(i * K + j)];
    CHECK(std::abs(s) < 1e-7);  // Σ_j (p_j - onehot_j) / 20 = (1 - 1) / 20 = 0
  }
}

TEST_CASE("dropout masks depend on the global image index only") {
  const double ratio = 0.5;
  const std::int64_t C = 3, hw = 4, N = 8;
  std::vector<float> in(std::size_t(C * N * hw), 1.0f), out(in.size()), mask(in.size());
  const DropoutLayout cm{true, C, hw};
  dropout_forward(cm, N, 0, 42, 7, 3, ratio, in.data(), out.data(), mask.data());
  // Two halves processed separately (as two ranks would) give the same masks for the same images.
  std::vector<float> half_in(std::size_t(C * 4 * hw), 1.0f), ho(half_in.size()), hm(half_in.size());
  dropout_forward(cm, 4, 4, 42, 7, 3, ratio, half_in.data(), ho.data(), hm.data());
  int kept = 0;
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t s = 0; s < hw; ++s) {
        CHECK(hm[std::size_t((c * 4 + i) * hw + s)] == mask[std::size_t((c * N + 4 + i) * hw + s)]);
      }
  for (float m : mask) {
    CHECK((m == 0.0f || m == 2.0f));  // inverted dropout: kept units scaled by 1/(1-0.5) = 2
    kept += m != 0.0f;
  }
  // The row layout (N, C·HW) gives the same mask per (image, unit).
  std::vector<float> rin(in.size(), 1.0f), rout(in.size()), rmask(in.size());
  dropout_forward(DropoutLayout{false, C, hw}, N, 0, 42, 7, 3, ratio, rin.data(), rout.data(), rmask.data());
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t s = 0; s < hw; ++s)
        CHECK(rmask[std::size_t(i * C * hw + c * hw + s)] == mask[std::size_t((c * N + i) * hw + s)]);
  // Keep fraction over 1e5 draws is 0.5 within 5 standard deviations (sqrt(0.25/1e5) = 0.0016).
  int keeps = 0;
  for (int u = 0; u < 100000; ++u) keeps += dropout_keep(1, 2, 3, u / 100, u % 100, ratio);
  CHECK(std::abs(keeps / 1e5 - 0.5) < 0.008);
  (void)kept;
}

TEST_CASE("SGD with momentum equals the element-wise reference") {
  std::mt19937 rng(10);
  auto g = random_vector(100, rng), w = random_vector(100, rng), v = random_vector(100, rng);
  auto w2 = w, v2 = v;
  sgd_update(100, 0.05f, 0.9f, 5e-4f, g.data(), w.data(), v.data());
  ref::sgd_update(100, 0.05f, 0.9f, 5e-4f, g.data(), w2.data(), v2.data());
  CHECK(report("sgd weights", w, w2) < kExactTolerance);
  CHECK(report("sgd velocity", v, v2) < kExactTolerance);
}

TEST_CASE("the project's own loops give the same bits for 1 and 3 threads") {
  std::mt19937 rng(11);
  const ConvGeometry g{5, 3, 9, 8, 3, 3, 2, 1};
  const ConvGeometry pg{5, 3, 8, 8, 2, 2, 2, 0};  // the 2x2/2 fast path of max pooling
  auto in = random_vector(std::size_t(5 * 3 * 9 * 8), rng);
  auto pin = random_vector(std::size_t(5 * 3 * 8 * 8), rng);
  auto run = [&](int threads) {
    set_compute_threads(threads);
    std::vector<float> cols(std::size_t(g.column_rows() * g.column_cols())), back(in.size(), 0.0f);
    im2col(g, in.data(), cols.data());
    col2im_add(g, cols.data(), back.data());
    std::vector<float> pooled(std::size_t(5 * 3 * 4 * 4)), pgrad(pin.size());
    std::vector<std::int32_t> arg(pooled.size());
    max_pool_forward(pg, pin.data(), pooled.data(), arg.data());
    max_pool_backward(pg, pooled.data(), arg.data(), pgrad.data());
    std::vector<float> lrn(in.size()), scale(in.size()), lgrad(in.size());
    const LrnParams p{5, 1e-2, 0.75, 2.0};
    lrn_forward(p, 5, 3 * 9 * 8, 3 * 9 * 8, 1, in.data(), lrn.data(), scale.data());
    lrn_backward(p, 5, 3 * 9 * 8, 3 * 9 * 8, 1, in.data(), lrn.data(), scale.data(), in.data(), lgrad.data());
    std::vector<float> bn(in.size()), bn_grad(in.size()), mean(5), invstd(5), gamma(5, 1.5f), beta(5, 0.25f);
    batchnorm_forward(5, 3 * 9 * 8, 1e-5, in.data(), gamma.data(), beta.data(), bn.data(), mean.data(), invstd.data());
    batchnorm_backward(5, 3 * 9 * 8, in.data(), mean.data(), invstd.data(), gamma.data(), lrn.data(), bn_grad.data(),
                       nullptr, nullptr);
    std::vector<float> all;
    for (const auto* v : {&cols, &back, &pooled, &pgrad, &lrn, &lgrad, &bn, &bn_grad})
      all.insert(all.end(), v->begin(), v->end());
    return all;
  };
  const auto one = run(1), three = run(3);
  set_compute_threads(1);
  CHECK(one == three);
}
