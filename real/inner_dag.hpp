#pragma once
// BPT-CNN's inner-layer parallel mode (Chen et al., Sec. 4): a conv layer's work split into
// tasks (Algorithm 4.1, Eq. 12-15 for the convolution; Eq. 21-22 for the weight gradient),
// the task DAG with the priorities of Algorithm 4.2, and its execution on oneTBB's flow graph
// (inner_dag_run.cpp). The planning functions are pure, so the split and the priorities are
// tested on their own.
//
// Tasks, on the layouts of kernels.hpp (input (C, N, H, W), columns (C·KH·KW, N·OH·OW),
// weights (O, C·KH·KW), output and its errors (O, N·OH·OW)):
//  * convolve (forward): a span of output positions p = (n, i, j) (columns of the output).
//    For each it extracts the convolution area X[r_begin:r_end, c_begin:c_end] of Eq. 14 into
//    its columns (unless the columns already hold them), then multiplies the shared filters F
//    with those areas (one GEMM over the span) and adds the bias: a_ij of every map.
//    The tasks write disjoint output columns: no data dependence among them (Sec. 4.1.1).
//  * extract_areas (weight gradient): the areas of a span of positions, into the columns,
//    when they are not kept from forward.
//  * weight_gradient: a block of weights w of Eq. 21, dE/dw = Σ_positions δ · a, over the
//    whole batch: rows (maps) or columns (C·KH·KW) of dW, whichever dimension is larger.
//    Waits for every extract_areas task of its step (each weight sums over all positions).
//  * bias_gradient: Eq. 22, the sum of δ of a span of maps.
//
// Algorithm 4.2: the DAG's levels are the longest path from an entrance task (level 0 = no
// predecessor); priority = levels - level, so the entrance tasks get the maximum, upstream
// tasks a higher priority than downstream ones, and tasks of one level the same. The lowest
// priority is 1 (oneTBB's 0 means "no priority"). A plan may chain several steps (a training
// step's conv passes in program order): a step's entrance tasks wait for the previous step's
// last tasks.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/inner_mode.hpp"
#include "real/kernels.hpp"

namespace cnnpar::real {

/** A half-open span [begin, end) of indices. */
struct Span {
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const { return end - begin; }
  bool operator==(const Span&) const = default;
};

/** [0, total) in min(parts, total) contiguous spans (at least one) whose sizes differ by at
 *  most one: the first total % parts spans are one longer. */
std::vector<Span> split_evenly(std::int64_t total, std::int64_t parts);

/** Eq. 13: K_C = H_a · W_a, the convolution operations of one image. */
std::int64_t convolution_operations(const ConvGeometry& g);

/** Eq. 14: the area X[r_begin:r_end, c_begin:c_end] (end exclusive) that output element a_ij
 *  reads, in rows and columns of the input padded by P on every side. */
struct ConvolutionArea {
  std::int64_t r_begin = 0, r_end = 0, c_begin = 0, c_end = 0;
};
ConvolutionArea convolution_area(const ConvGeometry& g, std::int64_t i, std::int64_t j);

enum class StepKind { forward, weight_gradient };
enum class TaskKind { convolve, extract_areas, weight_gradient, bias_gradient };
const char* to_string(TaskKind kind);

/** One conv pass of a plan. */
struct InnerStep {
  ConvGeometry geo;
  std::int64_t out_maps = 0;  ///< O
  StepKind kind = StepKind::forward;
  bool areas_ready = false;   ///< the columns already hold the areas (kept from forward, or an im2col op)
  bool bias = true;           ///< forward adds the bias / weight gradient computes db
};

/** How finely a step is split: per_thread = clamp(extent / (threads · smallest), 1,
 *  tasks_per_thread) tasks per thread, min(extent, threads · per_thread) in all. More tasks
 *  than threads let a thread that finishes early take another (the thread-level load balance of
 *  Sec. 4.2, which matters when other work shares the cores); but each task's GEMM packs the
 *  operand all tasks share (the filters W forward, δ for dW) again, so small tasks cost time. */
struct TaskGrain {
  int tasks_per_thread = 2;
  std::int64_t min_positions = 256;    ///< output positions per convolve / extract_areas task
  std::int64_t min_weight_block = 64;  ///< rows or columns of dW per weight_gradient task
  std::int64_t min_bias_maps = 64;     ///< maps per bias_gradient task
};

struct InnerTask {
  TaskKind kind = TaskKind::convolve;
  int step = 0;
  Span positions;          ///< convolve, extract_areas: output positions (columns n·OH·OW + i·OW + j)
  Span maps;               ///< weight_gradient, bias_gradient: rows of dW (output maps)
  Span weight_columns;     ///< weight_gradient: columns of dW (c·KH·KW + kh·KW + kw)
  std::vector<int> after;  ///< tasks (indices into InnerDag::tasks) it waits for
  int level = 0;
  unsigned priority = 0;   ///< Algorithm 4.2: levels - level (>= 1)
};

struct InnerDag {
  std::vector<InnerStep> steps;
  std::vector<InnerTask> tasks;  ///< in creation order: a step's tasks after the previous step's
  int levels = 0;                ///< 1 + the largest level
};

/** The tasks of `steps` (run in this order) for `threads` threads, with their dependences,
 *  levels and priorities. */
InnerDag plan_inner_dag(const std::vector<InnerStep>& steps, int threads, const TaskGrain& grain = {});

/** Areas of output positions [positions.begin, positions.end) into those columns of the
 *  column matrix (C·KH·KW, N·OH·OW): the same values as im2col. Serial. */
void extract_areas(const ConvGeometry& g, const float* input, Span positions, float* columns);

/** The data of a one-step plan. Null `input` when the step's areas are ready. */
struct InnerBuffers {
  const float* input = nullptr;   ///< (C, N, H, W)
  float* columns = nullptr;       ///< (C·KH·KW, N·OH·OW): filled by the tasks unless ready
  const float* weights = nullptr; ///< forward: (O, C·KH·KW)
  const float* bias = nullptr;    ///< forward: (O), or null
  float* out = nullptr;           ///< forward: (O, N·OH·OW)
  const float* out_grad = nullptr;///< weight gradient: δ (O, N·OH·OW)
  float* weight_grad = nullptr;   ///< weight gradient: (O, C·KH·KW), overwritten
  float* bias_grad = nullptr;     ///< weight gradient: (O), overwritten, or null
};

/** Runs a one-step plan as a oneTBB flow graph (a continue_node per task, with its priority)
 *  in an arena of compute_threads() threads; each task's GEMM runs single-threaded. When
 *  `poll` is set and non-empty, the calling thread calls it after each task it ran (MPI
 *  progress; the other threads never call it). Deterministic: every output element is
 *  computed by one task of a fixed extent. */
void run_inner_dag(const InnerDag& plan, const InnerBuffers& data, const std::function<void()>* poll = nullptr);

/** out (O, N·OH·OW) = W · areas of `input` + bias, as the DAG: conv_forward_gemm's result
 *  (to rounding). `input` null: `columns` already hold the areas; else they are filled. */
void conv_forward_dag(const ConvGeometry& g, std::int64_t out_maps, const float* weights, const float* bias,
                      const float* input, float* columns, float* out, const Tiling& t = {});
/** dW (O, C·KH·KW) = δ · columns^T and db (O) = row sums of δ, as the DAG:
 *  conv_backward_weight_gemm's result. `input` null: `columns` already hold the areas. */
void conv_backward_weight_dag(const ConvGeometry& g, std::int64_t out_maps, const float* out_grad,
                              const float* input, float* columns, float* weight_grad, float* bias_grad,
                              const Tiling& t = {});

}  // namespace cnnpar::real
