#pragma once
// Quantities written with units in SimGrid's spelling ("10Gbps", "1.25GBps", "1.5us",
// "2.3GHz", "1.2Tf", "64KiB"). Parsing returns SI base units.
#include <string>
#include <string_view>

namespace cnnpar {

enum class Unit {
  bandwidth_Bps,  ///< bytes per second; accepts Bps/bps with k,M,G,T and Ki,Mi,Gi,Ti prefixes
  time_s,         ///< seconds; accepts s, ms, us, ns, ps, m, h, d, w
  flop_rate,      ///< floating-point operations per second; accepts f, flops with k,M,G,T,P,E
  frequency_hz,   ///< hertz; accepts Hz with k,M,G,T
  size_bytes,     ///< bytes; accepts B, b (bits) with k,M,G,T and Ki,Mi,Gi,Ti prefixes
};

/** Parses "<number><unit>" into base units and applies check_quantity. A bare number is
 *  accepted only when `allow_bare_number` is true (it is then taken in base units).
 *  @throws std::invalid_argument with the reason (callers add file and path). */
double parse_quantity(std::string_view text, Unit unit, bool allow_bare_number = false);

/** Returns `value` (base units) if it lies in the unit's plausible range: zero, or finite and
 *  between the range's ends (e.g. a FLOP rate from 1 kflop/s to 1e21 flop/s). The check is on
 *  the value after the prefix is applied, so "1e308EBps" (infinite) and "1e-300f" are refused.
 *  @throws std::invalid_argument naming the range. */
double check_quantity(double value, Unit unit);

/** Human name of the unit family, used in error messages ("a bandwidth like \"10Gbps\""). */
std::string unit_example(Unit unit);

/** Formats a duration in seconds with a readable prefix ("12.3 ms"). */
std::string format_seconds(double seconds);

/** Formats a long wait for a person, to the nearest second under a minute and the nearest
 *  minute above ("45 s", "35 min", "1 h 12 min"); negative counts as 0. */
std::string format_remaining(double seconds);

/** One time unit for a whole table column: the largest of s, ms, us, ns in which the column's
 *  largest magnitude is at least 1 (so every cell of the column reads in the same unit). */
struct TimeUnit {
  const char* name = "s";
  double per_second = 1;  ///< multiply seconds by this
};
TimeUnit time_unit_for(double largest_seconds);
/** Formats a byte count with a binary prefix ("392.0 MiB"). */
std::string format_bytes(double bytes);

}  // namespace cnnpar
