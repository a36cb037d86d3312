// cnnpar fit (experiments/fit.hpp): free parameters resolved from platform paths, a closed-form
// fit, recovery of a known platform, leave-one-out, and the failures.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "experiments/fit.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "workload/study.hpp"

namespace fs = std::filesystem;
using namespace cnnpar;

namespace {

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("cnnpar_fit_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const nlohmann::json& content) const {
    std::ofstream(path_ / name) << content.dump(2);
    return (path_ / name).string();
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

EngineFactory analytic_engines() {
  return [] { return make_analytic_engine(); };
}

// One fc layer, 64 inputs -> 10 outputs: 64·10 weights + 10 biases = 650 parameters,
// n = 4 · 650 = 2600 bytes of gradient, allreduced once per iteration by dp.
const nlohmann::json kOneFc = nlohmann::json::parse(R"({
  "name": "one-fc", "input": {"channels": 64, "height": 1, "width": 1},
  "layers": [{"name": "f1", "type": "fc", "outputs": 10}, {"name": "loss", "type": "softmax"}]})");

// Compute is free for every purpose here (1e21 FLOP/s, 1e18 B/s: about 1e-15 s an op) and the
// latency is 0, so an iteration is its ring allreduce: T = 2(P−1)/P · n/β.
const nlohmann::json kCommOnly = nlohmann::json::parse(R"({
  "name": "comm-only", "nodes": {"count": 4, "peak": "1e21f", "memory_bandwidth": "1e18Bps"},
  "network": {"bandwidth": "10Gbps", "latency": "0s", "algorithms": {"allreduce": "ring"}}})");

nlohmann::json study_of(const std::string& network, const nlohmann::json& nodes, const nlohmann::json& series, int batch = 4) {
  return {{"name", "test-study"}, {"platform", "unused-by-the-fit"}, {"network", network}, {"batch", batch},
          {"nodes", nodes},       {"iterations", 3},                  {"warmup", 1},        {"series", series}};
}

struct Setup {
  Observations observations{analytic_engines()};
  nlohmann::json platform;
  std::string platform_file;
  std::vector<FreeParameter> free;
  PredictFunction predict() const {
    return [this](const std::vector<double>& values) {
      return observations.predict(platform_with_values(platform, platform_file, free, values));
    };
  }
};

// `s` on the comm-only platform, observing dp's published iteration times `iteration_s_at`
// (node count -> seconds) of the one-fc network; returns how many observations it has.
std::size_t observe_comm_only(const TempDir& dir, Setup& s, const nlohmann::json& nodes, const nlohmann::json& iteration_s_at) {
  s.platform = kCommOnly;
  s.platform_file = dir.write("comm-only.json", kCommOnly);
  const nlohmann::json series = {{{"label", "dp"}, {"strategy", "dp"}, {"paper", {{"iteration_s_at", iteration_s_at}}}}};
  const nlohmann::json study = study_of(dir.write("one-fc.json", kOneFc), nodes, series);
  const std::string file = dir.write("study.json", study);
  return s.observations.add_study(parse_study(study, file), file);
}

}  // namespace

TEST_CASE("free parameters: present, defaulted, started by hand, refused", "[fit]") {
  TempDir dir;
  const nlohmann::json platform = nlohmann::json::parse(R"({
    "name": "p", "nodes": {"count": 2, "peak": "100Gf", "efficiency": {"gemm": 0.4}, "default_efficiency": 0.3},
    "network": {"bandwidth": "8Gbps", "latency": "5us", "topology": "crossbar"}})");
  const FreeParameter bandwidth = resolve_free_parameter(platform, "p.json", "network.bandwidth");
  CHECK(bandwidth.unit == "Bps");
  CHECK(bandwidth.start == Approx(1e9));  // 8 Gbit/s = 1e9 B/s
  CHECK_FALSE(bandwidth.fraction);
  CHECK(resolve_free_parameter(platform, "p.json", "network.latency").start == Approx(5e-6));
  const FreeParameter gemm = resolve_free_parameter(platform, "p.json", "nodes.efficiency.gemm");
  CHECK((gemm.fraction && gemm.unit.empty() && gemm.start == 0.4));
  // Absent optional fields take their documented defaults.
  CHECK(resolve_free_parameter(platform, "p.json", "nodes.efficiency.pool").start == 0.3);  // default_efficiency
  const FreeParameter busy = resolve_free_parameter(platform, "p.json", "network.busy_bandwidth_fraction");
  CHECK((busy.fraction && busy.start == 0.5 && !busy.note.empty()));  // 1 is the logit's bound
  // A default of 0 cannot be left in log space without a start; with one it can.
  CHECK_THROWS_WITH(resolve_free_parameter(platform, "p.json", "iteration_overhead"), Catch::Contains("give a start"));
  const FreeParameter overhead = resolve_free_parameter(platform, "p.json", "iteration_overhead=2ms");
  CHECK((overhead.unit == "s" && overhead.start == Approx(2e-3)));
  CHECK(resolve_free_parameter(platform, "p.json", "network.reduction_rate=5GBps").start == Approx(5e9));
  // Refused: no such path, not numeric, a strategy option, a start the platform refuses.
  CHECK_THROWS_WITH(resolve_free_parameter(platform, "p.json", "network.bandwdth"), Catch::Contains("has no network.bandwdth"));
  CHECK_THROWS_WITH(resolve_free_parameter(platform, "p.json", "nodes.efficiency.warp"), Catch::Contains("has no"));
  CHECK_THROWS_WITH(resolve_free_parameter(platform, "p.json", "network.topology"), Catch::Contains("not a number"));
  CHECK_THROWS_WITH(resolve_free_parameter(platform, "p.json", "k"), Catch::Contains("strategy option"));
  CHECK_THROWS_AS(resolve_free_parameter(platform, "p.json", "network.bandwidth=fast"), InputError);
  try {
    resolve_free_parameter(platform, "p.json", "network.bandwdth=1Gbps");
    FAIL("an unknown path is refused");
  } catch (const InputError& e) {
    CHECK(e.file() == "command line");
    CHECK(e.json_path() == "--free");
    CHECK(e.value() == "network.bandwdth=1Gbps");
  }
}

TEST_CASE("closed form: dp on 2 ranks, one free bandwidth", "[fit]") {
  TempDir dir;
  Setup s;
  // T(P=2) = 2(2−1)/2 · n/β = n/β, so β = n / T = 2600 B / 5.2 µs = 5e8 B/s.
  REQUIRE(observe_comm_only(dir, s, {2}, {{"2", 5.2e-6}}) == 1);
  s.free = {resolve_free_parameter(s.platform, s.platform_file, "network.bandwidth")};
  CHECK(s.free[0].start == Approx(1.25e9));  // starts at 10 Gbit/s, 2.5 times the answer
  const FitResult fit = fit_parameters(s.predict(), s.observations.observed(), s.free, {s.free[0].start});
  CHECK(fit.values[0] == Approx(5e8).epsilon(1e-6));
  CHECK(fit.predicted[0] == Approx(5.2e-6).epsilon(1e-6));
  CHECK(fit.dof == 0);
  CHECK_FALSE(fit.sigma[0].has_value());  // one observation, one parameter: no residual variance
}

TEST_CASE("closed form with a residual: β and its 1σ from two node counts", "[fit]") {
  TempDir dir;
  Setup s;
  // Observed T(2) = 5.2 µs and T(4) = 7.0 µs; the model is T(P) = c_P/β with c_2 = n = 2600 B and
  // c_4 = 2·3/4·n = 3900 B. With x = ln β and a_P = c_P/T(P), r_P = a_P e^−x − 1, whose least
  // squares has e^−x = Σa / Σa², and σ_x² = s² / Σ(a e^−x)², s² = Σr² / (2 − 1); σ_β = β σ_x.
  const double a2 = 2600 / 5.2e-6, a4 = 3900 / 7.0e-6;
  const double inverse = (a2 + a4) / (a2 * a2 + a4 * a4);
  const double beta = 1 / inverse;
  const double r2 = a2 * inverse - 1, r4 = a4 * inverse - 1;
  const double sigma_beta = beta * std::sqrt((r2 * r2 + r4 * r4) / ((a2 * inverse) * (a2 * inverse) + (a4 * inverse) * (a4 * inverse)));
  REQUIRE(observe_comm_only(dir, s, {1, 2, 4}, {{"2", 5.2e-6}, {"4", 7.0e-6}}) == 2);
  s.free = {resolve_free_parameter(s.platform, s.platform_file, "network.bandwidth")};
  const FitResult fit = fit_parameters(s.predict(), s.observations.observed(), s.free, {s.free[0].start});
  CHECK(fit.values[0] == Approx(beta).epsilon(1e-6));
  REQUIRE(fit.sigma[0].has_value());
  CHECK(*fit.sigma[0] == Approx(sigma_beta).epsilon(1e-4));
  CHECK(fit.dof == 1);
}

namespace {

// A platform whose GEMMs are compute bound (1 TB/s of memory), so both the link bandwidth and
// the GEMM efficiency shape the iteration times; the truth is 2 GB/s and 35 %.
const nlohmann::json kTruth = nlohmann::json::parse(R"({
  "name": "truth", "nodes": {"count": 8, "peak": "100Gf", "memory_bandwidth": "1TBps", "efficiency": {"gemm": 0.35}},
  "network": {"bandwidth": "2GBps", "latency": "2us"}})");

// LeNet-5 with dp and lee at 2, 4 and 8 nodes: iteration times and speedups.
nlohmann::json lenet_series(const std::vector<double>& values) {
  nlohmann::json series = nlohmann::json::array();
  std::size_t next = 0;
  for (const char* strategy : {"dp", "lee"}) {
    nlohmann::json paper = {{"iteration_s_at", nlohmann::json::object()}, {"speedup_at", nlohmann::json::object()}};
    for (const char* nodes : {"2", "4", "8"}) paper["speedup_at"][nodes] = values.empty() ? 1.0 : values[next++];
    for (const char* nodes : {"2", "4", "8"}) paper["iteration_s_at"][nodes] = values.empty() ? 1.0 : values[next++];
    nlohmann::json one = {{"label", strategy}, {"strategy", strategy}, {"paper", paper}};
    if (one["strategy"] == "lee") one["k"] = 5, one["f"] = 1;  // LeNet-5 has 7 counted layers, 3 of them fc
    series.push_back(one);
  }
  return series;
}

}  // namespace

TEST_CASE("the fit recovers a known platform from its own predictions, and leave-one-out is then exact", "[fit]") {
  TempDir dir;
  const std::string file = dir.write("study.json", nlohmann::json::object());
  // Observations made on the truth platform.
  Observations placeholder(analytic_engines());
  placeholder.add_study(parse_study(study_of("lenet-5", {1, 2, 4, 8}, lenet_series({}), 64), file), file);
  const std::vector<double> truth_values = placeholder.predict(parse_platform(kTruth, "truth.json"));
  REQUIRE(truth_values.size() == 12);

  Setup s;
  s.platform = kTruth;
  s.platform["network"]["bandwidth"] = "8GBps";        // 4 times the truth
  s.platform["nodes"]["efficiency"]["gemm"] = 0.7;     // twice the truth
  s.platform_file = "start.json";
  s.observations.add_study(parse_study(study_of("lenet-5", {1, 2, 4, 8}, lenet_series(truth_values), 64), file), file);
  s.free = {resolve_free_parameter(s.platform, s.platform_file, "network.bandwidth"),
            resolve_free_parameter(s.platform, s.platform_file, "nodes.efficiency.gemm")};
  const std::vector<double> start = {s.free[0].start, s.free[1].start};
  const std::vector<double> observed = s.observations.observed();
  // The start is wrong by far more than the tolerance.
  CHECK(mean_abs_error_percent(s.predict()(start), observed) > 10);

  const FitResult fit = fit_parameters(s.predict(), observed, s.free, start);
  CHECK(fit.values[0] == Approx(2e9).epsilon(1e-5));
  CHECK(fit.values[1] == Approx(0.35).epsilon(1e-5));
  CHECK(mean_abs_error_percent(fit.predicted, observed) < 1e-4);
  REQUIRE(fit.sigma[0].has_value());
  CHECK(*fit.sigma[0] < 1e-5 * 2e9);  // an exact fit leaves no residual variance

  const LeaveOneOut loo = leave_one_out(s.predict(), observed, s.free, fit.values);
  CHECK(loo.skipped.empty());
  REQUIRE(loo.rows.size() == observed.size());
  for (const LeaveOneOut::Row& row : loo.rows) {
    CHECK(row.converged);
    CHECK(std::abs(row.relative_error) < 1e-6);
  }
  CHECK(loo.mean_abs_error_percent < 1e-4);
}

TEST_CASE("the fit fails as it should: too few iterations, no observation depends on a parameter", "[fit]") {
  TempDir dir;
  Setup s;
  REQUIRE(observe_comm_only(dir, s, {2}, {{"2", 5.2e-6}}) == 1);
  s.free = {resolve_free_parameter(s.platform, s.platform_file, "network.bandwidth=1Tbps")};
  FitOptions options;
  options.max_iterations = 1;
  CHECK_THROWS_AS(fit_parameters(s.predict(), s.observations.observed(), s.free, {s.free[0].start}, options), FitNotConverged);
  // An observation beyond the platform's range: T = 2·latency + n/β = 1e10 s needs a latency
  // of 5e9 s, past the 1e9 s a time may be. The steps there are refused, never taken.
  Setup beyond;
  REQUIRE(observe_comm_only(dir, beyond, {2}, {{"2", 1e10}}) == 1);
  beyond.free = {resolve_free_parameter(beyond.platform, beyond.platform_file, "network.latency=1e8s")};
  try {
    const FitResult edge = fit_parameters(beyond.predict(), beyond.observations.observed(), beyond.free, {1e8});
    CHECK(edge.refused_steps > 0);
    CHECK(edge.last_refusal.find("network.latency") != std::string::npos);
    CHECK(edge.values[0] <= 1e9);
  } catch (const FitNotConverged& e) {
    CHECK_THAT(e.what(), Catch::Contains("refused"));
  }
  // The network has no LRN layer, so the LRN efficiency changes nothing.
  s.free = {resolve_free_parameter(s.platform, s.platform_file, "nodes.efficiency.lrn")};
  CHECK_THROWS_WITH(fit_parameters(s.predict(), s.observations.observed(), s.free, {s.free[0].start}),
                    Catch::Contains("no observation depends on nodes.efficiency.lrn"));
  // Leave-one-out needs more observations than parameters.
  CHECK_FALSE(leave_one_out(s.predict(), s.observations.observed(), s.free, {0.5}).skipped.empty());
}

TEST_CASE("the --only filter keeps the published numbers it names", "[fit]") {
  const ObservationFilter filter = parse_observation_filter({"nodes=128", "series=DP,lee k=9 f=2"});
  CHECK(filter.keeps("DP", "speedup", 128));
  CHECK_FALSE(filter.keeps("DP", "speedup", 64));
  CHECK_FALSE(filter.keeps("DP+Overlap", "speedup", 128));
  CHECK_FALSE(filter.keeps("DP", "max_speedup", 0));  // a maximum has no node count of its own
  CHECK_THROWS_AS(parse_observation_filter({"colour=red"}), InputError);
  CHECK_THROWS_AS(parse_observation_filter({"quantity=latency"}), InputError);
  Observations observations(analytic_engines());
  CHECK(observations.add_study(load_study("lee2017-fig6-vgg-a"), "fig6", parse_observation_filter({"series=DP"})) == 1);
  REQUIRE(observations.size() == 1);
  CHECK(observations.list()[0].observed == 19.92);
  CHECK(observations.list()[0].network == "vgg-a");
  CHECK(observations.list()[0].path == "/series/1/paper/speedup_at/128");
}

TEST_CASE("a trace's configuration is rebuilt from its metadata, slowed-down ranks and measured FP32 included", "[fit]") {
  const Platform platform = parse_platform(kTruth, "truth.json");
  // The "measurement": lee on LeNet-5 over 4 ranks, rank 2 three times as slow, FP32 messages
  // as cnnpar-run sends them (the platform's element size is 4 already; a real trace says so).
  StrategyOptions options{.name = "lee", .global_batch = 32, .ranks = 4, .iterations = 4, .warmup_iterations = 1,
                          .recompute_columns = true};
  options.set("k", 5).set("f", 1);
  Platform slowed = platform;
  slowed.slow_down(2, 3.0);
  const Network network = load_network("lenet-5");
  Trace trace = make_analytic_engine()->run(build_schedule(network, slowed, options), slowed);
  trace.metadata["slowdown"] = {{"2", 3.0}};
  trace.engine = "real";
  const TraceMetrics metrics = compute_metrics(trace);
  const double mean_s = std::accumulate(metrics.iteration_times_s.begin(), metrics.iteration_times_s.end(), 0.0) /
                        double(metrics.iteration_times_s.size());

  Observations observations(analytic_engines());
  observations.add_trace(trace, "measured.json");
  REQUIRE(observations.size() == 1);
  const Observation& o = observations.list()[0];
  CHECK(o.observed == mean_s);
  CHECK(o.nodes == 4);
  CHECK(o.measured_iterations == 3);
  CHECK(o.network == "lenet-5");
  // Predicted on the platform it was made on, the trace's own time comes back.
  CHECK(observations.predict(platform)[0] == Approx(mean_s).epsilon(1e-12));
  // Without the slowed rank the prediction would be faster: the slowdown is applied.
  Trace unslowed = trace;
  unslowed.metadata.erase("slowdown");
  Observations plain(analytic_engines());
  plain.add_trace(unslowed, "measured.json");
  CHECK(plain.predict(platform)[0] < 0.99 * mean_s);
  // A trace without measured iterations, or without its strategy, is refused.
  Trace no_strategy = trace;
  no_strategy.metadata.erase("strategy");
  CHECK_THROWS_WITH(plain.add_trace(no_strategy, "measured.json"), Catch::Contains("/metadata/strategy"));
}

TEST_CASE("a held-out study's number that the fit saw is marked, not counted as held out", "[fit]") {
  // Lee's Fig. 10 publishes Fig. 6's lee k=9 f=2 speedup at 128 nodes again.
  Observations fig6(analytic_engines()), fig10(analytic_engines()), fig8(analytic_engines());
  fig6.add_study(load_study("lee2017-fig6-vgg-a"), "fig6");
  fig10.add_study(load_study("lee2017-fig10-f"), "fig10");
  fig8.add_study(load_study("lee2017-fig8-batch"), "fig8");
  const Platform cori = load_platform("cori-haswell");
  const HeldOut again = predict_held_out("lee2017-fig10-f", fig10, cori, cori, fig6.list(), true);
  REQUIRE(again.fitted_on.size() == 1);
  CHECK(again.fitted_on[0]);
  CHECK(again.unseen == 0);
  // On another platform the same configuration is a different prediction: held out.
  CHECK_FALSE(predict_held_out("lee2017-fig10-f", fig10, cori, cori, fig6.list(), false).fitted_on[0]);
  // Fig. 8's maxima are other quantities (and batches): all held out.
  const HeldOut batches = predict_held_out("lee2017-fig8-batch", fig8, cori, cori, fig6.list(), true);
  CHECK(batches.unseen == 3);
  CHECK(batches.unseen_mean_abs_error_percent == Approx(batches.mean_abs_error_percent));
}
