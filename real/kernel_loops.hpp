#pragma once
// What the kernels' own loops share: parallel_for over the thread arena that
// set_compute_threads configures (kernel_threads.cpp), and the branch-free masked select.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>

namespace cnnpar::real {
namespace kernel_loops {

// Set by set_compute_threads (kernel_threads.cpp): threads of the own loops, and their arena
// (null until more than one thread is set).
extern int g_threads;
extern std::unique_ptr<tbb::task_arena> g_arena;

}  // namespace kernel_loops

// Elements of an element-wise loop below which threads do not pay.
constexpr std::int64_t kElementGrain = 1 << 15;

// f(begin, end) over [0, count), split into about compute_threads() contiguous chunks. Every
// element is written by one chunk and computed the same way in any chunk, so the result does
// not depend on the split. Small loops (below 2·grain elements) stay on the calling thread.
template <class F>
void parallel_for(std::int64_t count, F&& f, std::int64_t grain = 1) {
  const int t = kernel_loops::g_threads;
  if (t <= 1 || !kernel_loops::g_arena || count < 2 * grain || count < 2) {
    if (count > 0) f(std::int64_t(0), count);
    return;
  }
  kernel_loops::g_arena->execute([&] {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, count, std::max<std::int64_t>(grain, 1)),
                      [&](const tbb::blocked_range<std::int64_t>& r) { f(r.begin(), r.end()); },
                      tbb::static_partitioner());
  });
}

// Σ_{i<n} term(i) in double over kSumLanes partial sums, added in a fixed order at the end: the
// adds of one partial sum form no chain of n dependent adds (they pipeline and vectorise), and
// the result does not depend on the thread count.
constexpr int kSumLanes = 8;
template <class Term>
double lane_sum(std::int64_t n, Term&& term) {
  double lane[kSumLanes] = {};
  std::int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes)
    for (int j = 0; j < kSumLanes; ++j) lane[j] += term(i + j);
  double sum = 0;
  for (; i < n; ++i) sum += term(i);
  for (int j = 0; j < kSumLanes; ++j) sum += lane[j];
  return sum;
}

inline float masked(float v, std::uint32_t mask) {
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) & mask);  // exact: v or +0
}

}  // namespace cnnpar::real
