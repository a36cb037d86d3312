#pragma once
// Bounds on every size that input controls. Values past them are refused as InputError
// before anything is allocated or multiplied, so products of bounded factors (a batch times
// a tensor, a GEMM dimension times another) stay inside 64-bit integers and finite doubles.
#include <cstdint>

namespace cnnpar::limits {

/** JSON nesting deeper than this is refused before parsing: the schemas nest at most ~8
 *  levels, and recursion over a 100,000-level document overflows the stack. */
inline constexpr int kMaxJsonDepth = 64;

/** A JSON input file (a trace of 128 ranks x 100 iterations is about 200 MB). */
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t(4) << 30;

/** One tensor dimension, kernel, stride, pad, map count or fc width (elements). */
inline constexpr std::int64_t kMaxDimension = std::int64_t(1) << 24;
/** Elements of one image's tensor, or of one layer's weights: 2^36 floats = 256 GiB. */
inline constexpr std::int64_t kMaxTensorElements = std::int64_t(1) << 36;
/** Layers in a network, and so any layer index in a schedule or trace. */
inline constexpr std::int64_t kMaxLayers = 100'000;
/** Images in a global mini-batch. batch * kMaxTensorElements < 2^63. */
inline constexpr std::int64_t kMaxBatch = std::int64_t(1) << 24;
/** Ranks (nodes) a schedule, trace, study or platform may have: each rank of a prediction
 *  holds its own program and trace. */
inline constexpr std::int64_t kMaxRanks = 16'384;
/** Nodes a platform may declare: more than any schedule uses, but its per-node speed
 *  factors (8 bytes each) stay small. */
inline constexpr std::int64_t kMaxPlatformNodes = std::int64_t(1) << 20;
/** Training iterations in one run, schedule or trace. */
inline constexpr std::int64_t kMaxIterations = 10'000'000;
/** Ops a Schedule (and its Trace) may hold over all ranks and iterations. A rank runs about
 *  kOpsPerLayerIteration ops per layer and iteration (VGG-A with lee: 100 records for 29
 *  layers), and each costs about 100 bytes in the Schedule and the Trace together, so the
 *  bound keeps a prediction near 3 GiB (16,384 ranks x 1,000 iterations asked for 22 GB). */
inline constexpr double kMaxScheduleOps = double(std::int64_t(1) << 25);
inline constexpr double kOpsPerLayerIteration = 4;
/** Any other count or index read into an `int` (op and collective ids, cores, k, f). */
inline constexpr std::int64_t kMaxIndex = (std::int64_t(1) << 31) - 1;

}  // namespace cnnpar::limits
