// Execution of an inner-layer task DAG (real/inner_dag.hpp) on oneTBB's flow graph: one
// continue_node per task with the task's Algorithm 4.2 priority, an edge per dependence.
// oneTBB's graph keeps the ready tasks that have a priority in a priority queue and a free
// thread of the arena takes the highest (Alg. 4.2 lines 1-3); a task becomes ready once all its
// predecessors are complete (lines 4-7); whichever thread is free takes the next one, which
// stands in for line 8's thread with the least work.
#include <tbb/flow_graph.h>
#include <tbb/task_arena.h>

#include <memory>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "real/inner_dag.hpp"
#include "real/kernel_loops.hpp"

namespace cnnpar::real {
namespace {

void run_task(const InnerStep& step, const InnerTask& task, const InnerBuffers& d) {
  const ConvGeometry& g = step.geo;
  const std::int64_t positions = g.column_cols(), rows = g.column_rows(), maps = step.out_maps;
  switch (task.kind) {
    case TaskKind::convolve: {
      const Span p = task.positions;
      if (!step.areas_ready) extract_areas(g, d.input, p, d.columns);
      // out[:, p] (O, |p|) = W (O, C·KH·KW) · columns[:, p] (C·KH·KW, |p|), row strides N·OH·OW.
      gemm(false, false, maps, p.size(), rows, 1.0f, d.weights, rows, d.columns + p.begin, positions, 0.0f,
           d.out + p.begin, positions);
      if (d.bias)
        for (std::int64_t o = 0; o < maps; ++o) {
          float* out = d.out + o * positions;
          for (std::int64_t j = p.begin; j < p.end; ++j) out[j] += d.bias[o];
        }
      return;
    }
    case TaskKind::extract_areas:
      extract_areas(g, d.input, task.positions, d.columns);
      return;
    case TaskKind::weight_gradient: {
      const Span m = task.maps, c = task.weight_columns;
      // dW[m, c] (|m|, |c|) = δ[m, :] (|m|, N·OH·OW) · columns[c, :]^T (N·OH·OW, |c|).
      gemm(false, true, m.size(), c.size(), positions, 1.0f, d.out_grad + m.begin * positions, positions,
           d.columns + c.begin * positions, positions, 0.0f, d.weight_grad + m.begin * rows + c.begin, rows);
      return;
    }
    case TaskKind::bias_gradient:
      // In double and in position order, like conv_backward_weight_gemm: the same bits.
      for (std::int64_t o = task.maps.begin; o < task.maps.end; ++o) {
        const float* e = d.out_grad + o * positions;
        double s = 0;
        for (std::int64_t j = 0; j < positions; ++j) s += e[j];
        d.bias_grad[o] = float(s);
      }
      return;
  }
}

// compute_threads() == 1 has no arena of the own loops; a graph made outside an arena would
// run on all of oneTBB's default workers.
tbb::task_arena& single_thread_arena() {
  static tbb::task_arena arena(1);
  return arena;
}

}  // namespace

void run_inner_dag(const InnerDag& plan, const InnerBuffers& data, const std::function<void()>* poll) {
  CNNPAR_ASSERT(plan.steps.size() == 1, "run_inner_dag runs the plan of one step (one layer's data)");
  const InnerStep& step = plan.steps.front();
  if (step.kind == StepKind::forward) {
    CNNPAR_ASSERT(data.weights && data.out && data.columns, "forward DAG without weights, output or columns");
    CNNPAR_ASSERT(data.bias || !step.bias, "forward DAG step with a bias but no bias data");
  } else {
    CNNPAR_ASSERT(data.out_grad && data.weight_grad && data.columns, "weight-gradient DAG without its buffers");
    CNNPAR_ASSERT(data.bias_grad || !step.bias, "weight-gradient DAG step with a bias but no bias gradient");
  }
  CNNPAR_ASSERT(step.areas_ready || data.input, "a DAG step that extracts areas needs the input");
  const bool polls = poll && *poll;
  const std::thread::id caller = std::this_thread::get_id();
  const SerialGemmScope serial;
  tbb::task_arena& arena = kernel_loops::g_arena && compute_threads() > 1 ? *kernel_loops::g_arena : single_thread_arena();
  arena.execute([&] {
    using tbb::flow::continue_msg;
    using tbb::flow::continue_node;
    tbb::flow::graph graph;  // made inside the arena: its tasks run there
    std::vector<std::unique_ptr<continue_node<continue_msg>>> nodes;
    nodes.reserve(plan.tasks.size());
    for (const InnerTask& task : plan.tasks) {
      nodes.push_back(std::make_unique<continue_node<continue_msg>>(
          graph,
          [&step, &task, &data, polls, poll, caller](const continue_msg&) {
            serial_gemm_on_this_thread();
            run_task(step, task, data);
            // MPI is called from the thread that initialised it only.
            if (polls && std::this_thread::get_id() == caller) (*poll)();
          },
          tbb::flow::node_priority_t(task.priority)));
    }
    for (std::size_t t = 0; t < plan.tasks.size(); ++t)
      for (int a : plan.tasks[t].after) tbb::flow::make_edge(*nodes[std::size_t(a)], *nodes[t]);
    for (std::size_t t = 0; t < plan.tasks.size(); ++t)
      if (plan.tasks[t].after.empty()) nodes[t]->try_put(continue_msg());
    graph.wait_for_all();
  });
}

void conv_forward_dag(const ConvGeometry& g, std::int64_t out_maps, const float* weights, const float* bias,
                      const float* input, float* columns, float* out, const Tiling& t) {
  const InnerStep step{g, out_maps, StepKind::forward, input == nullptr, bias != nullptr};
  InnerBuffers data;
  data.input = input;
  data.columns = columns;
  data.weights = weights;
  data.bias = bias;
  data.out = out;
  run_inner_dag(plan_inner_dag({step}, compute_threads()), data, t.between_tiles);
}

void conv_backward_weight_dag(const ConvGeometry& g, std::int64_t out_maps, const float* out_grad,
                              const float* input, float* columns, float* weight_grad, float* bias_grad,
                              const Tiling& t) {
  const InnerStep step{g, out_maps, StepKind::weight_gradient, input == nullptr, bias_grad != nullptr};
  InnerBuffers data;
  data.input = input;
  data.columns = columns;
  data.out_grad = out_grad;
  data.weight_grad = weight_grad;
  data.bias_grad = bias_grad;
  run_inner_dag(plan_inner_dag({step}, compute_threads()), data, t.between_tiles);
}

}  // namespace cnnpar::real
