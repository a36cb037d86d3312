// cnnpar_real_bench: one-process training throughput of the real Runtime (P = 1, dp
// schedule) and the GEMM efficiency of an iteration, printed as JSON.
//
//   cnnpar_real_bench --network vgg-a-32 --batch 64 --threads 2 --iterations 6 --warmup 2
//
// images/s = batch / median measured iteration wall time (between marks; P = 1 has no
// communication); compute_ops_s_median is the sum of the compute ops' times alone. GEMM efficiency = (Σ GEMM FLOPs / Σ GEMM op time) divided by
// the rate of plain cblas_sgemm (row-major, no transposes) on the same m×n×k shapes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <random>

#include <cblas.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "model/scenarios.hpp"
#include "model/strategies/strategy.hpp"
#include "real/dataset.hpp"
#include "real/kernels.hpp"
#include "real/local_executor.hpp"

using namespace cnnpar;
using namespace cnnpar::real;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

// Seconds of one plain cblas_sgemm of this shape (best of `reps`).
double sgemm_seconds(const GemmShape& g, int reps) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> a(std::size_t(g.m * g.k)), b(std::size_t(g.k * g.n)), c(std::size_t(g.m * g.n));
  for (auto& x : a) x = d(rng);
  for (auto& x : b) x = d(rng);
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(g.m), int(g.n), int(g.k), 1.0f, a.data(), int(g.k),
                b.data(), int(g.n), 0.0f, c.data(), int(g.n));
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int run(int argc, char** argv) {
  CLI::App app{"Training throughput of the real Runtime on one process"};
  std::string network_name = "vgg-a-32";
  std::int64_t batch = 64;
  int threads = 1, loop_threads = 0, iterations = 6, warmup = 2;
  bool per_op = false;
  app.add_option("--network", network_name, "network name or JSON path")->capture_default_str();
  app.add_option("--batch", batch, "mini-batch (images)")->capture_default_str();
  app.add_option("--threads", threads, "OpenBLAS threads (and own-loop threads)")->capture_default_str();
  app.add_option("--loop-threads", loop_threads, "threads of the own loops (default: --threads)");
  app.add_option("--iterations", iterations, "measured iterations")->capture_default_str();
  app.add_option("--warmup", warmup, "warm-up iterations (not measured)")->capture_default_str();
  app.add_flag("--ops", per_op, "also print seconds and GFLOP/s per op label");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (loop_threads <= 0) loop_threads = threads;
  set_compute_threads(threads, loop_threads);
  const Network net = load_network(network_name);
  StrategyOptions o;
  o.name = "dp";
  o.global_batch = batch;
  o.ranks = 1;
  o.iterations = warmup + iterations;
  o.warmup_iterations = warmup;
  o.origin = "command line";
  const Schedule schedule = build_schedule(net, Platform{}, o);
  SyntheticDataset data(net.input, net.classes(), 4 * batch, 1);

  LocalExecutor ex(net, schedule, 1, SgdConfig{});
  std::vector<OpTiming> timings;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> marks_s;
  const std::vector<double> losses = ex.run(data, &timings, &marks_s);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<double> iter_s(std::size_t(o.iterations), 0.0);
  std::map<std::string, double> per_kernel_s;
  double gemm_flops = 0, gemm_s = 0;
  std::map<std::string, std::pair<double, double>> per_label;  // label -> (s, FLOPs) per iteration
  std::map<std::string, std::pair<GemmShape, int>> shapes;  // kernel name -> (shape, count per iteration)
  for (const OpTiming& t : timings) {
    if (t.iteration >= o.iterations) continue;  // nothing after the last mark for dp
    iter_s[std::size_t(t.iteration)] += t.seconds;
    if (t.iteration < warmup) continue;
    per_kernel_s[to_string(t.kernel)] += t.seconds / iterations;
    per_label[t.label].first += t.seconds / iterations;
    per_label[t.label].second += t.flops / iterations;
    if (t.kernel == KernelClass::gemm) {
      gemm_flops += t.flops / iterations;
      gemm_s += t.seconds / iterations;
    }
  }
  for (const Op& op : schedule.programs[0].ops) {
    if (op.kind != OpKind::compute || op.kernel != KernelClass::gemm) continue;
    auto& e = shapes[op.gemm.to_string()];
    e.first = op.gemm;
    ++e.second;
  }
  double sgemm_s = 0;  // plain cblas time of one iteration's GEMM shapes
  for (auto& [name, e] : shapes) sgemm_s += sgemm_seconds(e.first, 3) * e.second / double(o.iterations);

  // Wall time between marks (everything: data generation, every op, the driver).
  std::vector<double> wall_iter_s;
  for (std::size_t m = std::size_t(warmup); m < marks_s.size(); ++m)
    wall_iter_s.push_back(marks_s[m] - (m == 0 ? 0.0 : marks_s[m - 1]));
  const double t_iter = median(wall_iter_s);
  const std::vector<double> measured(iter_s.begin() + warmup, iter_s.end());
  const double t_compute = median(measured);
  nlohmann::json j;
  j["network"] = net.name;
  j["batch"] = batch;
  j["threads"] = threads;
  j["loop_threads"] = loop_threads;
  j["iterations"] = iterations;
  j["warmup_iterations"] = warmup;
  j["iteration_s_median"] = t_iter;
  j["compute_ops_s_median"] = t_compute;
  j["images_per_s"] = double(batch) / t_iter;
  j["wall_s"] = wall_s;
  j["kernel_s_per_iteration"] = per_kernel_s;
  j["gemm_flops_per_iteration"] = gemm_flops;
  j["gemm_s_per_iteration"] = gemm_s;
  j["gemm_flops_per_s"] = gemm_flops / gemm_s;
  j["cblas_sgemm_s_same_shapes"] = sgemm_s;
  j["cblas_sgemm_flops_per_s_same_shapes"] = gemm_flops / sgemm_s;
  j["gemm_efficiency_vs_cblas"] = sgemm_s / gemm_s;
  if (per_op)
    for (const auto& [label, v] : per_label)
      j["ops"][label] = {{"s", v.first}, {"gflops_per_s", v.first > 0 ? v.second / v.first / 1e9 : 0.0}};
  j["loss_first"] = losses.front();
  j["loss_last"] = losses.back();
  std::cout << j.dump(2) << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
