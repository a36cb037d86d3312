#include "real/arena_plan.hpp"

#include <algorithm>
#include <numeric>

#include "base/error.hpp"

namespace cnnpar::real {

bool lives_meet(const BufferLife& a, const BufferLife& b) {
  std::size_t i = 0, j = 0;
  while (i < a.spans.size() && j < b.spans.size()) {
    const LiveSpan& x = a.spans[i];
    const LiveSpan& y = b.spans[j];
    if (x.first <= y.last && y.first <= x.last) return true;
    if (x.last < y.last) ++i; else ++j;
  }
  return false;
}

ArenaPlan plan_arena(const std::vector<BufferLife>& buffers, std::int64_t alignment_floats) {
  CNNPAR_ASSERT(alignment_floats > 0, "arena alignment must be positive");
  const auto aligned = [&](std::int64_t floats) {
    return (floats + alignment_floats - 1) / alignment_floats * alignment_floats;
  };
  std::vector<std::size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return buffers[a].floats > buffers[b].floats; });
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<std::size_t> placed;
  struct Taken {
    std::int64_t begin, end;
  };
  std::vector<Taken> taken;  // memory of the placed buffers this one meets
  for (const std::size_t b : order) {
    CNNPAR_ASSERT(buffers[b].floats >= 0, "a buffer of negative size");
    taken.clear();
    for (const std::size_t p : placed)
      if (lives_meet(buffers[b], buffers[p]))
        taken.push_back({plan.offsets[p], plan.offsets[p] + buffers[p].floats});
    std::sort(taken.begin(), taken.end(), [](const Taken& x, const Taken& y) { return x.begin < y.begin; });
    std::int64_t offset = 0;
    for (const Taken& t : taken) {
      if (offset + buffers[b].floats <= t.begin) break;  // fits in the gap before t
      offset = std::max(offset, aligned(t.end));
    }
    plan.offsets[b] = offset;
    plan.floats = std::max(plan.floats, offset + buffers[b].floats);
    placed.push_back(b);
  }
  return plan;
}

}  // namespace cnnpar::real
