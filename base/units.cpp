#include "base/units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace cnnpar {
namespace {

struct Suffix {
  std::string_view text;
  double factor;
};

// Longest suffixes first so "ms" is not read as "m" + garbage.
constexpr std::array kTimeSuffixes = {
    Suffix{"ps", 1e-12}, Suffix{"ns", 1e-9}, Suffix{"us", 1e-6}, Suffix{"ms", 1e-3},
    Suffix{"s", 1.0},    Suffix{"m", 60.0},  Suffix{"h", 3600.0}, Suffix{"d", 86400.0},
    Suffix{"w", 604800.0}};

constexpr std::array kDecimalPrefixes = {Suffix{"", 1.0},   Suffix{"k", 1e3},  Suffix{"K", 1e3},
                                         Suffix{"M", 1e6},  Suffix{"G", 1e9},  Suffix{"T", 1e12},
                                         Suffix{"P", 1e15}, Suffix{"E", 1e18}};
constexpr std::array kBinaryPrefixes = {Suffix{"Ki", 1024.0}, Suffix{"Mi", 1048576.0},
                                        Suffix{"Gi", 1073741824.0}, Suffix{"Ti", 1099511627776.0}};

// Finds `unit_text` == prefix + base among the prefixes; returns the factor or 0.
double prefixed_factor(std::string_view unit_text, std::string_view base, bool allow_binary) {
  if (unit_text.size() < base.size() || unit_text.substr(unit_text.size() - base.size()) != base)
    return 0;
  const std::string_view prefix = unit_text.substr(0, unit_text.size() - base.size());
  for (const auto& p : kDecimalPrefixes)
    if (p.text == prefix) return p.factor;
  if (allow_binary)
    for (const auto& p : kBinaryPrefixes)
      if (p.text == prefix) return p.factor;
  return 0;
}

double unit_factor(std::string_view unit_text, Unit unit) {
  switch (unit) {
    case Unit::time_s:
      for (const auto& s : kTimeSuffixes)
        if (s.text == unit_text) return s.factor;
      return 0;
    case Unit::bandwidth_Bps: {
      if (double f = prefixed_factor(unit_text, "Bps", true); f > 0) return f;
      if (double f = prefixed_factor(unit_text, "bps", true); f > 0) return f / 8.0;
      return 0;
    }
    case Unit::flop_rate: {
      if (double f = prefixed_factor(unit_text, "flops", false); f > 0) return f;
      if (double f = prefixed_factor(unit_text, "f", false); f > 0) return f;
      return 0;
    }
    case Unit::frequency_hz:
      return prefixed_factor(unit_text, "Hz", false);
    case Unit::size_bytes: {
      if (double f = prefixed_factor(unit_text, "B", true); f > 0) return f;
      if (double f = prefixed_factor(unit_text, "b", true); f > 0) return f / 8.0;
      return 0;
    }
  }
  return 0;
}

struct QuantityRange {
  double smallest;  ///< smallest non-zero value, base units
  double largest;   ///< base units
  const char* text; ///< the range as a user writes it
};

// Far beyond any machine, yet small enough that times, volumes and their products stay finite.
QuantityRange plausible_range(Unit unit) {
  switch (unit) {
    case Unit::bandwidth_Bps: return {1.0, 1e18, "1Bps to 1EBps"};
    case Unit::time_s: return {1e-15, 1e9, "1 fs to 1e9 s"};
    case Unit::flop_rate: return {1e3, 1e21, "1kf to 1e21 flop/s"};
    case Unit::frequency_hz: return {1.0, 1e15, "1Hz to 1e15 Hz"};
    case Unit::size_bytes: return {1.0, 1e18, "1B to 1EB"};
  }
  return {0, 0, ""};
}

}  // namespace

double check_quantity(double value, Unit unit) {
  if (value == 0) return value;  // callers decide whether zero is allowed
  const QuantityRange range = plausible_range(unit);
  if (!std::isfinite(value) || std::fabs(value) < range.smallest || std::fabs(value) > range.largest)
    throw std::invalid_argument(fmt::format("{} is outside the plausible range {} (after the unit)",
                                            std::isfinite(value) ? fmt::format("{:g}", value) : std::string("an infinite value"),
                                            range.text));
  return value;
}

std::string unit_example(Unit unit) {
  switch (unit) {
    case Unit::bandwidth_Bps: return "a bandwidth like \"10Gbps\" or \"1.25GBps\"";
    case Unit::time_s: return "a time like \"1.5us\" or \"2ms\"";
    case Unit::flop_rate: return "a FLOP rate like \"1.2Tf\" or \"170Gf\"";
    case Unit::frequency_hz: return "a frequency like \"2.3GHz\"";
    case Unit::size_bytes: return "a size like \"25MiB\" or \"4kB\"";
  }
  return "a quantity";
}

double parse_quantity(std::string_view text, Unit unit, bool allow_bare_number) {
  std::size_t begin = 0, end = text.size();
  while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) ++begin;
  while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) --end;
  const std::string_view trimmed = text.substr(begin, end - begin);
  if (trimmed.empty()) throw std::invalid_argument("expected " + unit_example(unit) + ", got an empty string");

  double number = 0;
  const auto [rest, error] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), number);
  if (error != std::errc() || !std::isfinite(number))
    throw std::invalid_argument("expected " + unit_example(unit) + ": no number at the start");
  std::string_view unit_text(rest, std::size_t(trimmed.data() + trimmed.size() - rest));
  while (!unit_text.empty() && unit_text.front() == ' ') unit_text.remove_prefix(1);
  if (unit_text.empty()) {
    if (allow_bare_number) return check_quantity(number, unit);
    throw std::invalid_argument("expected " + unit_example(unit) + ": the unit is missing");
  }
  const double factor = unit_factor(unit_text, unit);
  if (factor <= 0)
    throw std::invalid_argument(fmt::format("expected {}: unknown unit \"{}\"", unit_example(unit), unit_text));
  // A non-zero number whose product underflows to 0 ("1e-320ps") is tiny, not zero.
  const double value = number * factor;
  if (value == 0 && number != 0)
    throw std::invalid_argument(fmt::format("{} is below the plausible range {} (after the unit)", trimmed,
                                            plausible_range(unit).text));
  return check_quantity(value, unit);
}

std::string format_seconds(double seconds) {
  const double magnitude = std::fabs(seconds);
  if (magnitude == 0) return "0 s";
  if (magnitude >= 1) return fmt::format("{:.3f} s", seconds);
  if (magnitude >= 1e-3) return fmt::format("{:.3f} ms", seconds * 1e3);
  if (magnitude >= 1e-6) return fmt::format("{:.3f} us", seconds * 1e6);
  return fmt::format("{:.3f} ns", seconds * 1e9);
}

std::string format_remaining(double seconds) {
  if (!(seconds > 0)) return "0 s";
  if (seconds < 59.5) return fmt::format("{:.0f} s", seconds);
  const long long minutes = std::llround(seconds / 60);
  if (minutes < 60) return fmt::format("{} min", minutes);
  return fmt::format("{} h {} min", minutes / 60, minutes % 60);
}

TimeUnit time_unit_for(double largest_seconds) {
  const double magnitude = std::fabs(largest_seconds);
  if (magnitude >= 1 || magnitude == 0) return {"s", 1};
  if (magnitude >= 1e-3) return {"ms", 1e3};
  if (magnitude >= 1e-6) return {"us", 1e6};
  return {"ns", 1e9};
}

std::string format_bytes(double bytes) {
  static constexpr std::array<const char*, 5> kNames = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t index = 0;
  while (std::fabs(bytes) >= 1024 && index + 1 < kNames.size()) {
    bytes /= 1024;
    ++index;
  }
  return index == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, kNames[index]);
}

}  // namespace cnnpar
