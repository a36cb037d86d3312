// BPT-CNN's closed forms (workload/strategies/bpt_cnn.hpp, Chen et al., TPDS, Section 3.3) against
// values worked out by hand: IDPA (Eq. 2-5, Algorithm 3.1) and its conventions, UDPA, Eq. 6,
// SGWU (Eq. 7-8), AGWU (Eq. 9-10, Algorithm 3.2), Eq. 11 and every bad input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "workload/strategies/bpt_cnn.hpp"

using namespace cnnpar;
using Counts = std::vector<std::int64_t>;

namespace {

// Eq. 7 and Eq. 9 divide doubles (and Eq. 9 takes exp): a few ulps, nothing more.
constexpr double kRatioTol = 1e-12;
// Eq. 8 sums differences of seconds; Eq. 11 multiplies bytes: a few ulps.
constexpr double kSecondsTol = 1e-12;
constexpr double kBytesTol = 1e-15;
constexpr double kInf = std::numeric_limits<double>::infinity();

/** The InputError `call` throws; fails the test when it throws none. */
template <typename Call>
InputError input_error_of(Call call) {
  try {
    call();
  } catch (const InputError& error) {
    return error;
  }
  FAIL("no InputError thrown");
  return InputError("", "", "", "");
}

std::int64_t sum(const Counts& counts) {
  std::int64_t total = 0;
  for (std::int64_t n : counts) total += n;
  return total;
}

}  // namespace

TEST_CASE("bpt_cnn Eq. 2: the first increment split by nominal speed, the last worker the rest", "[bpt][idpa]") {
  // N = 1000, A = 4: floor(N/A) = 250 samples; mu = (1, 2, 3, 4), sum(mu) = 10.
  const Counts n = bpt::idpa_first_increment(1000, 4, {1.0, 2.0, 3.0, 4.0});
  REQUIRE(n.size() == 4);
  CHECK(n[0] == 25);   // floor(250 * 1/10) = floor(25) = 25
  CHECK(n[1] == 50);   // floor(250 * 2/10) = floor(50) = 50
  CHECK(n[2] == 75);   // floor(250 * 3/10) = floor(75) = 75
  CHECK(n[3] == 100);  // the rest: 250 - (25 + 50 + 75) = 100
  // Equal speeds, N = 1000, A = 4: floor(250/3) = floor(83.33) = 83 twice; the last 250 - 166 = 84.
  CHECK(bpt::idpa_first_increment(1000, 4, {2.5, 2.5, 2.5}) == Counts{83, 83, 84});
  // One worker takes the whole increment: floor(1000/3) = 333.
  CHECK(bpt::idpa_first_increment(1000, 3, {1.7}) == Counts{333});
}

TEST_CASE("bpt_cnn Eq. 3-5: increment a = 2 from measured per-sample times", "[bpt][idpa]") {
  // N = 1000, A = 4: floor(N/A) = 250. Increment 1 (Eq. 2, equal speeds) gave (83, 83, 84).
  // t̄ = (0.02, 0.04, 0.03) s/sample, m = 3: mean(t̄) = 0.09 / 3 = 0.03 s.
  // Eq. 3: T_2 = 250 * 2 * 0.03 / 3 = 5 s.
  // Eq. 4: n'_1 = 5 / 0.02 = 250, n'_2 = 5 / 0.04 = 125 (n'_3 = 5 / 0.03 is not used: the last takes the rest).
  const Counts n = bpt::idpa_next_increment(1000, 4, 2, {0.02, 0.04, 0.03}, {83, 83, 84});
  REQUIRE(n.size() == 3);
  CHECK(n[0] == 167);  // Eq. 5: floor(250) - 83 = 167
  CHECK(n[1] == 42);   // Eq. 5: floor(125) - 83 = 42
  CHECK(n[2] == 41);   // Eq. 5, j = m: 250 - (167 + 42) = 41
}

TEST_CASE("bpt_cnn Eq. 4-5: a quotient meant to be an integer is not floored one sample short", "[bpt][idpa]") {
  // N = 30, A = 3: floor(N/A) = 10; two identical workers holding (10, 10) before a = 3, t̄ = 0.03 s each.
  // Eq. 3: T_3 = 10 * 3 * 0.03 / 2 = 0.45 s; Eq. 4: n'_1 = 0.45 / 0.03 = 15 (doubles give 14.999999999999998).
  // Eq. 5: 15 - 10 = 5; the last 10 - 5 = 5. A plain floor would give (4, 6) to identical workers.
  CHECK(bpt::idpa_next_increment(30, 3, 3, {0.03, 0.03}, {10, 10}) == Counts{5, 5});
}

TEST_CASE("bpt_cnn Algorithm 3.1: every increment of a small case, cumulative", "[bpt][idpa]") {
  // N = 103, A = 4: floor(N/A) = 25 (the 103 - 100 = 3 left over are never allocated).
  // mu = (1, 3); t̄ = (0.3, 0.1) s/sample for every a >= 2, mean(t̄) = 0.2 s, m = 2.
  const std::vector<Counts> held = bpt::idpa_allocation(103, 4, {1.0, 3.0}, {0.3, 0.1});
  REQUIRE(held.size() == 4);
  // a = 1 (Eq. 2): floor(25 * 1/4) = floor(6.25) = 6; the last 25 - 6 = 19.
  CHECK(held[0] == Counts{6, 19});
  // a = 2: T_2 = 25*2*0.2/2 = 5 s; n'_1 = 5/0.3 = 16.67 -> 16; n_1 = 16 - 6 = 10; n_2 = 25 - 10 = 15.
  // Cumulative (6 + 10, 19 + 15).
  CHECK(held[1] == Counts{16, 34});
  // a = 3: T_3 = 25*3*0.2/2 = 7.5 s; n'_1 = 7.5/0.3 = 25; n_1 = 25 - 16 = 9; n_2 = 25 - 9 = 16.
  CHECK(held[2] == Counts{25, 50});
  // a = 4: T_4 = 25*4*0.2/2 = 10 s; n'_1 = 10/0.3 = 33.3 -> 33; n_1 = 33 - 25 = 8; n_2 = 25 - 8 = 17.
  CHECK(held[3] == Counts{33, 67});
  // Each increment adds floor(N/A) = 25: rows sum to 25, 50, 75, 100 = A * floor(N/A).
  CHECK(sum(held[0]) == 25);
  CHECK(sum(held[1]) == 50);
  CHECK(sum(held[2]) == 75);
  CHECK(sum(held[3]) == 100);
  // A = 1: only Eq. 2, floor(103/1) = 103: floor(103 * 1/4) = floor(25.75) = 25, the last 103 - 25 = 78.
  CHECK(bpt::idpa_allocation(103, 1, {1.0, 3.0}, {0.3, 0.1}) == std::vector<Counts>{{25, 78}});
}

TEST_CASE("bpt_cnn Eq. 5 clamp: a worker already holding more than n'_j gets 0, the last the rest", "[bpt][idpa]") {
  // N = 400, A = 4: floor(N/A) = 100. Nominal speeds (8, 1, 1) overrate worker 1: Eq. 2 gives
  // floor(100*8/10) = 80, floor(100*1/10) = 10, the last 100 - 90 = 10.
  CHECK(bpt::idpa_first_increment(400, 4, {8.0, 1.0, 1.0}) == Counts{80, 10, 10});
  // Measured t̄ = (0.1, 0.1, 0.1) s: mean 0.1; T_2 = 100*2*0.1/3 = 6.67 s; n'_j = 6.67/0.1 = 66.7 -> 66.
  const Counts n = bpt::idpa_next_increment(400, 4, 2, {0.1, 0.1, 0.1}, {80, 10, 10});
  CHECK(n[0] == 0);   // Eq. 5: 66 - 80 = -14, clamped at 0 (no sample is taken back)
  CHECK(n[1] == 56);  // Eq. 5: 66 - 10 = 56
  CHECK(n[2] == 44);  // the rest: 100 - (0 + 56) = 44
}

TEST_CASE("bpt_cnn Eq. 5 over-subscribed: the first m-1 requests scaled to floor(N/A), the last never negative",
          "[bpt][idpa]") {
  // N = 400, A = 4: floor(N/A) = 100; holding (40, 26, 34) before a = 2; t̄ = (1, 1, 4) s: mean 2 s.
  // Eq. 3: T_2 = 100*2*2/3 = 133.3 s; Eq. 4: n'_1 = n'_2 = 133.3 -> 133.
  // Eq. 5 requests: 133 - 40 = 93; 133 - 26 = 107, capped at one increment, 100. The last's rest
  // 100 - 193 = -93 would be negative, so the requests are scaled by 100/193:
  const Counts n = bpt::idpa_next_increment(400, 4, 2, {1.0, 1.0, 4.0}, {40, 26, 34});
  CHECK(n[0] == 48);  // floor(93 * 100 / 193) = floor(48.19) = 48
  CHECK(n[1] == 51);  // floor(100 * 100 / 193) = floor(51.81) = 51
  CHECK(n[2] == 1);   // the rest: 100 - (48 + 51) = 1 (rounding)
}

TEST_CASE("bpt_cnn UDPA: uniform, the first N % m workers one more", "[bpt][udpa]") {
  // N = 10, m = 3: 10 / 3 = 3 remainder 1: worker 0 gets 3 + 1 = 4, the others 3.
  CHECK(bpt::udpa_allocation(10, 3) == Counts{4, 3, 3});
  // N = 11, m = 4: 11 / 4 = 2 remainder 3: workers 0-2 get 3, worker 3 gets 2.
  CHECK(bpt::udpa_allocation(11, 4) == Counts{3, 3, 3, 2});
  // N = 12, m = 3: no remainder, 4 each.
  CHECK(bpt::udpa_allocation(12, 3) == Counts{4, 4, 4});
}

TEST_CASE("bpt_cnn Eq. 6: total iterations K' = A + floor(K - (A+1)/2)", "[bpt][eq6]") {
  // K = 100, A = 4: ΔK = floor(100 - 5/2) = floor(97.5) = 97; K' = 4 + 97 = 101 = 100 + 4/2 - 1.
  CHECK(bpt::idpa_total_iterations(100, 4) == 101);
  // K = 100, A = 5 (odd): ΔK = floor(100 - 6/2) = 97; K' = 5 + 97 = 102 = 100 + ceil(5/2) - 1 (A/2 rounds up).
  CHECK(bpt::idpa_total_iterations(100, 5) == 102);
  // K = 100, A = 3: ΔK = floor(100 - 2) = 98; K' = 3 + 98 = 101 = 100 + ceil(3/2) - 1.
  CHECK(bpt::idpa_total_iterations(100, 3) == 101);
  // K = 100, A = 1 (everything at once): ΔK = floor(100 - 1) = 99; K' = 1 + 99 = 100 = K.
  CHECK(bpt::idpa_total_iterations(100, 1) == 100);
}

TEST_CASE("bpt_cnn Eq. 7: merge weights Q_j / sum(Q), all zero gives 1/m", "[bpt][sgwu]") {
  // Q = (0.9, 0.6, 0.3): sum 1.8 -> 0.9/1.8 = 0.5, 0.6/1.8 = 1/3, 0.3/1.8 = 1/6.
  const std::vector<double> w = bpt::sgwu_weights({0.9, 0.6, 0.3});
  REQUIRE(w.size() == 3);
  CHECK(w[0] == Approx(0.5).epsilon(kRatioTol));
  CHECK(w[1] == Approx(1.0 / 3).epsilon(kRatioTol));
  CHECK(w[2] == Approx(1.0 / 6).epsilon(kRatioTol));
  // Every Q = 0 (convention): nothing tells the workers apart, 1/4 each.
  for (double weight : bpt::sgwu_weights({0.0, 0.0, 0.0, 0.0})) CHECK(weight == Approx(0.25).epsilon(kRatioTol));
  // One worker with Q = 0.7: 0.7 / 0.7 = 1.
  CHECK(bpt::sgwu_weights({0.7}) == std::vector<double>{1.0});
}

TEST_CASE("bpt_cnn Eq. 7: an accuracy outside [0, 1] is a broken assumption", "[bpt][sgwu]") {
  CHECK_THROWS_AS(bpt::sgwu_weights({0.5, 1.5}), InternalError);
  CHECK_THROWS_AS(bpt::sgwu_weights({-0.1, 0.5}), InternalError);
  CHECK_THROWS_AS(bpt::sgwu_weights({std::nan("")}), InternalError);
  CHECK_THROWS_AS(bpt::sgwu_weights({}), InternalError);
}

TEST_CASE("bpt_cnn Eq. 8: SGWU waiting time over a 2x3 table", "[bpt][sgwu]") {
  // Iteration 1: t = (1, 2, 4) s, max 4: (4-1) + (4-2) + (4-4) = 3 + 2 + 0 = 5 s.
  // Iteration 2: t = (3, 3, 1.5) s, max 3: 0 + 0 + 1.5 = 1.5 s. Total 6.5 s.
  CHECK(bpt::sgwu_waiting_s({{1.0, 2.0, 4.0}, {3.0, 3.0, 1.5}}) == Approx(6.5).epsilon(kSecondsTol));
  // Equal times wait nothing; no iterations wait nothing.
  CHECK(bpt::sgwu_waiting_s({{2.0, 2.0}}) == 0.0);
  CHECK(bpt::sgwu_waiting_s({}) == 0.0);
}

TEST_CASE("bpt_cnn Eq. 9: attenuation along a scripted push order of 3 workers", "[bpt][agwu]") {
  // Workers W0, W1, W2 all start from global version 0; each push makes version i = (i-1) + 1 and
  // the pusher then trains from it. e = 2.718281828, e^0.5 = 1.648721271, e^(2/3) = 1.947734041.
  // 1) W0 pushes: k = 0, i-1 = 0, others (W1, W2) = (0, 0). 0/0 -> exponent 1 for all:
  //    gamma = e / (e + e) = 0.5. Global -> v1; W0 now trains from 1.
  CHECK(bpt::agwu_attenuation(0, 0, {0, 0}) == Approx(0.5).epsilon(kRatioTol));
  // 2) W1 pushes: k = 0, i-1 = 1, others (W0, W2) = (1, 0):
  //    gamma = e^(0/1) / (e^(1/1) + e^(0/1)) = 1 / (2.718281828 + 1) = 0.268941421. Global -> v2; W1 from 2.
  CHECK(bpt::agwu_attenuation(0, 1, {1, 0}) == Approx(0.2689414213699951).epsilon(kRatioTol));
  // 3) W0 pushes: k = 1, i-1 = 2, others (W1, W2) = (2, 0):
  //    gamma = e^(1/2) / (e^(2/2) + e^(0/2)) = 1.648721271 / 3.718281828 = 0.443409442. Global -> v3; W0 from 3.
  CHECK(bpt::agwu_attenuation(1, 2, {2, 0}) == Approx(0.443409441985037).epsilon(kRatioTol));
  // 4) W2 (the straggler) pushes: k = 0, i-1 = 3, others (W0, W1) = (3, 2):
  //    gamma = e^0 / (e^(3/3) + e^(2/3)) = 1 / (2.718281828 + 1.947734041) = 1 / 4.666015869 = 0.214315602.
  CHECK(bpt::agwu_attenuation(0, 3, {3, 2}) == Approx(0.21431560199648808).epsilon(kRatioTol));
  // 5) W1 pushes: k = 2, i-1 = 4, others (W0, W2) = (3, 4): e^(3/4) = 2.117000017:
  //    gamma = e^(2/4) / (e^(3/4) + e^(4/4)) = 1.648721271 / 4.835281845 = 0.340977284.
  CHECK(bpt::agwu_attenuation(2, 4, {3, 4}) == Approx(0.340977283957203).epsilon(kRatioTol));
}

TEST_CASE("bpt_cnn Eq. 9 conventions: first merge and a lone worker", "[bpt][agwu]") {
  // latest = 0 with 4 workers: every exponent 1, gamma = e / (3e) = 1/3.
  CHECK(bpt::agwu_attenuation(0, 0, {0, 0, 0}) == Approx(1.0 / 3).epsilon(kRatioTol));
  // One worker (empty sum over the others): gamma = 1, at the first merge and later.
  CHECK(bpt::agwu_attenuation(0, 0, {}) == 1.0);
  CHECK(bpt::agwu_attenuation(6, 7, {}) == 1.0);
  // A version newer than the latest is a broken assumption.
  CHECK_THROWS_AS(bpt::agwu_attenuation(3, 2, {0}), InternalError);
  CHECK_THROWS_AS(bpt::agwu_attenuation(0, 2, {3}), InternalError);
}

TEST_CASE("bpt_cnn Eq. 10: global += gamma * Q * increment", "[bpt][agwu]") {
  // gamma = 0.5, Q = 0.5: scale 0.25. (1 + 0.25*4, 2 + 0.25*(-8), 3 + 0.25*0.5) = (2, 0, 3.125), exact in float.
  std::vector<float> global{1.0f, 2.0f, 3.0f};
  const std::vector<float> increment{4.0f, -8.0f, 0.5f};
  bpt::agwu_merge(global, increment, 0.5, 0.5);
  CHECK(global == std::vector<float>{2.0f, 0.0f, 3.125f});
  // Q = 0 leaves the global weights unchanged: 2 + 0 * 4 = 2, ...
  bpt::agwu_merge(global, increment, 0.5, 0.0);
  CHECK(global == std::vector<float>{2.0f, 0.0f, 3.125f});
}

TEST_CASE("bpt_cnn Eq. 7 on increments: global += sum_j w_j * increment_j", "[bpt][sgwu]") {
  // Base W = (1, 1); increments a = (2, 4), b = (-4, 8); w = (0.75, 0.25).
  // Element 0: 1 + 0.75*2 + 0.25*(-4) = 1 + 1.5 - 1 = 1.5; element 1: 1 + 0.75*4 + 0.25*8 = 1 + 3 + 2 = 6.
  // Eq. 7 on whole sets agrees: W_a = (3, 5), W_b = (-3, 9); 0.75*(3, 5) + 0.25*(-3, 9) = (1.5, 6).
  std::vector<float> global{1.0f, 1.0f};
  const std::vector<float> a{2.0f, 4.0f}, b{-4.0f, 8.0f};
  bpt::sgwu_merge(global, {std::span<const float>(a), std::span<const float>(b)}, {0.75, 0.25});
  CHECK(global == std::vector<float>{1.5f, 6.0f});
  // Weights not summing to 1 would not be Eq. 7: a broken assumption.
  CHECK_THROWS_AS(bpt::sgwu_merge(global, {std::span<const float>(a)}, {0.5}), InternalError);
}

TEST_CASE("bpt_cnn Eq. 11: parameter-server volume 2 * c_w * m * K", "[bpt][eq11]") {
  // c_w = 1000 bytes, m = 4, K = 101: 2 * 1000 * 4 * 101 = 808000 bytes.
  CHECK(bpt::ps_volume_bytes(1000.0, 4, 101) == Approx(808000.0).epsilon(kBytesTol));
  // c_w = 244 MB (61e6 float weights * 4 bytes), m = 8, K = 10: 2 * 244e6 * 8 * 10 = 3.904e10 bytes.
  CHECK(bpt::ps_volume_bytes(244e6, 8, 10) == Approx(3.904e10).epsilon(kBytesTol));
  // No iterations, no traffic.
  CHECK(bpt::ps_volume_bytes(1000.0, 4, 0) == 0.0);
}

TEST_CASE("bpt_cnn bad input: increments, workers, speeds, times and iterations name their path and value",
          "[bpt][input]") {
  // Every error comes from the command line and its message names the path and the value.
  const auto names = [](const InputError& error, const std::string& path, const std::string& value) {
    CHECK(error.file() == "command line");
    CHECK(error.json_path() == path);
    CHECK(error.value() == value);
    const std::string message = error.what();
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("(value: " + value + ")") != std::string::npos);
  };
  CHECK_THROWS_AS(bpt::idpa_first_increment(100, 0, {1.0}), InputError);
  names(input_error_of([] { bpt::idpa_first_increment(100, 0, {1.0}); }), "/increments", "0");
  names(input_error_of([] { bpt::idpa_allocation(100, -2, {1.0}, {0.1}); }), "/increments", "-2");
  // A = 4 > N = 3: more increments than samples.
  CHECK_THROWS_AS(bpt::idpa_first_increment(3, 4, {1.0, 1.0}), InputError);
  const InputError beyond = input_error_of([] { bpt::idpa_first_increment(3, 4, {1.0, 1.0}); });
  names(beyond, "/increments", "4");
  CHECK(beyond.reason().find("A beyond the data") != std::string::npos);
  // No workers.
  CHECK_THROWS_AS(bpt::udpa_allocation(10, 0), InputError);
  names(input_error_of([] { bpt::udpa_allocation(10, 0); }), "/workers", "0");
  names(input_error_of([] { bpt::idpa_first_increment(10, 2, {}); }), "/workers", "0");
  names(input_error_of([] { bpt::ps_volume_bytes(1000.0, 0, 10); }), "/workers", "0");
  // Fewer samples than workers: N = 2, m = 3.
  CHECK_THROWS_AS(bpt::udpa_allocation(2, 3), InputError);
  names(input_error_of([] { bpt::udpa_allocation(2, 3); }), "/workers", "3");
  names(input_error_of([] { bpt::idpa_first_increment(2, 1, {1.0, 1.0, 1.0}); }), "/workers", "3");
  // A speed that is not a finite number > 0.
  CHECK_THROWS_AS(bpt::idpa_first_increment(100, 2, {1.0, 0.0}), InputError);
  names(input_error_of([] { bpt::idpa_first_increment(100, 2, {1.0, 0.0}); }), "/workers/1/speed", "0");
  names(input_error_of([] { bpt::idpa_first_increment(100, 2, {-3.0, 1.0}); }), "/workers/0/speed", "-3");
  names(input_error_of([] { bpt::idpa_first_increment(100, 2, {kInf, 1.0}); }), "/workers/0/speed", "inf");
  names(input_error_of([] { bpt::idpa_allocation(100, 2, {1.0, std::nan("")}, {0.1, 0.1}); }), "/workers/1/speed",
        "nan");
  // A per-sample time that is not a finite number > 0 (checked even when A = 1 does not use it).
  CHECK_THROWS_AS(bpt::idpa_next_increment(100, 2, 2, {0.1, -0.5}, {25, 25}), InputError);
  names(input_error_of([] { bpt::idpa_next_increment(100, 2, 2, {0.1, -0.5}, {25, 25}); }),
        "/workers/1/per_sample_s", "-0.5");
  names(input_error_of([] { bpt::idpa_next_increment(100, 2, 2, {0.0, 0.5}, {25, 25}); }), "/workers/0/per_sample_s",
        "0");
  names(input_error_of([] { bpt::idpa_allocation(100, 1, {1.0, 1.0}, {0.1, kInf}); }), "/workers/1/per_sample_s",
        "inf");
  // Eq. 6: K < 1, A < 1, and A >= K (the paper assumes A < K).
  CHECK_THROWS_AS(bpt::idpa_total_iterations(0, 1), InputError);
  names(input_error_of([] { bpt::idpa_total_iterations(0, 1); }), "/iterations", "0");
  names(input_error_of([] { bpt::idpa_total_iterations(100, 0); }), "/increments", "0");
  names(input_error_of([] { bpt::idpa_total_iterations(10, 10); }), "/increments", "10");
  // Eq. 11: negative iterations.
  names(input_error_of([] { bpt::ps_volume_bytes(1000.0, 2, -1); }), "/iterations", "-1");
}

TEST_CASE("bpt_cnn Eq. 3-5: a call out of Algorithm 3.1's order is a broken assumption", "[bpt][idpa]") {
  // a = 1 is Eq. 2's; a = 5 > A = 4.
  CHECK_THROWS_AS(bpt::idpa_next_increment(400, 4, 1, {0.1, 0.1}, {0, 0}), InternalError);
  CHECK_THROWS_AS(bpt::idpa_next_increment(400, 4, 5, {0.1, 0.1}, {200, 200}), InternalError);
  // Before a = 2 the workers hold (a-1) * floor(N/A) = 100 samples, not 90.
  CHECK_THROWS_AS(bpt::idpa_next_increment(400, 4, 2, {0.1, 0.1}, {50, 40}), InternalError);
  // One allocation per worker.
  CHECK_THROWS_AS(bpt::idpa_next_increment(400, 4, 2, {0.1, 0.1}, {100}), InternalError);
}
