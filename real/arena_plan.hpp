#pragma once
// Buffers that share one allocation by their lifetimes: two buffers whose lives (spans of op
// indices of a rank's program) never meet may take the same memory.
#include <cstdint>
#include <vector>

namespace cnnpar::real {

/** Op indices [first, last] in which a buffer's contents are needed (both ends included). */
struct LiveSpan {
  std::int64_t first = 0, last = 0;
};

struct BufferLife {
  std::int64_t floats = 0;
  std::vector<LiveSpan> spans;  ///< sorted by first, disjoint
};

struct ArenaPlan {
  std::vector<std::int64_t> offsets;  ///< floats from the arena's start, one per buffer
  std::int64_t floats = 0;            ///< the arena's size
};

/** True when some span of `a` meets some span of `b`. */
bool lives_meet(const BufferLife& a, const BufferLife& b);

/** Offsets, each a multiple of `alignment_floats`, such that buffers whose lives meet do not
 *  overlap in memory: the largest buffers placed first, each at the lowest offset free of the
 *  placed buffers it meets (greedy by size). */
ArenaPlan plan_arena(const std::vector<BufferLife>& buffers, std::int64_t alignment_floats);

}  // namespace cnnpar::real
