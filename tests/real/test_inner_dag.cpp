// BPT-CNN's inner-layer parallel mode (real/inner_dag.hpp): Algorithm 4.2's levels and
// priorities of a small network derived by hand, the task split of Algorithm 4.1 and Eq. 21-22
// covering every output once, and the DAG's results against the reference kernels and the
// im2col + GEMM path, alone and inside the Runtime.
#include <catch2/catch.hpp>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "real/dataset.hpp"
#include "real/inner_dag.hpp"
#include "real/kernels.hpp"
#include "real/local_executor.hpp"
#include "real/reference_kernels.hpp"
#include "real/runtime.hpp"
#include "tests/real/real_test_util.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

namespace {

// The DAG and the GEMM path sum the same products (FP32, at most a few hundred of values in
// [-1, 1]); the reference sums in double: 1e-5 at the scale of the results.
constexpr double kTolerance = 1e-5;

// Sets the compute threads for a scope and goes back to 1 (the tests' default) after it.
struct Threads {
  explicit Threads(int t) { set_compute_threads(t); }
  ~Threads() { set_compute_threads(1); }
};

std::vector<float> random_vector(std::int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

// max |a - b| / max(1, max |b|).
double scaled_difference(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

ConvGeometry geometry(std::int64_t c, std::int64_t n, std::int64_t h, std::int64_t w, std::int64_t k,
                      std::int64_t stride, std::int64_t pad) {
  return ConvGeometry{c, n, h, w, k, k, stride, pad};
}

// Counts how often every index of [0, size) is covered by `spans`.
std::vector<int> coverage(std::int64_t size, const std::vector<Span>& spans) {
  std::vector<int> count(std::size_t(size), 0);
  for (const Span& s : spans)
    for (std::int64_t i = s.begin; i < s.end; ++i) ++count[std::size_t(i)];
  return count;
}

}  // namespace

TEST_CASE("inner dag: Algorithm 4.2 levels and priorities of a two-layer network, derived by hand") {
  // conv1: C=1, N=1, 5x5 input, 3x3 kernel, stride 1, no pad -> A is 3x3 (Eq. 12), K_C = 9
  //        (Eq. 13); O = 2 maps; columns C·KH·KW = 9.
  // conv2: C=2, N=1, 3x3 input, 2x2 kernel -> 2x2, K_C = 4; O = 3; columns 2·2·2 = 8.
  // T = 2 threads, at most 2 tasks per thread, smallest task 2 positions, 3 weight columns,
  // 2 maps: an extent E is cut into min(E, 2 · clamp(E / (2 · smallest), 1, 2)) tasks.
  // Steps in program order: forward conv1, forward conv2, weight gradient conv2, weight gradient
  // conv1, the areas extracted again for both (the shared-columns mode).
  //  s0 forward conv1: 9 positions, 9 / 4 = 2 per thread -> 4 tasks {3,2,2,2}: 0-3, level 0.
  //  s1 forward conv2: 4 positions, 4 / 4 = 1 -> 2 tasks {2,2}: 4-5 after 0-3, level 1.
  //  s2 weight gradient conv2: extract 4 positions -> 2 tasks (6, 7) after 4-5, level 2;
  //     dW is 3 x 8, columns larger: 8 / 6 = 1 -> 2 tasks of 4 columns (8, 9) after 6-7, level 3;
  //     db: 3 maps, 3 / 4 = 0 -> 1 per thread -> 2 tasks {2,1} (10, 11) after 4-5, level 2.
  //  s3 weight gradient conv1: extract 9 positions -> 4 tasks (12-15) after 8-11, level 4;
  //     dW is 2 x 9: 9 / 6 = 1 -> 2 tasks {5,4} columns (16, 17) after 12-15, level 5;
  //     db: 2 maps -> 2 tasks of 1 (18, 19) after 8-11, level 4.
  // Levels 0..5, so 6 levels: priority = 6 - level (the entrance tasks 6, the last ones 1).
  const InnerStep conv1_fwd{geometry(1, 1, 5, 5, 3, 1, 0), 2, StepKind::forward, false, true};
  const InnerStep conv2_fwd{geometry(2, 1, 3, 3, 2, 1, 0), 3, StepKind::forward, false, true};
  InnerStep conv2_wg = conv2_fwd, conv1_wg = conv1_fwd;
  conv2_wg.kind = conv1_wg.kind = StepKind::weight_gradient;
  const TaskGrain grain{2, 2, 3, 2};
  const InnerDag dag = plan_inner_dag({conv1_fwd, conv2_fwd, conv2_wg, conv1_wg}, 2, grain);

  REQUIRE(dag.tasks.size() == 20);
  CHECK(dag.levels == 6);
  using K = TaskKind;
  const std::vector<K> kinds = {K::convolve,        K::convolve,        K::convolve,        K::convolve,
                                K::convolve,        K::convolve,        K::extract_areas,   K::extract_areas,
                                K::weight_gradient, K::weight_gradient, K::bias_gradient,   K::bias_gradient,
                                K::extract_areas,   K::extract_areas,   K::extract_areas,   K::extract_areas,
                                K::weight_gradient, K::weight_gradient, K::bias_gradient,   K::bias_gradient};
  const std::vector<int> steps = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  const std::vector<int> levels = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 4, 4, 4, 4, 5, 5, 4, 4};
  const std::vector<unsigned> priorities = {6, 6, 6, 6, 5, 5, 4, 4, 3, 3, 4, 4, 2, 2, 2, 2, 1, 1, 2, 2};
  const std::vector<int> s0 = {0, 1, 2, 3}, s1 = {4, 5}, s2_extract = {6, 7}, s2_last = {8, 9, 10, 11},
                         s3_extract = {12, 13, 14, 15};
  const std::vector<std::vector<int>> after = {{},         {},         {},         {},         s0,
                                               s0,         s1,         s1,         s2_extract, s2_extract,
                                               s1,         s1,         s2_last,    s2_last,    s2_last,
                                               s2_last,    s3_extract, s3_extract, s2_last,    s2_last};
  for (std::size_t t = 0; t < dag.tasks.size(); ++t) {
    INFO("task " << t << " (" << to_string(dag.tasks[t].kind) << ")");
    CHECK(dag.tasks[t].kind == kinds[t]);
    CHECK(dag.tasks[t].step == steps[t]);
    CHECK(dag.tasks[t].after == after[t]);
    CHECK(dag.tasks[t].level == levels[t]);
    CHECK(dag.tasks[t].priority == priorities[t]);
  }
  CHECK(dag.tasks[0].positions == Span{0, 3});
  CHECK(dag.tasks[3].positions == Span{7, 9});
  CHECK(dag.tasks[9].maps == Span{0, 3});
  CHECK(dag.tasks[9].weight_columns == Span{4, 8});
  CHECK(dag.tasks[11].maps == Span{2, 3});
  CHECK(dag.tasks[16].weight_columns == Span{0, 5});
  CHECK(dag.tasks[17].weight_columns == Span{5, 9});

  // One step alone (what the Runtime runs per op) orders its tasks as inside the network: its
  // priorities are the network's less a constant.
  const InnerDag alone = plan_inner_dag({conv2_wg}, 2, grain);
  REQUIRE(alone.tasks.size() == 6);
  for (std::size_t t = 0; t < alone.tasks.size(); ++t)
    CHECK(alone.tasks[t].priority + 2 == dag.tasks[6 + t].priority);

  // Columns kept from forward: the weight-gradient tasks are entrance tasks of their step.
  InnerStep kept = conv2_wg;
  kept.areas_ready = true;
  const InnerDag ready = plan_inner_dag({kept}, 2, grain);
  REQUIRE(ready.tasks.size() == 4);
  CHECK(ready.levels == 1);
  for (const InnerTask& t : ready.tasks) CHECK((t.after.empty() && t.priority == 1 && t.kind != K::extract_areas));
}

TEST_CASE("inner dag: Eq. 13 and Eq. 14 give the operations and convolution areas") {
  // 5x5 input, 3x3 kernel, stride 2, pad 1: the padded input is 7x7 and A is 3x3.
  const ConvGeometry g = geometry(1, 1, 5, 5, 3, 2, 1);
  CHECK(convolution_operations(g) == 9);
  const ConvolutionArea a = convolution_area(g, 1, 2);
  CHECK(a.r_begin == 2);
  CHECK(a.r_end == 5);
  CHECK(a.c_begin == 4);
  CHECK(a.c_end == 7);  // the padded input's last column
  CHECK(convolution_operations(geometry(3, 4, 32, 32, 3, 1, 1)) == 32 * 32);
  CHECK_THROWS_AS(convolution_area(g, 3, 0), InternalError);
}

TEST_CASE("inner dag: the task split covers every output position, weight and bias once") {
  // Sizes that no thread count divides: 3 images of 7x5 with stride 2 (4x3 outputs: 36
  // positions), 7 maps, 5 channels of 3x3 (45 weight columns); and 5 maps over 11 channels.
  struct Shape {
    ConvGeometry g;
    std::int64_t maps;
  };
  const Shape shapes[] = {{geometry(5, 3, 7, 5, 3, 2, 1), 7}, {geometry(11, 2, 9, 9, 2, 1, 0), 5},
                          {geometry(1, 5, 13, 11, 5, 1, 2), 37}};
  for (const Shape& s : shapes)
    for (int threads : {1, 2, 3, 5})
      for (const TaskGrain& grain : {TaskGrain{}, TaskGrain{3, 1, 1, 1}, TaskGrain{1, 7, 4, 3}}) {
        INFO("positions " << s.g.column_cols() << ", maps " << s.maps << ", threads " << threads);
        InnerStep fwd{s.g, s.maps, StepKind::forward, false, true};
        InnerStep wg = fwd;
        wg.kind = StepKind::weight_gradient;
        const InnerDag dag = plan_inner_dag({fwd, wg}, threads, grain);
        std::vector<Span> convolved, extracted, bias_maps;
        std::vector<int> weights(std::size_t(s.maps * s.g.column_rows()), 0);
        for (const InnerTask& t : dag.tasks) {
          if (t.kind == TaskKind::convolve) convolved.push_back(t.positions);
          if (t.kind == TaskKind::extract_areas) extracted.push_back(t.positions);
          if (t.kind == TaskKind::bias_gradient) bias_maps.push_back(t.maps);
          if (t.kind == TaskKind::weight_gradient)
            for (std::int64_t o = t.maps.begin; o < t.maps.end; ++o)
              for (std::int64_t c = t.weight_columns.begin; c < t.weight_columns.end; ++c)
                ++weights[std::size_t(o * s.g.column_rows() + c)];
        }
        const std::vector<int> once_positions(std::size_t(s.g.column_cols()), 1);
        CHECK(coverage(s.g.column_cols(), convolved) == once_positions);
        CHECK(coverage(s.g.column_cols(), extracted) == once_positions);
        CHECK(coverage(s.maps, bias_maps) == std::vector<int>(std::size_t(s.maps), 1));
        CHECK(weights == std::vector<int>(weights.size(), 1));
        CHECK(convolved.size() <= std::size_t(threads * grain.tasks_per_thread));
        // Spans of one split differ by at most one position (the load balance of Sec. 4.2).
        const auto [least, most] = std::minmax_element(convolved.begin(), convolved.end(),
                                                       [](Span a, Span b) { return a.size() < b.size(); });
        CHECK(most->size() - least->size() <= 1);
      }
  CHECK(split_evenly(10, 3) == std::vector<Span>{{0, 4}, {4, 7}, {7, 10}});
  CHECK(split_evenly(2, 5) == std::vector<Span>{{0, 1}, {1, 2}});
  CHECK(split_evenly(0, 4) == std::vector<Span>{{0, 0}});
}

TEST_CASE("inner dag: the areas of every task's positions are the im2col columns, each written once") {
  std::mt19937 rng(3);
  const ConvGeometry shapes[] = {geometry(3, 2, 7, 9, 3, 1, 1), geometry(2, 3, 8, 6, 3, 2, 1),
                                 geometry(4, 1, 11, 7, 5, 2, 2), geometry(1, 4, 9, 10, 4, 3, 0),
                                 ConvGeometry{2, 3, 5, 6, 2, 3, 1, 1}};
  for (const ConvGeometry& g : shapes) {
    const auto input = random_vector(g.channels * g.batch * g.in_h * g.in_w, rng);  // (C, N, H, W)
    std::vector<float> want(std::size_t(g.column_rows() * g.column_cols()));        // (C·KH·KW, N·OH·OW)
    im2col(g, input.data(), want.data());
    for (std::int64_t parts : {1, 2, 3, 7}) {
      std::vector<float> got(want.size(), std::numeric_limits<float>::quiet_NaN());
      for (const Span& p : split_evenly(g.column_cols(), parts)) extract_areas(g, input.data(), p, got.data());
      INFO("parts " << parts << ", positions " << g.column_cols());
      CHECK(std::equal(got.begin(), got.end(), want.begin()));  // NaN left anywhere fails
    }
  }
}

TEST_CASE("inner dag: forward and weight gradient equal the reference kernels and the GEMM path") {
  std::mt19937 rng(7);
  struct Case {
    ConvGeometry g;
    std::int64_t maps;
  };
  // Stride and pad, non-square kernels, a 1x1 kernel, more maps than columns (dW split by rows).
  const Case cases[] = {{geometry(3, 2, 7, 9, 3, 1, 1), 4},        {geometry(2, 3, 8, 6, 3, 2, 1), 5},
                        {geometry(4, 1, 11, 7, 5, 2, 2), 3},       {geometry(5, 2, 6, 6, 1, 1, 0), 6},
                        {ConvGeometry{2, 3, 5, 6, 2, 3, 1, 1}, 4}, {geometry(1, 3, 9, 9, 3, 1, 1), 13},
                        {geometry(3, 4, 16, 16, 3, 1, 1), 8}};
  double worst_ref = 0, worst_gemm = 0;
  for (int threads : {1, 2, 3}) {
    const Threads scope(threads);
    for (const Case& k : cases) {
      const ConvGeometry& g = k.g;
      const std::int64_t rows = g.column_rows(), cols = g.column_cols();
      const auto input = random_vector(g.channels * g.batch * g.in_h * g.in_w, rng);  // (C, N, H, W)
      const auto weights = random_vector(k.maps * rows, rng);                          // (O, C·KH·KW)
      const auto bias = random_vector(k.maps, rng);                                    // (O)
      const auto out_grad = random_vector(k.maps * cols, rng);                         // δ (O, N·OH·OW)

      std::vector<float> ref_out(std::size_t(k.maps * cols));  // (O, N·OH·OW)
      ref::conv_forward(g, k.maps, weights.data(), bias.data(), input.data(), ref_out.data());
      std::vector<float> ref_dw(std::size_t(k.maps * rows)), ref_db(std::size_t(k.maps));  // (O, C·KH·KW), (O)
      ref::conv_backward_weight(g, k.maps, input.data(), out_grad.data(), ref_dw.data(), ref_db.data());

      std::vector<float> gemm_cols(std::size_t(rows * cols)), gemm_out(ref_out.size());  // (C·KH·KW, N·OH·OW)
      im2col(g, input.data(), gemm_cols.data());
      conv_forward_gemm(g, k.maps, weights.data(), bias.data(), gemm_cols.data(), gemm_out.data());
      std::vector<float> gemm_dw(ref_dw.size()), gemm_db(ref_db.size());
      conv_backward_weight_gemm(g, k.maps, out_grad.data(), gemm_cols.data(), gemm_dw.data(), gemm_db.data());

      // Finest split (one position, weight or map per task allowed) and the default one.
      for (const TaskGrain& grain : {TaskGrain{3, 1, 1, 1}, TaskGrain{}}) {
        for (bool ready : {false, true}) {
          std::vector<float> columns = ready ? gemm_cols : std::vector<float>(gemm_cols.size(), 0.0f);
          std::vector<float> out(ref_out.size()), dw(ref_dw.size()), db(ref_db.size());
          InnerBuffers fwd;
          fwd.input = ready ? nullptr : input.data();
          fwd.columns = columns.data();
          fwd.weights = weights.data();
          fwd.bias = bias.data();
          fwd.out = out.data();
          run_inner_dag(plan_inner_dag({{g, k.maps, StepKind::forward, ready, true}}, threads, grain), fwd);
          if (!ready) CHECK(columns == gemm_cols);  // the forward tasks leave the columns for backward
          if (!ready) std::fill(columns.begin(), columns.end(), 0.0f);
          InnerBuffers wg;
          wg.input = ready ? nullptr : input.data();
          wg.columns = columns.data();
          wg.out_grad = out_grad.data();
          wg.weight_grad = dw.data();
          wg.bias_grad = db.data();
          run_inner_dag(plan_inner_dag({{g, k.maps, StepKind::weight_gradient, ready, true}}, threads, grain), wg);
          const double d_ref = std::max({scaled_difference(out, ref_out), scaled_difference(dw, ref_dw),
                                         scaled_difference(db, ref_db)});
          const double d_gemm = std::max({scaled_difference(out, gemm_out), scaled_difference(dw, gemm_dw),
                                          scaled_difference(db, gemm_db)});
          INFO("threads " << threads << ", positions " << cols << ", maps " << k.maps << ", areas ready " << ready);
          CHECK(d_ref <= kTolerance);
          CHECK(d_gemm <= kTolerance);
          CHECK(db == gemm_db);  // the same sums in the same order
          worst_ref = std::max(worst_ref, d_ref);
          worst_gemm = std::max(worst_gemm, d_gemm);
        }
      }
      // The wrappers the Runtime calls (default grain, compute_threads()), without a bias.
      std::vector<float> columns(gemm_cols.size()), out(ref_out.size()), dw(ref_dw.size());
      conv_forward_dag(g, k.maps, weights.data(), nullptr, input.data(), columns.data(), out.data());
      std::vector<float> no_bias_out(ref_out.size());
      conv_forward_gemm(g, k.maps, weights.data(), nullptr, gemm_cols.data(), no_bias_out.data());
      conv_backward_weight_dag(g, k.maps, out_grad.data(), input.data(), columns.data(), dw.data(), nullptr);
      CHECK(scaled_difference(out, no_bias_out) <= kTolerance);
      CHECK(scaled_difference(dw, gemm_dw) <= kTolerance);
    }
  }
  std::printf("inner dag: largest |dag - reference| %.3e, |dag - gemm| %.3e (scaled by max(1, |value|))\n", worst_ref,
              worst_gemm);
}

TEST_CASE("inner dag: results are bit-reproducible and only the calling thread polls") {
  std::mt19937 rng(11);
  const ConvGeometry g = geometry(4, 4, 12, 12, 3, 1, 1);
  const std::int64_t maps = 16, rows = g.column_rows(), cols = g.column_cols();
  const auto input = random_vector(g.channels * g.batch * g.in_h * g.in_w, rng);  // (C, N, H, W)
  const auto weights = random_vector(maps * rows, rng);                            // (O, C·KH·KW)
  const auto bias = random_vector(maps, rng);                                      // (O)
  const TaskGrain grain{4, 16, 4, 2};
  const InnerDag plan = plan_inner_dag({{g, maps, StepKind::forward, false, true}}, 3, grain);
  REQUIRE(plan.tasks.size() == 12);
  for (int threads : {1, 3}) {
    const Threads scope(threads);
    const std::thread::id caller = std::this_thread::get_id();
    std::mutex lock;
    std::set<std::thread::id> pollers;
    int polls = 0;
    const std::function<void()> poll = [&] {
      const std::lock_guard<std::mutex> hold(lock);
      pollers.insert(std::this_thread::get_id());
      ++polls;
    };
    std::vector<float> first, columns(std::size_t(rows * cols));  // (C·KH·KW, N·OH·OW)
    for (int run = 0; run < 3; ++run) {
      std::vector<float> out(std::size_t(maps * cols));  // (O, N·OH·OW)
      InnerBuffers data;
      data.input = input.data();
      data.columns = columns.data();
      data.weights = weights.data();
      data.bias = bias.data();
      data.out = out.data();
      run_inner_dag(plan, data, &poll);
      if (run == 0) first = out;
      CHECK(out == first);
    }
    CHECK(pollers == std::set<std::thread::id>{caller});
    if (threads == 1) CHECK(polls == 3 * 12);  // every task ran on the calling thread
    CHECK(openblas_get_num_threads() == threads);  // the tasks' single-threaded GEMMs ended with the graph
  }
}

TEST_CASE("inner dag: the Runtime trains to the GEMM path's weights for kept, shared and recomputed columns") {
  using testing::make_schedule;
  const Network net = testing::small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 21);
  const SgdConfig sgd{0.05f, 0.9f, 5e-4f};
  enum class Columns { kept, shared, recomputed };
  // 3 iterations of dp; "shared": one column buffer that the DAG's weight-gradient step refills
  // from the input; "recomputed": .im2col_w ops refill it (what --columns recomputed adds).
  const auto train = [&](int ranks, Columns columns, InnerMode mode, int threads) {
    Schedule s = make_schedule(net, "dp", ranks, 8, 3);
    if (columns == Columns::recomputed) add_column_recompute(s);
    const Threads scope(threads);
    LocalExecutor run(net, s, 5, sgd);
    for (int r = 0; r < ranks; ++r) {
      run.runtime(r).set_inner_mode(mode);
      if (columns == Columns::shared) run.runtime(r).set_keep_columns(false);
    }
    run.run(data);
    return run.runtime(0).flat_weights();
  };
  for (int ranks : {1, 2})
    for (Columns columns : {Columns::kept, Columns::shared, Columns::recomputed}) {
      const std::vector<float> want = train(ranks, columns, InnerMode::gemm, 2);
      for (int threads : {1, 2, 3}) {
        const double d = testing::relative_difference(want, train(ranks, columns, InnerMode::dag, threads));
        std::printf("inner dag runtime: ranks %d, columns %s, threads %d: max |dag - gemm| / max |w| = %.3e\n", ranks,
                    columns == Columns::kept ? "kept" : columns == Columns::shared ? "shared" : "recomputed", threads, d);
        CHECK(d <= kTolerance);
      }
    }
}

TEST_CASE("inner dag: the Runtime matches the GEMM path under the other strategies") {
  // Model-parallel conv maps (per_layer conv2=model, conv_split's workers), sub-batches
  // (veeriah c), Lee's chunks, hybrid: each rank holds a slice; the sum of the owned parts is
  // the model.
  const Network net = testing::small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 25);
  const SgdConfig sgd{0.05f, 0.9f, 5e-4f};
  struct Case {
    const char* strategy;
    const char* key;
    nlohmann::json value;
  };
  const Case cases[] = {{"lee", "k", 3},
                        {"per_layer", "assign", "conv2=model"},
                        {"hybrid", nullptr, {}},
                        {"conv_split", "shares", "uniform"},
                        {"veeriah", "scheme", "c"}};
  const auto train = [&](const Schedule& s, InnerMode mode) {
    const Threads scope(2);
    LocalExecutor run(net, s, 5, sgd);
    for (int r = 0; r < run.ranks(); ++r) run.runtime(r).set_inner_mode(mode);
    run.run(data);
    return testing::assembled_weights(run);
  };
  for (const Case& c : cases) {
    StrategyOptions o;
    o.name = c.strategy;
    o.global_batch = 8;
    o.ranks = 2;
    o.iterations = 3;
    o.warmup_iterations = 0;
    if (c.key) o.set(c.key, c.value);
    if (std::string(c.strategy) == "lee") o.set("f", 2);
    const Schedule s = build_schedule(net, Platform{}, o);
    const double d = testing::relative_difference(train(s, InnerMode::gemm), train(s, InnerMode::dag));
    std::printf("inner dag runtime: %s on 2 ranks: max |dag - gemm| / max |w| = %.3e\n", c.strategy, d);
    CHECK(d <= kTolerance);
  }
}

TEST_CASE("inner dag: the Runtime runs conv forward and weight-gradient ops as tasks") {
  // One thread, no GEMM tiles: the GEMM path never polls, the DAG polls after each task on the
  // calling thread. small_network's conv layers at batch 8 with the default grain (at most 2
  // tasks per thread; 256 positions, 64 weight columns, 64 maps per task at least):
  //  conv1 forward: 8·12·10 = 960 positions, 960 / 256 = 3 -> clamped to 2 tasks;
  //  conv1 weight gradient: dW 6 x 27, 27 / 64 = 0 -> 1 task; db 6 maps -> 1 task;
  //  conv2 (6 maps of 6x5 in, kernel 3x2, stride 2, pad 1 -> 3x3 out) forward: 8·9 = 72
  //  positions -> 1 task; weight gradient: dW 8 x 36 -> 1 task; db -> 1 task. In all 7.
  const Network net = testing::small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 23);
  const Schedule s = testing::make_schedule(net, "dp", 1, 8, 1);
  Runtime gemm_path(net, s, 0, 5), dag(net, s, 0, 5);
  dag.set_inner_mode(InnerMode::dag);
  CHECK(gemm_path.inner_mode() == InnerMode::gemm);
  int gemm_polls = 0, dag_polls = 0;
  const std::function<void()> count_gemm = [&] { ++gemm_polls; }, count_dag = [&] { ++dag_polls; };
  gemm_path.load_batch(0, data);
  dag.load_batch(0, data);
  for (const Op& op : s.programs[0].ops) {
    if (op.kind != OpKind::compute) continue;
    gemm_path.run_compute(op, 0, count_gemm);
    dag.run_compute(op, 0, count_dag);
  }
  CHECK(gemm_polls == 0);
  CHECK(dag_polls == 7);
  CHECK(testing::relative_difference(gemm_path.flat_weights(), dag.flat_weights()) <= kTolerance);
}

TEST_CASE("inner dag: mode names") {
  CHECK(parse_inner_mode("gemm", "f", "/inner") == InnerMode::gemm);
  CHECK(parse_inner_mode("dag", "f", "/inner") == InnerMode::dag);
  CHECK(std::string(to_string(InnerMode::dag)) == "dag");
  try {
    parse_inner_mode("tasks", "command line", "/inner");
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) == "command line: /inner: expected gemm or dag (value: tasks)");
  }
}
