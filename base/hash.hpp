#pragma once
// FNV-1a, 64 bits: a stable hash for fingerprints written to files (checkpoints, weights, sweep
// shards), the same on every machine and build, unlike std::hash.
#include <cstddef>
#include <cstdint>

namespace cnnpar {

inline constexpr std::uint64_t kFnv1a64OffsetBasis = 0xcbf29ce484222325ull;

/** FNV-1a 64-bit over `bytes` bytes, continuing from `hash`. */
std::uint64_t fnv1a64(const void* data, std::size_t bytes, std::uint64_t hash = kFnv1a64OffsetBasis);

}  // namespace cnnpar
