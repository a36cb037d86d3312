// Finite-difference gradient checks of every layer kind, and of the whole Runtime.
//
// The kernels run in FP32; the scalar test loss S = Σ r_i·y_i (r random, fixed) is summed in
// double. Central differences (S(x+h) - S(x-h)) / 2h with h = 1e-2: the layers that are
// linear in the checked variable (conv, fc, pooling, dropout, relu away from 0) have no
// truncation error, so the error is the FP32 rounding of S (~1e-7 for these sizes) / h,
// ~1e-5; LRN and softmax add a curvature term O(h²) ~ 1e-5. Tolerance: |fd - g| <=
// kAbsTolerance + kRelTolerance·|g|.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <vector>

#include "real/dataset.hpp"
#include "real/kernels.hpp"
#include "real/runtime.hpp"
#include "tests/real/real_test_util.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

namespace {

constexpr float kStep = 1e-2f;
constexpr double kAbsTolerance = 1e-4;
constexpr double kRelTolerance = 1e-3;

std::vector<float> random_vector(std::size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Values at least 3h apart and away from 0, so relu and max pooling have no kink within ±h.
std::vector<float> separated_vector(std::size_t n, std::mt19937& rng) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.05f * float(i) - 0.025f * float(n) + 0.0125f;
  std::shuffle(v.begin(), v.end(), rng);
  return v;
}

double dot(const std::vector<float>& r, const std::vector<float>& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += double(r[i]) * y[i];
  return s;
}

// Checks `analytic` against central differences of loss() for variable x (every element).
void check_gradient(const char* what, std::vector<float>& x, const std::function<double()>& loss,
                    const std::vector<float>& analytic) {
  REQUIRE(x.size() == analytic.size());
  double worst = 0;
  bool ok = true;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + kStep;
    const double up = loss();
    x[i] = keep - kStep;
    const double down = loss();
    x[i] = keep;
    const double fd = (up - down) / (2.0 * double(kStep));
    const double err = std::abs(fd - analytic[i]);
    worst = std::max(worst, err);
    if (err > kAbsTolerance + kRelTolerance * std::abs(double(analytic[i]))) {
      ok = false;
      std::printf("  %s[%zu]: analytic %.6g, finite difference %.6g\n", what, i, double(analytic[i]), fd);
    }
  }
  std::printf("%-40s max |fd - analytic| = %.3e over %zu values\n", what, worst, x.size());
  CHECK(ok);
}

}  // namespace

TEST_CASE("gradcheck: conv weights, bias and input") {
  std::mt19937 rng(11);
  const ConvGeometry g{2, 2, 5, 6, 3, 2, 2, 1};  // stride 2, pad 1, non-square kernel
  const std::int64_t O = 3;
  auto in = random_vector(std::size_t(g.channels * g.batch * g.in_h * g.in_w), rng);
  auto w = random_vector(std::size_t(O * g.column_rows()), rng);
  auto b = random_vector(std::size_t(O), rng);
  auto r = random_vector(std::size_t(O * g.column_cols()), rng);
  std::vector<float> cols(std::size_t(g.column_rows() * g.column_cols())), out(r.size());
  auto loss = [&] {
    im2col(g, in.data(), cols.data());
    conv_forward_gemm(g, O, w.data(), b.data(), cols.data(), out.data());
    return dot(r, out);
  };
  loss();
  std::vector<float> gw(w.size()), gb(b.size()), dcols(cols.size()), gin(in.size(), 0.0f);
  conv_backward_weight_gemm(g, O, r.data(), cols.data(), gw.data(), gb.data());
  conv_backward_data_gemm(g, O, w.data(), r.data(), dcols.data());
  col2im_add(g, dcols.data(), gin.data());
  check_gradient("conv weights", w, loss, gw);
  check_gradient("conv bias", b, loss, gb);
  check_gradient("conv input", in, loss, gin);
}

TEST_CASE("gradcheck: fc weights, bias and input") {
  std::mt19937 rng(12);
  const std::int64_t N = 3, kb = 7, kc = 4;
  auto x = random_vector(std::size_t(N * kb), rng), w = random_vector(std::size_t(kc * kb), rng);
  auto b = random_vector(std::size_t(kc), rng), r = random_vector(std::size_t(N * kc), rng);
  std::vector<float> y(r.size());
  auto loss = [&] {
    fc_forward(N, kb, kc, x.data(), w.data(), b.data(), y.data());
    return dot(r, y);
  };
  std::vector<float> gw(w.size()), gb(b.size()), gx(x.size());
  fc_backward_weight(N, kb, kc, r.data(), x.data(), gw.data(), gb.data());
  fc_backward_data(N, kb, kc, r.data(), w.data(), gx.data());
  check_gradient("fc weights", w, loss, gw);
  check_gradient("fc bias", b, loss, gb);
  check_gradient("fc input", x, loss, gx);
}

TEST_CASE("gradcheck: max and average pooling") {
  std::mt19937 rng(13);
  const ConvGeometry g{2, 2, 6, 5, 3, 2, 2, 1};
  const std::size_t in_n = std::size_t(g.channels * g.batch * g.in_h * g.in_w);
  const std::size_t out_n = std::size_t(g.channels * g.batch * g.out_h() * g.out_w());
  auto in = separated_vector(in_n, rng);
  auto r = random_vector(out_n, rng);
  std::vector<float> out(out_n), gin(in_n);
  std::vector<std::int32_t> arg(out_n);
  auto max_loss = [&] {
    max_pool_forward(g, in.data(), out.data(), arg.data());
    return dot(r, out);
  };
  max_loss();
  max_pool_backward(g, r.data(), arg.data(), gin.data());
  check_gradient("max pool input", in, max_loss, gin);
  auto avg_loss = [&] {
    avg_pool_forward(g, in.data(), out.data());
    return dot(r, out);
  };
  avg_pool_backward(g, r.data(), gin.data());
  check_gradient("avg pool input", in, avg_loss, gin);
}

TEST_CASE("gradcheck: relu") {
  std::mt19937 rng(14);
  auto in = separated_vector(40, rng);
  auto r = random_vector(40, rng);
  std::vector<float> out(40), gin(40);
  auto loss = [&] {
    relu_forward(40, in.data(), out.data());
    return dot(r, out);
  };
  loss();
  relu_backward(40, out.data(), r.data(), gin.data());
  check_gradient("relu input", in, loss, gin);
}

TEST_CASE("gradcheck: lrn across channels") {
  std::mt19937 rng(15);
  const LrnParams p{5, 0.5, 0.75, 1.0};  // large alpha so the cross-channel term is visible
  const std::int64_t C = 7, P = 6;
  auto in = random_vector(std::size_t(C * P), rng, -2.0f, 2.0f);
  auto r = random_vector(in.size(), rng);
  std::vector<float> out(in.size()), scale(in.size()), gin(in.size());
  auto loss = [&] {
    lrn_forward(p, C, P, P, 1, in.data(), out.data(), scale.data());
    return dot(r, out);
  };
  loss();
  lrn_backward(p, C, P, P, 1, in.data(), out.data(), scale.data(), r.data(), gin.data());
  check_gradient("lrn input", in, loss, gin);
}

TEST_CASE("gradcheck: dropout") {
  std::mt19937 rng(16);
  const DropoutLayout l{true, 3, 4};
  const std::int64_t N = 5;
  auto in = random_vector(std::size_t(3 * 4 * N), rng), r = random_vector(in.size(), rng);
  std::vector<float> out(in.size()), mask(in.size()), gin(in.size());
  auto loss = [&] {
    dropout_forward(l, N, 10, 99, 3, 2, 0.4, in.data(), out.data(), mask.data());
    return dot(r, out);
  };
  loss();
  dropout_backward(std::int64_t(in.size()), mask.data(), r.data(), gin.data());
  check_gradient("dropout input", in, loss, gin);
}

TEST_CASE("gradcheck: softmax cross-entropy normalised by the global batch") {
  std::mt19937 rng(17);
  const std::int64_t n = 4, K = 6;
  const double N = 10;  // this sub-batch is part of a global batch of 10 images
  auto z = random_vector(std::size_t(n * K), rng, -3.0f, 3.0f);
  const std::vector<int> y = {2, 0, 5, 2};
  std::vector<float> p(z.size()), g(z.size());
  auto loss = [&] { return softmax_forward(n, K, z.data(), y.data(), p.data(), nullptr) / N; };
  loss();
  softmax_cross_entropy_backward(n, K, p.data(), y.data(), N, g.data());
  check_gradient("softmax-CE logits", z, loss, g);
}

TEST_CASE("gradcheck: batch normalisation scale, shift and input") {
  // S = Σ r·y is smooth in every variable; through the batch mean and variance every input
  // moves every output of its channel (curvature O(h²) ~ 1e-5 at these sizes).
  std::mt19937 rng(15);
  const std::int64_t C = 3, M = 2 * 4 * 3;  // N = 2 images of 4x3
  auto x = random_vector(std::size_t(C * M), rng), gamma = random_vector(std::size_t(C), rng, 0.5f, 1.5f);
  auto beta = random_vector(std::size_t(C), rng), r = random_vector(std::size_t(C * M), rng);
  std::vector<float> y(x.size()), mean(C), invstd(C);
  auto loss = [&] {
    batchnorm_forward(C, M, 1e-5, x.data(), gamma.data(), beta.data(), y.data(), mean.data(), invstd.data());
    return dot(r, y);
  };
  loss();
  std::vector<float> gx(x.size()), gg(C), gb(C);
  batchnorm_backward(C, M, x.data(), mean.data(), invstd.data(), gamma.data(), r.data(), gx.data(), gg.data(), gb.data());
  check_gradient("batchnorm scale", gamma, loss, gg);
  check_gradient("batchnorm shift", beta, loss, gb);
  check_gradient("batchnorm input", x, loss, gx);
}

TEST_CASE("gradcheck: global average pooling") {
  std::mt19937 rng(16);
  const ConvGeometry g{3, 2, 4, 5, 4, 5, 1, 0};  // the window is the whole 4x5 input
  REQUIRE(g.out_h() == 1);
  REQUIRE(g.out_w() == 1);
  auto in = random_vector(std::size_t(3 * 2 * 4 * 5), rng), r = random_vector(std::size_t(3 * 2), rng);
  std::vector<float> out(r.size()), gin(in.size());
  auto loss = [&] {
    avg_pool_forward(g, in.data(), out.data());
    return dot(r, out);
  };
  avg_pool_backward(g, r.data(), gin.data());
  check_gradient("global average pool input", in, loss, gin);
}

namespace {
// Central differences of the Runtime's mean loss against its gradients, every 7th parameter.
void check_runtime_gradients(const char* what, const Network& net) {
  const std::int64_t N = 4;
  const Schedule s = testing::make_schedule(net, "dp", 1, N, 1);
  Runtime rt(net, s, 0, 7, SgdConfig{});
  SyntheticDataset data(net.input, net.classes(), 64, 3, 0.5f);
  const auto& ops = s.programs[0].ops;
  const std::function<void()> none;
  rt.load_batch(0, data);
  for (const Op& op : ops)
    if (op.kind == OpKind::compute && op.phase != Phase::update) rt.run_compute(op, 0, none);
  const std::vector<float> grads = rt.flat_gradients();
  const RuntimeState base = rt.state();
  auto loss_at = [&](const std::vector<float>& w) {
    RuntimeState st = base;
    st.weights = w;
    rt.restore(st);
    for (const Op& op : ops)
      if (op.kind == OpKind::compute && op.phase == Phase::forward) rt.run_compute(op, 0, none);
    return rt.last_loss_sum() / double(N);
  };
  // Every 7th parameter (weights and biases of every layer). The mean loss is ~1.6 with FP32
  // rounding ~1e-7, so with h = 1e-2 the rounding term is ~1e-5 and curvature O(h²) ~1e-5.
  constexpr double h = 1e-2;
  std::vector<float> w = base.weights;
  double worst = 0;
  int checked = 0, bad = 0;
  for (std::size_t i = 0; i < w.size(); i += 7) {
    const float keep = w[i];
    w[i] = keep + float(h);
    const double up = loss_at(w);
    w[i] = keep - float(h);
    const double down = loss_at(w);
    w[i] = keep;
    const double fd = (up - down) / (2 * h);
    const double err = std::abs(fd - grads[i]);
    worst = std::max(worst, err);
    ++checked;
    if (err > 1e-4 + 1e-3 * std::abs(double(grads[i]))) {
      ++bad;
      std::printf("  parameter %zu: analytic %.6g, finite difference %.6g\n", i, double(grads[i]), fd);
    }
  }
  std::printf("%-40s max |fd - analytic| = %.3e over %d parameters\n", what, worst, checked);
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("gradcheck: the Runtime's gradients of the whole network (P = 1, dp schedule)") {
  // Kinks (relu, max pool) are checked per kernel above; through a whole network some unit
  // fed by a first-layer weight always sits within the step of its kink, so this uses the
  // smooth variant of the test network (conv, lrn, avg pool, fc, dropout, softmax).
  check_runtime_gradients("runtime network", testing::smooth_network());
}

TEST_CASE("gradcheck: the Runtime's gradients of a graph network (residual add, concat, batchnorm)") {
  // Two outputs read twice (bn1 by conv2 and the add, the add by conv3 and the concat), so
  // their errors are sums; no relu, so no kink (the smooth network's reason).
  check_runtime_gradients("runtime graph network", testing::smooth_graph_network());
}
