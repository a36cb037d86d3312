// Marques, Falcao & Alexandre (2018) closed forms (workload/strategies/marques.hpp) against values worked out
// by hand: Eq. 1 workload shares, the apportionment of output maps, share checks and Eq. 2.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "workload/strategies/marques.hpp"

using namespace cnnpar;

namespace {

// Eq. 1 divides doubles by doubles: a few ulps of rounding, nothing more.
constexpr double kShareTol = 1e-12;

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

}  // namespace

TEST_CASE("Marques Eq. 1: shares are inversely proportional to the probe times", "[marques]") {
  // t = (2, 1, 4) s: max(t) = 4, max/t = (2, 4, 1), sum 7 -> w = (2/7, 4/7, 1/7).
  const std::vector<double> w = probe_shares({2.0, 1.0, 4.0});
  REQUIRE(w.size() == 3);
  CHECK(w[0] == Approx(2.0 / 7).epsilon(kShareTol));
  CHECK(w[1] == Approx(4.0 / 7).epsilon(kShareTol));
  CHECK(w[2] == Approx(1.0 / 7).epsilon(kShareTol));
  // Equal times: every rank gets 1/P.
  for (double share : probe_shares({0.3, 0.3, 0.3, 0.3})) CHECK(share == Approx(0.25).epsilon(kShareTol));
  // One rank alone takes everything.
  CHECK(probe_shares({5.0}) == std::vector<double>{1.0});
}

TEST_CASE("Marques Eq. 1: a probe time that is not > 0 is bad input naming its index", "[marques]") {
  const InputError zero = input_error_of([] { probe_shares({1.0, 0.0}, "probe.json"); });
  CHECK(zero.file() == "probe.json");
  CHECK(zero.json_path() == "/shares/1");
  CHECK(zero.value() == "0");
  const InputError negative = input_error_of([] { probe_shares({-2.0, 1.0}); });
  CHECK(negative.json_path() == "/shares/0");
  CHECK(negative.value() == "-2");
  CHECK(input_error_of([] { probe_shares({}); }).json_path() == "/shares");
}

TEST_CASE("Marques apportion_kernels: floors, then the remainder to the largest fractional parts", "[marques]") {
  using Counts = std::vector<std::int64_t>;
  // 500 maps over (0.5, 0.3, 0.2): exactly 250, 150, 100; nothing left over.
  CHECK(apportion_kernels(500, {0.5, 0.3, 0.2}) == Counts{250, 150, 100});
  // 11 maps over (0.45, 0.35, 0.2): 4.95, 3.85, 2.2 -> floors 4, 3, 2 (9); the 2 left go to the
  // largest fractions .95 (rank 0) and .85 (rank 1) -> 5, 4, 2.
  CHECK(apportion_kernels(11, {0.45, 0.35, 0.2}) == Counts{5, 4, 2});
  // 7 maps over (0.5, 0.3, 0.2): 3.5, 2.1, 1.4 -> floors 3, 2, 1 (6); the 1 left goes to .5 -> 4, 2, 1.
  CHECK(apportion_kernels(7, {0.5, 0.3, 0.2}) == Counts{4, 2, 1});
  // Ties go to the lower rank: 3 over (0.5, 0.5) is 1.5 each -> 2, 1; 5 over thirds is 1.67
  // each -> floors 1, 1, 1, the 2 left to ranks 0 and 1 -> 2, 2, 1.
  CHECK(apportion_kernels(3, {0.5, 0.5}) == Counts{2, 1});
  CHECK(apportion_kernels(5, {1.0 / 3, 1.0 / 3, 1.0 / 3}) == Counts{2, 2, 1});
  // A share worth less than a map may get none: 4 over (0.94, 0.02, 0.02, 0.02) is 3.76, 0.08,
  // 0.08, 0.08 -> floors 3, 0, 0, 0; the 1 left goes to .76 -> 4, 0, 0, 0.
  CHECK(apportion_kernels(4, {0.94, 0.02, 0.02, 0.02}) == Counts{4, 0, 0, 0});
  // A share of exactly 0 gets none: 3 over (0.5, 0.5, 0) -> 2, 1, 0.
  CHECK(apportion_kernels(3, {0.5, 0.5, 0.0}) == Counts{2, 1, 0});
}

TEST_CASE("Marques check_shares rejects negative shares and sums other than 1", "[marques]") {
  CHECK_NOTHROW(check_shares({0.5, 0.3, 0.2}, "s.json", "/shares"));
  CHECK_NOTHROW(check_shares({1.0, 0.0}, "s.json", "/shares"));
  const InputError negative = input_error_of([] { check_shares({0.5, -0.1, 0.6}, "s.json", "/shares"); });
  CHECK(negative.file() == "s.json");
  CHECK(negative.json_path() == "/shares/1");
  CHECK(negative.value() == "-0.1");
  // 0.5 + 0.4 = 0.9: the sum is named on the list itself with every share as the value.
  const InputError sum = input_error_of([] { check_shares({0.5, 0.4}, "s.json", "/shares"); });
  CHECK(sum.json_path() == "/shares");
  CHECK(sum.value() == "0.5,0.4");
  // Within 1e-6 of 1 is accepted, 1e-5 off is not.
  CHECK_NOTHROW(check_shares({0.5, 0.5 + 5e-7}, "s.json", "/shares"));
  CHECK_THROWS_AS(check_shares({0.5, 0.5 + 1e-5}, "s.json", "/shares"), InputError);
  CHECK(input_error_of([] { check_shares({}, "s.json", "/shares"); }).json_path() == "/shares");
}

// Eq. 2 per conv layer: (in_h·in_w·inCh + out_h·out_w·numK)·batch + kh·kw·numK·inCh elements.
// The four networks: input 3x32x32; C1 5x5, no pad, stride 1 -> 28x28 with M1 maps; 2x2/2 pool
// -> 14x14; C2 5x5 over M1 channels -> 10x10 with M2 maps. So
//   C1 = (32·32·3 + 28·28·M1)·batch + 25·M1·3 = (3072 + 784·M1)·batch + 75·M1
//   C2 = (14·14·M1 + 10·10·M2)·batch + 25·M2·M1 = (196·M1 + 100·M2)·batch + 25·M1·M2
TEST_CASE("Marques Eq. 2: upload volume of the four Marques networks at batch 64 and 1024", "[marques]") {
  struct Case {
    const char* network;
    std::int64_t batch;
    double c1, c2;  // elements, by hand below
  };
  const Case cases[] = {
      // 50:500  C1: 3072 + 39200 = 42272; 75·50 = 3750. C2: 9800 + 50000 = 59800; 25·50·500 = 625000.
      //   b=64:   42272·64 + 3750 = 2709158;     59800·64 + 625000 = 4452200
      //   b=1024: 42272·1024 + 3750 = 43290278;  59800·1024 + 625000 = 61860200
      {"marques-50-500", 64, 2709158, 4452200},
      {"marques-50-500", 1024, 43290278, 61860200},
      // 150:800  C1: 3072 + 117600 = 120672; 75·150 = 11250. C2: 29400 + 80000 = 109400; 25·150·800 = 3000000.
      //   b=64:   120672·64 + 11250 = 7734258;      109400·64 + 3000000 = 10001600
      //   b=1024: 120672·1024 + 11250 = 123579378;  109400·1024 + 3000000 = 115025600
      {"marques-150-800", 64, 7734258, 10001600},
      {"marques-150-800", 1024, 123579378, 115025600},
      // 300:1000  C1: 3072 + 235200 = 238272; 75·300 = 22500. C2: 58800 + 100000 = 158800; 25·300·1000 = 7500000.
      //   b=64:   238272·64 + 22500 = 15271908;     158800·64 + 7500000 = 17663200
      //   b=1024: 238272·1024 + 22500 = 244013028;  158800·1024 + 7500000 = 170111200
      {"marques-300-1000", 64, 15271908, 17663200},
      {"marques-300-1000", 1024, 244013028, 170111200},
      // 500:1500  C1: 3072 + 392000 = 395072; 75·500 = 37500. C2: 98000 + 150000 = 248000; 25·500·1500 = 18750000.
      //   b=64:   395072·64 + 37500 = 25322108;     248000·64 + 18750000 = 34622000
      //   b=1024: 395072·1024 + 37500 = 404591228;  248000·1024 + 18750000 = 272702000
      {"marques-500-1500", 64, 25322108, 34622000},
      {"marques-500-1500", 1024, 404591228, 272702000},
  };
  for (const Case& c : cases) {
    CAPTURE(c.network, c.batch);
    const Network network = load_network(c.network);
    const int c1 = network.find("c1");
    const int c2 = network.find("c2");
    REQUIRE(c1 >= 0);
    REQUIRE(c2 >= 0);
    // Integers below 2^53: exact in double, so the comparison is exact.
    CHECK(upload_elements(network.layers[std::size_t(c1)], c.batch) == c.c1);
    CHECK(upload_elements(network.layers[std::size_t(c2)], c.batch) == c.c2);
    // The network sum counts the two conv layers and nothing else (pool, lrn, fc carry no term).
    CHECK(upload_elements(network, c.batch) == c.c1 + c.c2);
  }
}
