#pragma once
// Checkpoints: weights + momentum + batchnorm running statistics + iteration + network
// fingerprint + the run settings a resumed run must keep, with a checksum, written atomically
// (base/output_files.hpp).
//
// File layout, version 3 (little-endian):
//   "CNNPCKP3" (8 bytes) | iteration i64 (global iterations completed; at byte 8 so a script
//   can read it) | fingerprint u64 | seed u64 | global batch i64 | ranks i64 |
//   gemm tile columns i64 | lr f32 | momentum f32 | weight decay f32 |
//   strategy, options (canonical JSON), dataset, collectives: each u32 length + bytes |
//   count i64 | weights f32[count] | momentum f32[count] | statistics count i64 |
//   batchnorm running statistics f32[statistics count] (RuntimeState) | network name length
//   u32 | name bytes | FNV-1a 64 u64 over every preceding byte.
// Version 2 ("CNNPCKP2": no statistics) is read for networks without batchnorm layers only.
// Version 1 files ("CNNPCKP1") are refused: they do not say which run wrote them.
//
// What a resume must match (CheckpointRun), and why: the state after iteration m is only
// the state of the uninterrupted run if every later iteration computes the same floats.
//  * network (fingerprint): the weights' meaning;
//  * seed: weights' draw, synthetic images and dropout masks are keyed by it;
//  * dataset and global batch N: the images of global iteration m are (m·N + j) mod size;
//  * strategy and its options, ranks P: they fix which rank sums which gradients in which
//    order (float addition is not associative), and where updates happen;
//  * collectives (mpi | p2p): the reduction order of every allreduce;
//  * gemm tile columns: a GEMM split into column tiles may take other BLAS kernels;
//  * lr, momentum, weight decay: the update itself. Changing them is a new run, not a resume.
// Free to change: iterations (the resumed run goes on up to the new total), warm-up,
// progress mode, poll interval, timeout, concurrency, trace and weights outputs.
#include <cstdint>
#include <string>

#include "model/network.hpp"
#include "real/runtime.hpp"

namespace cnnpar::real {

/** The settings a checkpoint records and a resumed run must repeat (see above). */
struct CheckpointRun {
  std::uint64_t seed = 0;
  std::int64_t global_batch = 0;  ///< N (images per iteration over all ranks)
  std::int64_t ranks = 0;
  std::int64_t gemm_tile_columns = 0;
  float learning_rate = 0, momentum = 0, weight_decay = 0;
  std::string strategy;
  std::string options;  ///< the schedule's resolved options, canonical JSON (sorted keys)
  std::string dataset;
  std::string collectives;
};

/** FNV-1a 64-bit hash of the network name, input shape, and every layer's kind and shapes. */
std::uint64_t network_fingerprint(const Network& network);

/** Writes `state` atomically to `path` (a temporary file beside it, renamed). @throws
 *  std::runtime_error naming `path` when it cannot be written (the folder is checked before
 *  the run, so this is a full disk or a vanished folder). */
void write_checkpoint(const std::string& path, const Network& network, const CheckpointRun& run,
                      const RuntimeState& state);

struct Checkpoint {
  CheckpointRun run;
  RuntimeState state;
};

/** Reads and verifies a checkpoint. @throws InputError: missing or unreadable file (naming the
 *  reason), "/magic", truncated data, sizes that do not fit the file, "/checksum" mismatch,
 *  and "/fingerprint" with reason "checkpoint from another network". */
Checkpoint read_checkpoint(const std::string& path, const Network& network);

/** Refuses to resume `saved` (read from `path`) as `now`: InputError(path, "/<field>", saved
 *  value, reason naming this run's value) for the first field that differs. */
void check_resume(const std::string& path, const CheckpointRun& saved, const CheckpointRun& now);

}  // namespace cnnpar::real
