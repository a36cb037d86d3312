#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "model/platform.hpp"
#include "system/gemm_rate.hpp"
#include "system/op_time.hpp"

using namespace cnnpar;

namespace {

// A rate that is multilinear in (log M, log N, log K):
//   rate = 1e9 · (20 + 3·lm + 2·ln + 1.5·lk + 0.25·lm·ln − 0.1·ln·lk + 0.05·lm·ln·lk),
// lm = ln M etc. Multilinear interpolation on a tensor grid reproduces it exactly, so the
// only error is rounding.
double multilinear_rate(double m, double n, double k) {
  const double lm = std::log(m), ln = std::log(n), lk = std::log(k);
  return 1e9 * (20 + 3 * lm + 2 * ln + 1.5 * lk + 0.25 * lm * ln - 0.1 * ln * lk + 0.05 * lm * ln * lk);
}
constexpr double kRounding = 1e-12;  // relative

std::map<std::string, double> tensor_grid(std::optional<Phase> phase) {
  std::map<std::string, double> rates;
  for (int m : {16, 64, 256})
    for (int n : {100, 1000, 10000})
      for (int k : {8, 80, 800}) rates[gemm_key({m, n, k}, phase)] = multilinear_rate(m, n, k);
  return rates;
}

}  // namespace

TEST_CASE("GEMM grid: grid points come back exactly") {
  const auto rates = tensor_grid(Phase::forward);
  const GemmGrid grid(rates);
  for (const auto& [key, rate] : rates) {
    const GemmGridPoint point = parse_gemm_key(key, rate);
    const auto got = gemm_rate(grid, point.shape, Phase::forward);
    REQUIRE(got);
    CHECK(got->rate_flops == rate);
    CHECK_FALSE(got->out_of_range);
  }
}

TEST_CASE("GEMM grid: a rate multilinear in the logs is reproduced between the points") {
  const GemmGrid grid(tensor_grid(Phase::backward_weight));
  // Off-grid in every dimension, in one dimension, and in two.
  for (const GemmShape shape : {GemmShape{30, 333, 50}, GemmShape{64, 5000, 8}, GemmShape{200, 1000, 12},
                                GemmShape{17, 9999, 799}}) {
    const auto got = gemm_rate(grid, shape, Phase::backward_weight);
    REQUIRE(got);
    CHECK(got->rate_flops == Approx(multilinear_rate(double(shape.m), double(shape.n), double(shape.k))).epsilon(kRounding));
    CHECK_FALSE(got->out_of_range);
  }
}

TEST_CASE("GEMM grid: a saturating rate along a batch line is within the interpolation bound") {
  // The calibration's lines: fixed M, K, the batch dimension N = 256·b for b = 1, 2, 4, ... 128.
  // rate(N) = 100 GF · N / (N + 2048) is a logistic function of x = ln N: its second derivative
  // in x is at most 100 GF · 0.0962, so piecewise-linear interpolation in x with steps
  // h = ln 2 errs by at most h²/8 · 9.62 GF = 0.578 GF.
  const auto rate = [](double n) { return 100e9 * n / (n + 2048); };
  constexpr double kBound_flops = 0.578e9;
  std::map<std::string, double> rates;
  for (int b = 1; b <= 128; b *= 2) rates[gemm_key({128, 256 * b, 576}, Phase::forward)] = rate(256.0 * b);
  const GemmGrid grid(rates);
  double worst = 0;
  for (int b = 1; b <= 128; ++b) {
    const auto got = gemm_rate(grid, {128, 256 * b, 576}, Phase::forward);
    REQUIRE(got);
    CHECK_FALSE(got->out_of_range);
    worst = std::max(worst, std::abs(got->rate_flops - rate(256.0 * b)));
  }
  CHECK(worst <= kBound_flops);
  CHECK(worst > 0);  // between the points the line is not the curve: the check above has teeth
}

TEST_CASE("GEMM grid: outside the measured range the nearest end is taken and flagged") {
  std::map<std::string, double> rates = {{gemm_key({64, 1024, 27}, Phase::forward), 10e9},
                                         {gemm_key({64, 4096, 27}, Phase::forward), 30e9}};
  const GemmGrid grid(rates);
  const auto above = gemm_rate(grid, {64, 65536, 27}, Phase::forward);
  REQUIRE(above);
  CHECK(above->rate_flops == 30e9);
  CHECK(above->out_of_range);
  const auto below = gemm_rate(grid, {64, 16, 27}, Phase::forward);
  REQUIRE(below);
  CHECK(below->rate_flops == 10e9);
  CHECK(below->out_of_range);
  // Halfway in log N (2048 = sqrt(1024 · 4096)): the mean, inside.
  const auto mid = gemm_rate(grid, {64, 2048, 27}, Phase::forward);
  REQUIRE(mid);
  CHECK(mid->rate_flops == Approx(20e9).epsilon(kRounding));
  CHECK_FALSE(mid->out_of_range);
  // Another layer's M: clamped as well.
  CHECK(gemm_rate(grid, {512, 2048, 27}, Phase::forward)->out_of_range);
}

TEST_CASE("GEMM grid: a phase's own points win, keys without a phase serve the others") {
  std::map<std::string, double> rates = {{gemm_key({8, 8, 8}, Phase::forward), 1e9},
                                         {gemm_key({8, 8, 8}, std::nullopt), 2e9}};
  const GemmGrid grid(rates);
  CHECK(gemm_rate(grid, {8, 8, 8}, Phase::forward)->rate_flops == 1e9);
  CHECK(gemm_rate(grid, {8, 8, 8}, Phase::backward_data)->rate_flops == 2e9);
  const GemmGrid forward_only({{gemm_key({8, 8, 8}, Phase::forward), 1e9}});
  CHECK_FALSE(gemm_rate(forward_only, {8, 8, 8}, Phase::backward_weight));
}

TEST_CASE("GEMM grid keys: shapes and phases are checked") {
  CHECK(parse_gemm_key("gemm 3x4x5 backward_data", 1).shape == GemmShape{3, 4, 5});
  CHECK(parse_gemm_key("gemm 3x4x5 backward_data", 1).phase == Phase::backward_data);
  CHECK_FALSE(parse_gemm_key("gemm 3x4x5", 1).phase);
  for (const char* bad : {"gemm 3x4", "gemm 3x4x0", "gemm 3x4x5 sideways", "gemm 3x4x5 update", "3x4x5", "gemm 3x4xK"})
    CHECK_THROWS_AS(parse_gemm_key(bad, 1), std::invalid_argument);
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "t", "nodes": {"count": 1, "peak": "1Tf"},
      "network": {"bandwidth": "1GBps", "latency": "1us"},
      "calibration": {"gemm_flops": {"gemm 2x2": "1Gf"}}})");
  CHECK_THROWS_AS(parse_platform(doc, "p.json"), InputError);
}

TEST_CASE("op time of a GEMM between calibrated batches is interpolated, outside it warns") {
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "cal", "nodes": {"count": 1, "peak": "1Tf"},
      "network": {"bandwidth": "1GBps", "latency": "1us"},
      "calibration": {"gemm_flops": {"gemm 64x1024x27 forward": "10Gf", "gemm 64x4096x27 forward": "30Gf"}}})");
  const Platform platform = parse_platform(doc, "p.json");
  const GemmShape mid{64, 2048, 27};
  const Op op = Op::compute_op("c.fwd", 0, Phase::forward, KernelClass::gemm, mid.flops(), 0, 2, mid);
  // 2·64·2048·27 FLOP at the interpolated 20 GFLOP/s
  CHECK(op_time_s(platform, op, 0) == Approx(mid.flops() / 20e9).epsilon(kRounding));
  Schedule schedule;
  schedule.programs.resize(1);
  schedule.programs[0].ops = {op};
  CHECK(calibration_warnings(platform, schedule).empty());
  const GemmShape big{64, 8192, 27};
  schedule.programs[0].ops = {Op::compute_op("c.fwd", 0, Phase::forward, KernelClass::gemm, big.flops(), 0, 8, big)};
  const auto warnings = calibration_warnings(platform, schedule);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("gemm 64x8192x27 forward"));
}

namespace {

// The calibration warnings of a one-rank schedule of `op` alone.
std::vector<std::string> warnings_for_one_op(const Platform& platform, const Op& op) {
  Schedule schedule;
  schedule.programs.resize(1);
  schedule.programs[0].ops = {op};
  return calibration_warnings(platform, schedule);
}

// The platform's grid `rates` survives a round trip through its JSON; without it, `op` is
// priced by its class's roofline and the one warning contains `warning`.
void check_grid_kept_and_missed(const Platform& platform, std::map<std::string, double> Platform::*rates, const Op& op,
                                const std::string& warning) {
  const Platform again = parse_platform(to_json(platform), "again.json");
  CHECK(again.*rates == platform.*rates);
  Platform without = platform;
  (without.*rates).clear();
  without.resolve_gemm_grid();
  const auto warnings = warnings_for_one_op(without, op);
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains(warning));
  CHECK(warnings_for_one_op(platform, op).empty());
}

}  // namespace

TEST_CASE("op time of a direct convolution comes from its own grid, keyed by the GEMM of the same work") {
  // The GEMM grid says 10 GFLOP/s for this shape, the direct convolutions' grid 40 and 60.
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "cal", "nodes": {"count": 1, "peak": "1Tf"},
      "network": {"bandwidth": "1GBps", "latency": "1us"},
      "calibration": {"gemm_flops": {"gemm 64x2048x27 forward": "10Gf"},
                      "conv_flops": {"gemm 64x1024x27 forward": "40Gf", "gemm 64x4096x27 forward": "60Gf"}}})");
  const Platform platform = parse_platform(doc, "p.json");
  const GemmShape mid{64, 2048, 27};
  const Op gemm = Op::compute_op("c.fwd", 0, Phase::forward, KernelClass::gemm, mid.flops(), 0, 2, mid);
  Op direct = gemm;
  direct.kernel = KernelClass::conv;
  // 2·64·2048·27 FLOP at 10 GFLOP/s (the GEMM) and at the interpolated 50 GFLOP/s (direct)
  CHECK(op_time_s(platform, gemm, 0) == Approx(mid.flops() / 10e9).epsilon(kRounding));
  CHECK(op_time_s(platform, direct, 0) == Approx(mid.flops() / 50e9).epsilon(kRounding));
  check_grid_kept_and_missed(platform, &Platform::measured_conv_flops, direct, "c.fwd (conv)");
}

TEST_CASE("op time of a Winograd convolution comes from its own grid, apart from the direct one") {
  // Direct at 40 GFLOP/s, Winograd at 80 and 120 GFLOP/s (of the direct work) around the shape.
  nlohmann::json doc = nlohmann::json::parse(R"({"name": "cal", "nodes": {"count": 1, "peak": "1Tf"},
      "network": {"bandwidth": "1GBps", "latency": "1us"},
      "calibration": {"gemm_flops": {"gemm 64x2048x27 forward": "10Gf"},
                      "conv_flops": {"gemm 64x2048x27 forward": "40Gf"},
                      "winograd_flops": {"gemm 64x1024x27 forward": "80Gf", "gemm 64x4096x27 forward": "120Gf"}}})");
  const Platform platform = parse_platform(doc, "p.json");
  const GemmShape mid{64, 2048, 27};
  Op direct = Op::compute_op("c.fwd", 0, Phase::forward, KernelClass::conv, mid.flops(), 0, 2, mid);
  Op winograd = direct;
  winograd.kernel = KernelClass::winograd;
  // 2·64·2048·27 FLOP at 40 GFLOP/s (direct) and at the interpolated 100 GFLOP/s (Winograd)
  CHECK(op_time_s(platform, direct, 0) == Approx(mid.flops() / 40e9).epsilon(kRounding));
  CHECK(op_time_s(platform, winograd, 0) == Approx(mid.flops() / 100e9).epsilon(kRounding));
  check_grid_kept_and_missed(platform, &Platform::measured_winograd_flops, winograd, "c.fwd (winograd)");
}
