#pragma once
// Checkpoints: weights + momentum + iteration + network fingerprint, with a checksum,
// written atomically (temporary file <path>.tmp.<pid> + rename).
//
// File layout (little-endian):
//   "CNNPCKP1" (8 bytes) | fingerprint u64 | iteration i64 | count i64 |
//   weights f32[count] | momentum f32[count] | network name length u32 | name bytes |
//   FNV-1a 64 u64 over every preceding byte
#include <cstdint>
#include <string>

#include "model/network.hpp"
#include "real/runtime.hpp"

namespace cnnpar::real {

/** FNV-1a 64-bit hash of the network name, input shape, and every layer's kind and shapes. */
std::uint64_t network_fingerprint(const Network& network);

/** FNV-1a 64-bit over `bytes` bytes, continuing from `hash`. */
std::uint64_t fnv1a64(const void* data, std::size_t bytes,
                      std::uint64_t hash = 0xcbf29ce484222325ull);

/** Writes `state` atomically to `path`. @throws InputError (path, "/", reason) when it
 *  cannot be written. */
void write_checkpoint(const std::string& path, const Network& network, const RuntimeState& state);

/** Reads and verifies a checkpoint. @throws InputError: missing file, "/magic", truncated
 *  data ("/weights", "/momentum"), "/checksum" mismatch, and "/fingerprint" with reason
 *  "checkpoint from another network". */
RuntimeState read_checkpoint(const std::string& path, const Network& network);

}  // namespace cnnpar::real
