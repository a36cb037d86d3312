#pragma once
// Counter-based pseudo-random numbers: values depend only on (seed, index), so every rank
// draws the same weights and images whatever P is.
#include <cstdint>

namespace cnnpar::real {

/** SplitMix64 finaliser: a well-mixed 64-bit hash of `z`. */
inline std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace cnnpar::real
