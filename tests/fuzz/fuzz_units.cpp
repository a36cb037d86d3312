// Unit strings (parse_quantity): the first byte selects the Unit and whether a bare number
// is allowed; the rest is the text. std::invalid_argument is its documented error.
#include <stdexcept>
#include <string_view>

#include "base/units.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  if (size == 0) return 0;
  constexpr Unit kUnits[] = {Unit::bandwidth_Bps, Unit::time_s, Unit::flop_rate, Unit::frequency_hz, Unit::size_bytes};
  const Unit unit = kUnits[data[0] % std::size(kUnits)];
  const bool allow_bare = (data[0] / std::size(kUnits)) % 2 == 1;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const double value = parse_quantity(text, unit, allow_bare);
    // A quantity must be a usable number after the unit is applied.
    FUZZ_REQUIRE(std::isfinite(value), std::string(text));
    // ... and not a non-zero number that underflowed to 0 ("1e-320ps").
    const std::string copy(text);
    FUZZ_REQUIRE(value != 0 || std::strtod(copy.c_str(), nullptr) == 0, copy);
    format_seconds(value);
    format_bytes(value);
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
