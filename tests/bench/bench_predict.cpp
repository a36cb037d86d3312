// Speed target: predicting all 128 node counts (P = 1..128) of VGG-A with lee (k 9, f 2,
// batch 256) — build schedule + analytic replay + metrics — in <= 50 ms wall.
// Where P does not divide 256 the ranks take ⌈256/P⌉ or ⌊256/P⌋ images (uneven_batch), as
// `cnnpar predict`'s default node list does.
// Run: build/tests/bench/bench_predict [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <malloc.h>
#include <tbb/parallel_for.h>

#include <vector>

#include "analysis/metrics.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

// Keep freed trace memory in the heap: without this glibc returns it to the kernel after every
// prediction and the next one pays page faults (about half the time of a 128-count sweep).
static void cnnpar_tune_allocator() {
#ifdef __GLIBC__
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
}

namespace {

struct Fixture {
  Network network = load_network("vgg-a");
  Platform platform = load_platform("cori-haswell");
};

const Fixture& fixture() {
  static const Fixture f;
  return f;
}

StrategyOptions lee_options(int ranks) {
  StrategyOptions o;
  o.name = "lee";
  o.set("k", 9).set("f", 2);
  o.ranks = ranks;
  o.global_batch = 256;
  o.uneven_batch = true;
  o.iterations = 2;
  o.warmup_iterations = 1;
  return o;
}

double predict_one(int ranks) {
  const Fixture& f = fixture();
  const Schedule schedule = build_schedule(f.network, f.platform, lee_options(ranks));
  const Trace trace = analytic::analytic_replay(schedule, f.platform);
  return compute_metrics(trace, MetricsDetail{false, false}).iteration_s;  // as predict_sweep
}

void BM_Predict128_Serial(benchmark::State& state) {
  for (auto _ : state) {
    double sum = 0;
    for (int p = 1; p <= 128; ++p) sum += predict_one(p);
    benchmark::DoNotOptimize(sum);
  }
}
BENCHMARK(BM_Predict128_Serial)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Predict128_Tbb(benchmark::State& state) {
  std::vector<double> times(128);
  for (auto _ : state) {
    tbb::parallel_for(1, 129, [&](int p) { times[std::size_t(p - 1)] = predict_one(p); });
    benchmark::DoNotOptimize(times.data());
  }
}
BENCHMARK(BM_Predict128_Tbb)->Unit(benchmark::kMillisecond)->UseRealTime();

// Where the serial time goes: builders, replay, metrics (each over P = 1..128).
void BM_Build128(benchmark::State& state) {
  const Fixture& f = fixture();
  for (auto _ : state)
    for (int p = 1; p <= 128; ++p) benchmark::DoNotOptimize(build_schedule(f.network, f.platform, lee_options(p)));
}
BENCHMARK(BM_Build128)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Replay128(benchmark::State& state) {
  const Fixture& f = fixture();
  std::vector<Schedule> schedules;
  for (int p = 1; p <= 128; ++p) schedules.push_back(build_schedule(f.network, f.platform, lee_options(p)));
  for (auto _ : state)
    for (const Schedule& s : schedules) benchmark::DoNotOptimize(analytic::analytic_replay(s, f.platform));
}
BENCHMARK(BM_Replay128)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Metrics128(benchmark::State& state) {
  const Fixture& f = fixture();
  std::vector<Trace> traces;
  for (int p = 1; p <= 128; ++p)
    traces.push_back(analytic::analytic_replay(build_schedule(f.network, f.platform, lee_options(p)), f.platform));
  for (auto _ : state)
    for (const Trace& t : traces) benchmark::DoNotOptimize(compute_metrics(t, MetricsDetail{false, false}));
}
BENCHMARK(BM_Metrics128)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  cnnpar_tune_allocator();  // as cnnpar's main does
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
