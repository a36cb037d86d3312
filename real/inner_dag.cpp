// The inner-layer task split of BPT-CNN (Algorithm 4.1, Eq. 12-14, 21-22) and the task DAG
// with Algorithm 4.2's levels and priorities; pure functions (the execution is in
// inner_dag_run.cpp).
#include "real/inner_dag.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.hpp"
#include "real/kernel_loops.hpp"

namespace cnnpar::real {

const char* to_string(TaskKind kind) {
  switch (kind) {
    case TaskKind::convolve: return "convolve";
    case TaskKind::extract_areas: return "extract_areas";
    case TaskKind::weight_gradient: return "weight_gradient";
    case TaskKind::bias_gradient: return "bias_gradient";
  }
  return "?";
}

std::vector<Span> split_evenly(std::int64_t total, std::int64_t parts) {
  CNNPAR_ASSERT(total >= 0 && parts >= 1, "split_evenly needs total >= 0 and parts >= 1");
  parts = std::max<std::int64_t>(1, std::min(parts, total));
  std::vector<Span> spans;
  const std::int64_t base = total / parts, longer = total % parts;
  std::int64_t at = 0;
  for (std::int64_t k = 0; k < parts; ++k) {
    const std::int64_t size = base + (k < longer ? 1 : 0);
    spans.push_back({at, at + size});
    at += size;
  }
  return spans;
}

std::int64_t convolution_operations(const ConvGeometry& g) { return g.out_h() * g.out_w(); }

ConvolutionArea convolution_area(const ConvGeometry& g, std::int64_t i, std::int64_t j) {
  CNNPAR_ASSERT(i >= 0 && i < g.out_h() && j >= 0 && j < g.out_w(), "output element outside the feature map");
  ConvolutionArea a;
  a.r_begin = i * g.stride;
  a.r_end = a.r_begin + g.kernel_h;
  a.c_begin = j * g.stride;
  a.c_end = a.c_begin + g.kernel_w;
  return a;
}

namespace {

// Tasks for an extent: a multiple of the threads (a few tasks over the threads balance only then),
// up to tasks_per_thread each while no task gets below `smallest`; one per thread at least, so
// every thread works on a small layer too.
std::int64_t task_count(std::int64_t extent, int threads, const TaskGrain& grain, std::int64_t smallest) {
  const std::int64_t per_thread = std::clamp<std::int64_t>(
      extent / (std::int64_t(threads) * std::max<std::int64_t>(1, smallest)), 1, std::max(1, grain.tasks_per_thread));
  return std::max<std::int64_t>(1, std::min(extent, std::int64_t(threads) * per_thread));
}

}  // namespace

InnerDag plan_inner_dag(const std::vector<InnerStep>& steps, int threads, const TaskGrain& grain) {
  CNNPAR_ASSERT(threads >= 1, "the inner DAG needs at least one thread");
  InnerDag dag;
  dag.steps = steps;
  std::vector<int> previous_last;  // the previous step's tasks no task of that step waits for
  for (int s = 0; s < int(steps.size()); ++s) {
    const InnerStep& step = steps[std::size_t(s)];
    const ConvGeometry& g = step.geo;
    const std::int64_t positions = g.column_cols(), maps = step.out_maps, rows = g.column_rows();
    CNNPAR_ASSERT(positions > 0 && maps > 0 && rows > 0, "an inner DAG step without work");
    const int first = int(dag.tasks.size());
    const auto add = [&](InnerTask t, const std::vector<int>& after) {
      t.step = s;
      t.after = after;
      dag.tasks.push_back(std::move(t));
      return int(dag.tasks.size()) - 1;
    };
    const std::vector<Span> areas = split_evenly(positions, task_count(positions, threads, grain, grain.min_positions));
    if (step.kind == StepKind::forward) {
      for (const Span& p : areas) add({.kind = TaskKind::convolve, .positions = p}, previous_last);
    } else {
      std::vector<int> extracted;
      if (!step.areas_ready)
        for (const Span& p : areas) extracted.push_back(add({.kind = TaskKind::extract_areas, .positions = p}, previous_last));
      const std::vector<int>& weights_after = step.areas_ready ? previous_last : extracted;
      // Every weight sums over all positions (Eq. 21): split dW along its larger dimension.
      if (maps >= rows) {
        for (const Span& m : split_evenly(maps, task_count(maps, threads, grain, grain.min_weight_block)))
          add({.kind = TaskKind::weight_gradient, .maps = m, .weight_columns = {0, rows}}, weights_after);
      } else {
        for (const Span& c : split_evenly(rows, task_count(rows, threads, grain, grain.min_weight_block)))
          add({.kind = TaskKind::weight_gradient, .maps = {0, maps}, .weight_columns = c}, weights_after);
      }
      if (step.bias)
        for (const Span& m : split_evenly(maps, task_count(maps, threads, grain, grain.min_bias_maps)))
          add({.kind = TaskKind::bias_gradient, .maps = m}, previous_last);
    }
    std::vector<bool> waited_for(dag.tasks.size() - std::size_t(first), false);
    for (std::size_t t = std::size_t(first); t < dag.tasks.size(); ++t)
      for (int a : dag.tasks[t].after)
        if (a >= first) waited_for[std::size_t(a - first)] = true;
    previous_last.clear();
    for (std::size_t k = 0; k < waited_for.size(); ++k)
      if (!waited_for[k]) previous_last.push_back(first + int(k));
  }
  // A task comes after everything it waits for, so one pass in order finds the longest paths.
  for (InnerTask& t : dag.tasks) {
    for (int a : t.after) t.level = std::max(t.level, dag.tasks[std::size_t(a)].level + 1);
    dag.levels = std::max(dag.levels, t.level + 1);
  }
  for (InnerTask& t : dag.tasks) t.priority = unsigned(dag.levels - t.level);
  return dag;
}

namespace {

// "Same" convolutions (stride 1, OH = H, OW = W): position p of image n reads input p + off of
// its channel, off = (kh - P)·W + (kw - P), masked to 0 where the area leaves the image (the
// entries of mask, one image plane per (kh, kw)). Contiguous and branch-free like im2col's path.
void extract_same_areas(const ConvGeometry& g, const float* input, Span positions, float* columns) {
  const std::int64_t plane = g.in_h * g.in_w, total = g.batch * plane, cols = g.column_cols();
  const std::int64_t kernel = g.kernel_h * g.kernel_w;
  std::vector<std::uint32_t> masks(std::size_t(kernel * plane), 0u);  // (KH·KW, H·W)
  for (std::int64_t k = 0; k < kernel; ++k)
    for (std::int64_t y = 0; y < g.in_h; ++y)
      for (std::int64_t x = 0; x < g.in_w; ++x) {
        const std::int64_t ih = y + k / g.kernel_w - g.pad, iw = x + k % g.kernel_w - g.pad;
        if (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w) masks[std::size_t(k * plane + y * g.in_w + x)] = ~0u;
      }
  for (std::int64_t r = 0; r < g.column_rows(); ++r) {
    const std::int64_t c = r / kernel, k = r % kernel;
    const std::int64_t off = (k / g.kernel_w - g.pad) * g.in_w + k % g.kernel_w - g.pad;
    const float* src = input + c * total;  // channel c: (N, H, W)
    const std::uint32_t* mask = masks.data() + k * plane;
    float* dst = columns + r * cols;
    for (std::int64_t n = positions.begin / plane; n * plane < positions.end; ++n) {
      const std::int64_t lo = std::max(positions.begin, n * plane), hi = std::min(positions.end, (n + 1) * plane);
      const std::int64_t image = n * plane;  // position j of image n has mask[j - image]
      if (lo + off >= 0 && hi + off <= total) {
        for (std::int64_t j = lo; j < hi; ++j) dst[j] = masked(src[j + off], mask[j - image]);
      } else {  // the channel's first or last image: the shift leaves the channel (padding)
        for (std::int64_t j = lo; j < hi; ++j)
          dst[j] = j + off >= 0 && j + off < total ? masked(src[j + off], mask[j - image]) : 0.0f;
      }
    }
  }
}

}  // namespace

void extract_areas(const ConvGeometry& g, const float* input, Span positions, float* columns) {
  const std::int64_t oh = g.out_h(), ow = g.out_w(), area = oh * ow, cols = g.column_cols();
  CNNPAR_ASSERT(positions.begin >= 0 && positions.end <= cols && positions.begin <= positions.end,
                "positions outside the column matrix");
  if (g.stride == 1 && oh == g.in_h && ow == g.in_w) return extract_same_areas(g, input, positions, columns);
  // The output rows (n, i) the span touches and their columns [x0, x1): one division per row.
  struct Segment {
    std::int64_t n = 0, i = 0, x0 = 0, x1 = 0, row_start = 0;  ///< row_start: position of (n, i, 0)
  };
  std::vector<Segment> segments;
  for (std::int64_t p = positions.begin; p < positions.end;) {
    const std::int64_t x = p % ow, x_end = std::min(ow, x + (positions.end - p));
    segments.push_back({p / area, (p % area) / ow, x, x_end, p - x});
    p += x_end - x;
  }
  for (std::int64_t r = 0; r < g.column_rows(); ++r) {
    const std::int64_t c = r / (g.kernel_h * g.kernel_w), kh = (r / g.kernel_w) % g.kernel_h, kw = r % g.kernel_w;
    // Output columns x whose area column x·S - P + kw lies inside the input: [x_lo, x_hi).
    std::int64_t x_lo = 0, x_hi = ow;
    while (x_lo < ow && x_lo * g.stride - g.pad + kw < 0) ++x_lo;
    while (x_hi > x_lo && (x_hi - 1) * g.stride - g.pad + kw >= g.in_w) --x_hi;
    const std::int64_t shift = kw - g.pad;  // position x reads input column x·S + shift
    float* row = columns + r * cols;
    for (const Segment& s : segments) {
      float* dst = row + s.row_start;  // dst[x] is position (n, i, x)
      const std::int64_t ih = s.i * g.stride - g.pad + kh;
      if (ih < 0 || ih >= g.in_h) {
        std::fill(dst + s.x0, dst + s.x1, 0.0f);
        continue;
      }
      const float* src = input + ((c * g.batch + s.n) * g.in_h + ih) * g.in_w;  // input row ih
      const std::int64_t lo = std::clamp(x_lo, s.x0, s.x1), hi = std::clamp(x_hi, lo, s.x1);
      std::fill(dst + s.x0, dst + lo, 0.0f);
      if (g.stride == 1) {
        if (hi > lo) std::memcpy(dst + lo, src + lo + shift, sizeof(float) * std::size_t(hi - lo));
      } else {
        for (std::int64_t k = lo; k < hi; ++k) dst[k] = src[k * g.stride + shift];
      }
      std::fill(dst + hi, dst + s.x1, 0.0f);
    }
  }
}

}  // namespace cnnpar::real
