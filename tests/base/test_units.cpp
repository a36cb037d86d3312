#include <catch2/catch.hpp>

#include <stdexcept>

#include "base/units.hpp"

using cnnpar::format_remaining;
using cnnpar::parse_quantity;
using cnnpar::Unit;

// Relative tolerance for unit conversions: exact decimal scalings, so only rounding.
constexpr double kRelative = 1e-12;

TEST_CASE("bandwidths use SimGrid's spelling: bytes or bits per second, decimal or binary prefixes") {
  // 10 Gbit/s = 10e9 / 8 bytes/s = 1.25e9 B/s
  CHECK(parse_quantity("10Gbps", Unit::bandwidth_Bps) == Approx(1.25e9).epsilon(kRelative));
  CHECK(parse_quantity("1.25GBps", Unit::bandwidth_Bps) == Approx(1.25e9).epsilon(kRelative));
  // 100 MiB/s = 100 * 2^20 B/s
  CHECK(parse_quantity("100MiBps", Unit::bandwidth_Bps) == Approx(104857600.0).epsilon(kRelative));
  CHECK(parse_quantity("7GBps", Unit::bandwidth_Bps) == Approx(7e9).epsilon(kRelative));
}

TEST_CASE("times, FLOP rates, frequencies and sizes") {
  CHECK(parse_quantity("1.5us", Unit::time_s) == Approx(1.5e-6).epsilon(kRelative));
  CHECK(parse_quantity("2ms", Unit::time_s) == Approx(2e-3).epsilon(kRelative));
  CHECK(parse_quantity("3s", Unit::time_s) == Approx(3.0).epsilon(kRelative));
  CHECK(parse_quantity("1.2Tf", Unit::flop_rate) == Approx(1.2e12).epsilon(kRelative));
  CHECK(parse_quantity("170Gf", Unit::flop_rate) == Approx(1.7e11).epsilon(kRelative));
  CHECK(parse_quantity("2.3GHz", Unit::frequency_hz) == Approx(2.3e9).epsilon(kRelative));
  CHECK(parse_quantity("25MiB", Unit::size_bytes) == Approx(25.0 * 1048576).epsilon(kRelative));
  CHECK(parse_quantity("4kB", Unit::size_bytes) == Approx(4000.0).epsilon(kRelative));
  CHECK(parse_quantity("8b", Unit::size_bytes) == Approx(1.0).epsilon(kRelative));
}

TEST_CASE("quantities that do not parse are rejected with the reason") {
  CHECK_THROWS_AS(parse_quantity("10Gbpx", Unit::bandwidth_Bps), std::invalid_argument);
  CHECK_THROWS_AS(parse_quantity("fast", Unit::bandwidth_Bps), std::invalid_argument);
  CHECK_THROWS_AS(parse_quantity("", Unit::time_s), std::invalid_argument);
  CHECK_THROWS_AS(parse_quantity("10", Unit::time_s), std::invalid_argument);  // unit required
  CHECK(parse_quantity("10", Unit::time_s, true) == 10.0);                      // unless allowed
  CHECK_THROWS_AS(parse_quantity("1.5Gbps", Unit::time_s), std::invalid_argument);  // wrong family
  CHECK_THROWS_WITH(parse_quantity("3furlongs", Unit::time_s), Catch::Contains("unknown unit \"furlongs\""));
}

TEST_CASE("a quantity is checked after its unit is applied") {
  // 1e308 * 1e18 B/s overflows to +inf: refused, not turned into NaN rows.
  CHECK_THROWS_WITH(parse_quantity("1e308EBps", Unit::bandwidth_Bps), Catch::Contains("outside the plausible range"));
  // 1e-300 flop/s is finite but makes every time overflow (SimGrid aborted on it).
  CHECK_THROWS_WITH(parse_quantity("1e-300f", Unit::flop_rate), Catch::Contains("1kf to 1e21"));
  CHECK_THROWS_AS(parse_quantity("1e-300", Unit::time_s, true), std::invalid_argument);  // bare numbers too
  // The ends of each range are accepted: 1 EB/s = 1e18 B/s, 1 kflop/s = 1e3 flop/s, zero latency.
  CHECK(parse_quantity("1EBps", Unit::bandwidth_Bps) == Approx(1e18).epsilon(kRelative));
  CHECK(parse_quantity("1kf", Unit::flop_rate) == Approx(1e3).epsilon(kRelative));
  CHECK(parse_quantity("0us", Unit::time_s) == 0.0);
  CHECK(cnnpar::check_quantity(-5e9, Unit::bandwidth_Bps) == -5e9);  // the sign is the caller's to judge
}

TEST_CASE("a non-zero quantity that underflows to zero after its unit is refused, not taken as 0") {
  // 1e-320 * 1e-12 s and 4e-324 / 8 B round to 0 in double: they are tiny, not zero.
  CHECK_THROWS_WITH(parse_quantity("1e-320ps", Unit::time_s), Catch::Contains("below the plausible range"));
  CHECK_THROWS_WITH(parse_quantity("4e-324b", Unit::size_bytes), Catch::Contains("below the plausible range"));
}

TEST_CASE("a time left reads in seconds, minutes, then hours and minutes") {
  CHECK(format_remaining(0) == "0 s");
  CHECK(format_remaining(-3) == "0 s");
  CHECK(format_remaining(44.6) == "45 s");
  CHECK(format_remaining(59.4) == "59 s");
  CHECK(format_remaining(59.6) == "1 min");  // 59.6 s rounds to the minute, not to "60 s"
  CHECK(format_remaining(2099.2) == "35 min");  // 34.99 min
  CHECK(format_remaining(3569) == "59 min");
  CHECK(format_remaining(3600) == "1 h 0 min");
  CHECK(format_remaining(4320) == "1 h 12 min");
}
