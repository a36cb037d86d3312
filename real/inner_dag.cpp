// The inner-layer task split of BPT-CNN (Algorithm 4.1, Eq. 12-14, 21-22) and the task DAG
// with Algorithm 4.2's levels and priorities; pure functions (the execution is in
// inner_dag_run.cpp).
#include "real/inner_dag.hpp"

#include <algorithm>
#include <cstring>

#include "base/error.hpp"

namespace cnnpar::real {

const char* to_string(InnerMode mode) { return mode == InnerMode::dag ? "dag" : "gemm"; }

InnerMode parse_inner_mode(const std::string& text, const std::string& file, const std::string& path) {
  if (text == "gemm") return InnerMode::gemm;
  if (text == "dag") return InnerMode::dag;
  throw InputError(file, path, text, "expected gemm or dag");
}

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

// Tasks for an extent: enough for every thread to take several, none below `smallest`.
std::int64_t task_count(std::int64_t extent, int threads, const TaskGrain& grain, std::int64_t smallest) {
  const std::int64_t wanted = std::int64_t(threads) * std::max(1, grain.tasks_per_thread);
  return std::max<std::int64_t>(1, std::min(wanted, extent / std::max<std::int64_t>(1, smallest)));
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

void extract_areas(const ConvGeometry& g, const float* input, Span positions, float* columns) {
  const std::int64_t oh = g.out_h(), ow = g.out_w(), area = oh * ow, cols = g.column_cols();
  CNNPAR_ASSERT(positions.begin >= 0 && positions.end <= cols && positions.begin <= positions.end,
                "positions outside the column matrix");
  for (std::int64_t r = 0; r < g.column_rows(); ++r) {
    const std::int64_t c = r / (g.kernel_h * g.kernel_w), kh = (r / g.kernel_w) % g.kernel_h, kw = r % g.kernel_w;
    // Output columns x whose area column x·S - P + kw lies inside the input: [x_lo, x_hi).
    std::int64_t x_lo = 0, x_hi = ow;
    while (x_lo < ow && x_lo * g.stride - g.pad + kw < 0) ++x_lo;
    while (x_hi > x_lo && (x_hi - 1) * g.stride - g.pad + kw >= g.in_w) --x_hi;
    float* row = columns + r * cols;
    // One output row (n, i) at a time: positions p .. p + (x_end - x) share image and area rows.
    for (std::int64_t p = positions.begin; p < positions.end;) {
      const std::int64_t n = p / area, i = (p % area) / ow, x = p % ow;
      const std::int64_t x_end = std::min(ow, x + (positions.end - p));
      float* dst = row + (p - x);  // dst[x] is position (n, i, x)
      const std::int64_t ih = i * g.stride - g.pad + kh;
      if (ih < 0 || ih >= g.in_h) {
        std::fill(dst + x, dst + x_end, 0.0f);
      } else {
        const float* src = input + ((c * g.batch + n) * g.in_h + ih) * g.in_w;  // input row ih
        const std::int64_t shift = kw - g.pad;  // position x reads input column x·S + shift
        const std::int64_t lo = std::clamp(x_lo, x, x_end), hi = std::clamp(x_hi, lo, x_end);
        std::fill(dst + x, dst + lo, 0.0f);
        if (g.stride == 1) {
          if (hi > lo) std::memcpy(dst + lo, src + lo + shift, sizeof(float) * std::size_t(hi - lo));
        } else {
          for (std::int64_t k = lo; k < hi; ++k) dst[k] = src[k * g.stride + shift];
        }
        std::fill(dst + hi, dst + x_end, 0.0f);
      }
      p += x_end - x;
    }
  }
}

}  // namespace cnnpar::real
