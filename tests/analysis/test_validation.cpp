// The validation grid, the diagnosis of a miss and the fidelity report (experiments/validation.hpp),
// on hand-written grids and hand-built traces whose numbers are worked out in the comments.
#include <catch2/catch.hpp>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "base/statistics.hpp"
#include "experiments/validation.hpp"
#include "hand_trace.hpp"

using namespace cnnpar;

namespace {

constexpr double kTol = 1e-9;

nlohmann::json small_grid() {
  return nlohmann::json::parse(R"({
    "format": "cnnpar-validation",
    "name": "unit",
    "networks": ["veeriah-cifar10", "vgg-a-32"],
    "strategies": ["dp", {"strategy": "lee", "k": 3, "f": 1}],
    "bandwidths": ["100Mbps", "1Gbps"],
    "latencies": ["native", "50us"],
    "batches": [32, 64],
    "ranks": [2, 4]
  })");
}

/** The InputError a grid raises, or a failed check. */
InputError grid_error(const nlohmann::json& grid) {
  try {
    (void)parse_validation_grid(grid, "grid.json");
  } catch (const InputError& error) {
    return error;
  }
  FAIL("the grid was accepted");
  return InputError("", "", "", "");
}

// One rank's iterations 0 (warm-up), 1, 2, each `iteration_s` long from 0: a compute op, then
// (or, when `overlapped`, beside it) one allreduce of `bytes`.
//  * not overlapped: op [t, t+compute], posted and started at t+compute, ends at t+compute+comm,
//    waited for from its post; the mark at its end;
//  * overlapped: posted and started at t, op [t, t+compute], waited for from t+compute to the
//    collective's end (or not at all when it ended before); the mark at max of both ends.
RankTrace rank_of(int rank, double compute_s, double comm_s, double bytes, bool overlapped, double gap_s = 0) {
  RankTrace r;
  r.rank = rank;
  double t = 0;
  for (int it = 0; it < 3; ++it) {
    const int id = it;
    if (!overlapped) {
      r.compute.push_back(test::op(2 * it, "conv1.fwd", 0, Phase::forward, t, t + compute_s));
      const double post = t + compute_s + gap_s;
      CollectiveRecord c = test::coll(id, it, post, post, post + comm_s, post, post + comm_s, bytes);
      r.collectives.push_back(c);
      t = post + comm_s;
    } else {
      r.compute.push_back(test::op(2 * it, "conv1.fwd", 0, Phase::forward, t, t + compute_s));
      const double end = std::max(t + compute_s, t + comm_s);
      CollectiveRecord c = test::coll(id, it, t, t, t + comm_s, t + compute_s, end, bytes);
      r.collectives.push_back(c);
      t = end;
    }
    r.marks.push_back({it, t});
  }
  return r;
}

Trace trace_of(double compute_s, double comm_s, double bytes, bool overlapped, double gap_s = 0) {
  Trace t;
  t.engine = "hand";
  t.warmup_iterations = 1;
  for (int r = 0; r < 2; ++r) t.ranks.push_back(rank_of(r, compute_s, comm_s, bytes, overlapped, gap_s));
  return t;
}

Diagnosis diagnosis_of(const Trace& predicted, const Trace& measured) {
  return diagnose(predicted, compute_metrics(predicted), measured, compute_metrics(measured), 5);
}

constexpr double kLarge_bytes = 8.0 * 1024 * 1024;  // allreduce at P = 2: 4 MiB a step
constexpr double kSmall_bytes = 1024;

}  // namespace

TEST_CASE("quantile interpolates between order statistics (type 7) and median is its 0.5", "[validation]") {
  // Sorted 1, 2, 4, 10: h = 3·0.25 = 0.75 → 1 + 0.75·(2 − 1) = 1.75; h = 3·0.75 = 2.25 → 4 + 0.25·6 = 5.5.
  const std::vector<double> v = {10, 1, 4, 2};
  CHECK(quantile(v, 0.25) == Approx(1.75).epsilon(kTol));
  CHECK(quantile(v, 0.75) == Approx(5.5).epsilon(kTol));
  CHECK(quantile(v, 0.0) == 1);
  CHECK(quantile(v, 1.0) == 10);
  CHECK(median(v) == Approx(3.0).epsilon(kTol));  // (2 + 4) / 2
  CHECK(median({5, 1, 3}) == 3);
  CHECK(quantile({}, 0.5) == 0);
}

TEST_CASE("a grid is the cross product of its dimensions, in order", "[validation]") {
  const ValidationGrid grid = parse_validation_grid(small_grid(), "grid.json");
  // links: bandwidth × latency, latency fastest: 100Mbps, 100Mbps 50us, 1Gbps, 1Gbps 50us
  REQUIRE(grid.links.size() == 4);
  CHECK(grid.links[0].label() == "100Mbps");
  CHECK(grid.links[1].label() == "100Mbps 50us");
  CHECK(grid.links[1].key() == "100Mbps_50us");
  CHECK(grid.links[2].bandwidth_Bps == Approx(1e9 / 8).epsilon(kTol));  // 1 Gbit/s in bytes per second
  CHECK(grid.links[3].latency_s == Approx(50e-6).epsilon(kTol));
  CHECK(grid.testbed_nodes == 4);  // the largest rank count
  const std::vector<ValidationConfig> configs = validation_configs(grid);
  // 2 networks × 2 strategies × 4 links × 2 batches × 2 rank counts
  REQUIRE(configs.size() == 64);
  CHECK(config_label(grid, configs[0]) == "veeriah-cifar10 dp, 100Mbps, batch 32, 2 ranks");
  CHECK(config_key(grid, configs[1]) == "veeriah-cifar10_dp_100Mbps_b32_p4");
  CHECK(configs[0].compute == "real");
  CHECK(configs[1].compute == "sleep");  // 4 ranks > real_compute_max_ranks 2
  const ValidationConfig& lee = configs[16];  // second strategy, first link, first batch, first ranks
  CHECK(strategy_label(lee.strategy) == "lee k=3 f=1");
  CHECK(config_key(grid, lee) == "veeriah-cifar10_lee-k3-f1_100Mbps_b32_p2");
  CHECK(config_key(grid, configs[2]) == "veeriah-cifar10_dp_100Mbps_b64_p2");
  CHECK(config_key(grid, configs[4]) == "veeriah-cifar10_dp_100Mbps_50us_b32_p2");
  CHECK(lee.strategy.iterations == grid.iterations);
  CHECK(config_settings(grid, lee) == "12 iterations (2 warm-up), real compute, thread progress, p2p collectives, platform local");
}

TEST_CASE("a finished run is not reused under other conv paths: the settings name them", "[validation]") {
  nlohmann::json document = small_grid();
  ValidationGrid grid = parse_validation_grid(document, "grid.json");
  const std::string default_settings = config_settings(grid, validation_configs(grid).front());
  document["conv"] = "auto";  // the default: the settings of work folders made before `conv`
  grid = parse_validation_grid(document, "grid.json");
  CHECK(config_settings(grid, validation_configs(grid).front()) == default_settings);
  document["conv"] = "direct";
  grid = parse_validation_grid(document, "grid.json");
  CHECK(config_settings(grid, validation_configs(grid).front()) == default_settings + ", conv direct");
  document["conv"] = "im2col";
  grid = parse_validation_grid(document, "grid.json");
  CHECK(config_settings(grid, validation_configs(grid).front()) == default_settings + ", conv im2col");
}

TEST_CASE("collectives modes are the outermost axis: a one-mode grid keeps its order and keys", "[validation]") {
  nlohmann::json document = small_grid();
  const std::vector<ValidationConfig> p2p_only = validation_configs(parse_validation_grid(document, "grid.json"));
  document["collectives"] = {"p2p", "mpi"};
  const ValidationGrid grid = parse_validation_grid(document, "grid.json");
  CHECK(grid.collectives == std::vector<std::string>{"p2p", "mpi"});
  const std::vector<ValidationConfig> configs = validation_configs(grid);
  // 2 modes × the 64 configurations of one mode, the p2p ones first and as before
  REQUIRE(configs.size() == 2 * p2p_only.size());
  for (std::size_t i = 0; i < p2p_only.size(); ++i) {
    CHECK(configs[i].collectives == "p2p");
    CHECK(config_key(grid, configs[i]) == config_key(grid, p2p_only[i]));
  }
  const ValidationConfig& mpi = configs[p2p_only.size()];
  CHECK(mpi.collectives == "mpi");
  CHECK(config_key(grid, mpi) == "veeriah-cifar10_dp_100Mbps_b32_p2_mpi");
  CHECK(config_label(grid, mpi) == "veeriah-cifar10 dp, 100Mbps, batch 32, 2 ranks, mpi collectives");
  CHECK(config_settings(grid, mpi) == "12 iterations (2 warm-up), real compute, thread progress, mpi collectives, platform local");
  // One value is a list of one.
  document["collectives"] = "mpi";
  CHECK(parse_validation_grid(document, "grid.json").collectives == std::vector<std::string>{"mpi"});
}

TEST_CASE("measure_seconds sets how many iterations a fast configuration runs", "[validation]") {
  nlohmann::json document = small_grid();
  ValidationGrid grid = parse_validation_grid(document, "grid.json");
  CHECK(run_iterations(grid, 0.04) == grid.iterations);  // off by default
  document["measure_seconds"] = 3;
  document["warmup"] = 3;
  grid = parse_validation_grid(document, "grid.json");
  // 3 warm-up + ceil(3 s / 0.04 s) = 3 + 75 = 78 measured-time iterations
  CHECK(run_iterations(grid, 0.04) == 78);
  CHECK(run_iterations(grid, 4.0) == 12);                  // slow: the grid's 12 are enough
  CHECK(run_iterations(grid, 1e-6) == kMaxValidationIterations);
  CHECK(config_settings(grid, validation_configs(grid).front()) ==
        "12 iterations (3 warm-up), at least 3 s measured, real compute, thread progress, p2p collectives, platform local");
  document["measure_seconds"] = -1;
  CHECK_THROWS_WITH(parse_validation_grid(document, "grid.json"), Catch::Contains("/measure_seconds"));
}

TEST_CASE("a bad grid names the file, the JSON path and the value", "[validation]") {
  SECTION("an unknown network") {
    nlohmann::json g = small_grid();
    g["networks"][1] = "resnet-9000";
    const InputError e = grid_error(g);
    CHECK(e.file() == "grid.json");
    CHECK(e.json_path() == "/networks/1");
    CHECK(e.value() == "resnet-9000");
  }
  SECTION("a bandwidth whose unit does not parse") {
    nlohmann::json g = small_grid();
    g["bandwidths"][1] = "1Gbit";
    const InputError e = grid_error(g);
    CHECK(e.json_path() == "/bandwidths/1");
    CHECK(e.value() == "1Gbit");
  }
  SECTION("more ranks than the testbed has nodes") {
    nlohmann::json g = small_grid();
    g["testbed"] = {{"nodes", 2}};
    const InputError e = grid_error(g);
    CHECK(e.json_path() == "/ranks/1");
    CHECK(e.value() == "4");
  }
  SECTION("a batch the rank counts do not divide") {
    nlohmann::json g = small_grid();
    g["batches"] = {30};
    const InputError e = grid_error(g);
    CHECK(e.json_path() == "/batches/0");
    CHECK_THAT(e.reason(), Catch::Contains("divisible"));
  }
  SECTION("an option the strategy does not take, and an unknown strategy") {
    nlohmann::json g = small_grid();
    g["strategies"][1]["bucket_bytes"] = "1MiB";
    CHECK(grid_error(g).json_path() == "/strategies/1/bucket_bytes");
    g = small_grid();
    g["strategies"][0] = "magic";
    CHECK(grid_error(g).json_path() == "/strategies/0/strategy");
  }
  SECTION("k beyond the network's counted layers, at the strategy's own path") {
    nlohmann::json g = small_grid();
    g["strategies"][1]["k"] = 12;  // veeriah-cifar10 counts 6 layers
    const InputError e = grid_error(g);
    CHECK(e.json_path() == "/strategies/1/k");
    CHECK(e.value() == "12");
  }
  SECTION("run attempts and the compute speed tolerance") {
    nlohmann::json g = small_grid();
    g["run_attempts"] = 0;
    CHECK(grid_error(g).json_path() == "/run_attempts");
    g["run_attempts"] = 2;
    g["tolerance"] = {{"compute_speed_percent", -1}};
    const InputError e = grid_error(g);
    CHECK(e.json_path() == "/tolerance/compute_speed_percent");
    CHECK(e.value() == "-1");
    g["tolerance"]["compute_speed_percent"] = 15;
    const ValidationGrid grid = parse_validation_grid(g, "grid.json");
    CHECK(grid.run_attempts == 2);
    CHECK(grid.compute_speed_tolerance_percent == 15);
  }
  SECTION("calibrating compute again is on unless the grid turns it off, with a boolean") {
    nlohmann::json g = small_grid();
    CHECK(parse_validation_grid(g, "grid.json").recalibrate_compute);
    g["calibration"] = {{"recalibrate_compute", false}};
    CHECK_FALSE(parse_validation_grid(g, "grid.json").recalibrate_compute);
    g["calibration"]["recalibrate_compute"] = "yes";
    const InputError e = grid_error(g);
    CHECK(e.json_path() == "/calibration/recalibrate_compute");
    CHECK(e.value() == "yes");
  }
  SECTION("a collectives mode that is not one, twice, or none") {
    nlohmann::json g = small_grid();
    g["collectives"] = "nccl";
    InputError e = grid_error(g);
    CHECK(e.json_path() == "/collectives");
    CHECK(e.value() == "nccl");
    g["collectives"] = {"p2p", "shm"};
    e = grid_error(g);
    CHECK(e.json_path() == "/collectives/1");
    CHECK(e.value() == "shm");
    g["collectives"] = {"mpi", "mpi"};
    e = grid_error(g);
    CHECK(e.json_path() == "/collectives/1");
    CHECK_THAT(e.reason(), Catch::Contains("twice"));
    g["collectives"] = nlohmann::json::array();
    CHECK(grid_error(g).json_path() == "/collectives");
  }
  SECTION("an unknown member and a progress mode") {
    nlohmann::json g = small_grid();
    g["bandwidth"] = {"1Gbps"};
    CHECK(grid_error(g).json_path() == "/bandwidth");
    g = small_grid();
    g["comm_progress"] = "spin";
    CHECK(grid_error(g).json_path() == "/comm_progress");
  }
}

TEST_CASE("compute speed check: the measured iterations' GEMMs that no collective of any rank overlapped", "[validation]") {
  const auto with_kernel = [](Trace t, KernelClass kernel) {
    for (RankTrace& rank : t.ranks)
      for (ComputeRecord& op : rank.compute) op.kernel = kernel;
    return t;
  };
  // Not overlapped: each rank computes 1.0 s predicted, then allreduces 0.5 s; measured 1.2 s.
  // Only iterations 1 and 2 count (1 warm-up); both ranks' ops ran alone: 4 ops,
  // ratio = (4 · 1.2) / (4 · 1.0) = 1.2, share 1.
  const Trace predicted_alone = with_kernel(trace_of(1.0, 0.5, kLarge_bytes, false), KernelClass::gemm);
  const Trace measured_alone = with_kernel(trace_of(1.2, 0.5, kLarge_bytes, false), KernelClass::gemm);
  const std::optional<ComputeSpeedCheck> alone = compute_speed_check(predicted_alone, measured_alone);
  REQUIRE(alone);
  CHECK(alone->ops == 4);
  CHECK(alone->ratio == Approx(1.2).epsilon(kTol));
  CHECK(alone->share == Approx(1.0).epsilon(kTol));
  // The same ops as element-wise ones: the roofline's, not the GEMM grid's; nothing to check.
  CHECK_FALSE(compute_speed_check(with_kernel(predicted_alone, KernelClass::eltwise),
                                  with_kernel(measured_alone, KernelClass::eltwise)));

  // Overlapped: every op runs beside a collective (0.5 s of a 1.0 s op = 50 % > 25 %): no op
  // is undisturbed, so there is nothing to check.
  CHECK_FALSE(compute_speed_check(with_kernel(trace_of(1.0, 0.5, kLarge_bytes, true), KernelClass::gemm),
                                  with_kernel(trace_of(1.0, 0.5, kLarge_bytes, true), KernelClass::gemm)));

  // Another rank's collective disturbs too. Rank 1 overlaps: op [t, t+1] beside a 1 s
  // allreduce, t = 0, 1, 2 (marks 1, 2, 3), so its collectives cover [0, 3]. Rank 0 does not:
  // ops [0, 1], [1.5, 2.5], [3, 4], marks 1.5, 3, 4.5. Measured iterations: rank 0's ops at 1.5
  // and 3, rank 1's at 1 and 2 (all 1 s predicted). Rank 1's own collectives cover its ops;
  // rank 0's op at 1.5 lies inside rank 1's; only rank 0's op at 3 ran undisturbed:
  // 1 op, share 1 / 4, and its measured 1.1 s against 1.0 s.
  Trace predicted = trace_of(1.0, 0.5, kLarge_bytes, false);
  predicted.ranks[1] = rank_of(1, 1.0, 1.0, kLarge_bytes, true);
  predicted = with_kernel(predicted, KernelClass::gemm);
  Trace measured = predicted;
  measured.ranks[0].compute[2].end_s += 0.1;  // the op at 3 s: [3, 4.1]
  const std::optional<ComputeSpeedCheck> shared = compute_speed_check(predicted, measured);
  REQUIRE(shared);
  CHECK(shared->ops == 1);
  CHECK(shared->share == Approx(0.25).epsilon(kTol));
  CHECK(shared->ratio == Approx(1.1).epsilon(kTol));

  // Off means further than the tolerance from 1, either way; −1 (not checked) never is.
  CHECK_FALSE(compute_speed_off(1.05, 10));
  CHECK(compute_speed_off(1.2, 10));
  CHECK(compute_speed_off(0.85, 10));
  CHECK_FALSE(compute_speed_off(-1, 10));
}

TEST_CASE("diagnose: within tolerance, and a compute miss", "[validation]") {
  // Predicted compute 1.0 s + comm 0.5 s = 1.5 s; measured 1.02 + 0.5 = 1.52 s: −1.3 %, within 5 %.
  const Trace predicted = trace_of(1.0, 0.5, kLarge_bytes, false);
  CHECK(diagnosis_of(predicted, trace_of(1.02, 0.5, kLarge_bytes, false)).cause == MissCause::none);
  // Measured 1.2 + 0.5 = 1.7 s: −11.8 %; compute −0.2 s, exposed 0: the op ran alone → compute.
  const Diagnosis d = diagnosis_of(predicted, trace_of(1.2, 0.5, kLarge_bytes, false));
  CHECK(d.cause == MissCause::compute);
  CHECK_THAT(d.explanation, Catch::Contains("-11.8 %"));
}

TEST_CASE("diagnose: compute slowed while communication progresses is progress", "[validation]") {
  // Overlapped: predicted op 1.0 s beside a 0.5 s collective: iteration 1.0 s, nothing exposed.
  // Measured op 1.3 s (the collective's 0.5 s cover 38 % of it): iteration 1.3 s, −23 %,
  // all of it compute → in ops that overlapped communication → progress.
  const Diagnosis d = diagnosis_of(trace_of(1.0, 0.5, kLarge_bytes, true), trace_of(1.3, 0.5, kLarge_bytes, true));
  CHECK(d.cause == MissCause::progress);
}

TEST_CASE("diagnose: a collective that stalls during compute is progress", "[validation]") {
  // Predicted: op 1.0 s beside a 0.5 s collective → 1.0 s. Measured: the collective takes 1.5 s
  // (it moves only when polled) → iteration 1.5 s, exposed 0.5 s: −33 %, all exposed. It ran
  // during compute (1.0 of its 1.5 s) and is predicted 0.5/1.5 − 1 = −66.7 % → progress.
  const Diagnosis d = diagnosis_of(trace_of(1.0, 0.5, kLarge_bytes, true), trace_of(1.0, 1.5, kLarge_bytes, true));
  CHECK(d.cause == MissCause::progress);
  CHECK_THAT(d.explanation, Catch::Contains("-66.7 %"));
}

TEST_CASE("diagnose: large collectives alone miss on bandwidth, small ones on latency", "[validation]") {
  // 8 MiB allreduce at 2 ranks: 4 MiB steps. Predicted 1.0 + 0.5 s, measured 1.0 + 0.6 s: −6.25 %,
  // all exposed communication, of a collective alone ≥ 1 MiB a step → effective bandwidth.
  const Diagnosis bandwidth =
      diagnosis_of(trace_of(1.0, 0.5, kLarge_bytes, false), trace_of(1.0, 0.6, kLarge_bytes, false));
  CHECK(bandwidth.cause == MissCause::effective_bandwidth);
  // 1 KiB: 0.01 s predicted, 0.2 s measured: 1.01 s against 1.2 s → latency.
  const Diagnosis latency =
      diagnosis_of(trace_of(1.0, 0.01, kSmall_bytes, false), trace_of(1.0, 0.2, kSmall_bytes, false));
  CHECK(latency.cause == MissCause::latency);
  // 256 KiB (128 KiB steps): between the bounds → TCP behaviour.
  const Diagnosis tcp =
      diagnosis_of(trace_of(1.0, 0.05, 256 * 1024.0, false), trace_of(1.0, 0.2, 256 * 1024.0, false));
  CHECK(tcp.cause == MissCause::tcp_behaviour);
}

TEST_CASE("diagnose: time that is neither compute nor exposed communication is contention", "[validation]") {
  // Measured ranks idle 0.3 s between the op and the post: iteration 1.8 s against 1.5 s, with
  // compute and exposed communication as predicted → the 0.3 s is waiting: contention.
  const Diagnosis d = diagnosis_of(trace_of(1.0, 0.5, kLarge_bytes, false), trace_of(1.0, 0.5, kLarge_bytes, false, 0.3));
  CHECK(d.cause == MissCause::contention);
}

namespace {

/** Ranks that compute `compute_s[r]`, idle `gap_s[r]`, then post one allreduce that every rank
 *  completes `comm_s` after the last one posted it (as a real collective does); iterations 0
 *  (warm-up), 1, 2 back to back, marks at the collective's end. */
Trace skewed_trace(const std::vector<double>& compute_s, const std::vector<double>& gap_s, double comm_s, double bytes) {
  Trace t;
  t.engine = "hand";
  t.warmup_iterations = 1;
  t.ranks.resize(compute_s.size());
  double begin = 0;
  for (int it = 0; it < 3; ++it) {
    double last_post = 0;
    for (std::size_t r = 0; r < compute_s.size(); ++r) last_post = std::max(last_post, begin + compute_s[r] + gap_s[r]);
    const double end = last_post + comm_s;
    for (std::size_t r = 0; r < compute_s.size(); ++r) {
      RankTrace& rank = t.ranks[r];
      rank.rank = int(r);
      rank.compute.push_back(test::op(2 * it, "conv1.fwd", 0, Phase::forward, begin, begin + compute_s[r]));
      const double post = begin + compute_s[r] + gap_s[r];
      rank.collectives.push_back(test::coll(it, it, post, post, end, post, end, bytes));
      rank.marks.push_back({it, end});
    }
    begin = end;
  }
  return t;
}

}  // namespace

TEST_CASE("diagnose times a transfer from its last member's start, and names rank skew contention", "[validation]") {
  // Predicted: both ranks compute 1.0 s, a 1 KiB allreduce takes 0.01 s: 1.01 s an iteration.
  const Trace predicted = skewed_trace({1.0, 1.0}, {0, 0}, 0.01, kSmall_bytes);
  // Measured: rank 1 idles 0.3 s before it posts; the transfer still takes 0.01 s from then.
  // Iteration 1.31 s (−22.9 %); compute as predicted; rank 0's T_c and T_b grow by 0.3 s, which
  // is waiting for rank 1, not a slow 1 KiB transfer: contention, not latency.
  const Trace measured = skewed_trace({1.0, 1.0}, {0, 0.3}, 0.01, kSmall_bytes);
  const Diagnosis d = diagnosis_of(predicted, measured);
  CHECK(d.cause == MissCause::contention);
  CHECK_THAT(d.explanation, Catch::Contains("+0.0 %"));  // the transfers themselves are right
  // The same skew on top of a transfer 5 times too slow (0.05 s measured): latency again.
  const Diagnosis both = diagnosis_of(skewed_trace({1.0, 1.0}, {0, 0}, 0.01, kSmall_bytes),
                                      skewed_trace({1.0, 1.0}, {0, 0.03}, 0.4, kSmall_bytes));
  CHECK(both.cause == MissCause::latency);
}

namespace {

ConfigResult result_of(const std::string& strategy, double measured_s, double predicted_s, double r_measured,
                       double r_predicted, double spread_s = 0.01) {
  ConfigResult r;
  r.key = "net_" + strategy;
  r.label = "net " + strategy;
  r.network = "net";
  r.strategy = strategy;
  r.link = "1Gbps";
  r.batch = 64;
  r.ranks = 2;
  r.compute = "real";
  r.settings = "s";
  r.measured.iteration_s = measured_s;
  r.measured.iteration_q25_s = measured_s - spread_s;
  r.measured.iteration_q75_s = measured_s + spread_s;
  r.measured.overlap_ratio_percent = r_measured;
  r.predicted["analytic"].iteration_s = predicted_s;
  r.predicted["analytic"].overlap_ratio_percent = r_predicted;
  return r;
}

}  // namespace

TEST_CASE("the report: MAPE, R error and rankings by measured interquartile ranges", "[validation]") {
  ValidationGrid grid = parse_validation_grid(small_grid(), "grid.json");
  // Errors +10 %, −20 %, 0 % → MAPE 10 %. R errors |40 − 50| = 10, 0, |26 − 20| = 6 → 16/3 points.
  std::vector<ConfigResult> results = {result_of("dp", 1.0, 1.1, 50, 40), result_of("lee", 2.0, 1.6, 0, 0),
                                       result_of("hybrid", 1.5, 1.5, 20, 26)};
  const ValidationReport report = summarize_validation(grid, results);
  REQUIRE(report.engines.count("analytic") == 1);
  const EngineSummary& s = report.engines.at("analytic");
  CHECK(s.mape_percent == Approx(10.0).epsilon(kTol));
  CHECK(s.max_abs_error_percent == Approx(20.0).epsilon(kTol));
  CHECK(s.r_mae_points == Approx(16.0 / 3).epsilon(kTol));
  CHECK(s.within_tolerance == 1);
  // One group of three strategies. Measured: dp 1.0 < hybrid 1.5 < lee 2.0, every pair decided
  // (IQRs ±0.01 s). Predicted: dp 1.1 < hybrid 1.5 < lee 1.6: all three pairs agree.
  REQUIRE(report.rankings.size() == 1);
  CHECK(report.rankings[0].decided_pairs == 3);
  CHECK(report.rankings[0].agreeing_pairs.at("analytic") == 3);
  CHECK(report.rankings[0].agrees.at("analytic"));
  CHECK(report.rankings[0].measured_order == std::vector<std::string>{"dp", "hybrid", "lee"});
  CHECK(report.mape_by.at("strategy").at("lee").at("analytic") == Approx(20.0).epsilon(kTol));
  const nlohmann::json json = to_json(report);
  CHECK(json.at("mape_percent").at("analytic").get<double>() == Approx(10.0).epsilon(kTol));
  CHECK(json.at("r_mae_points").at("analytic").get<double>() == Approx(16.0 / 3).epsilon(kTol));

  // lee predicted 1.4 s: faster than hybrid's 1.5 s, but measured slower → that pair disagrees.
  results[1].predicted["analytic"].iteration_s = 1.4;
  const ValidationReport swapped = summarize_validation(grid, results);
  CHECK(swapped.rankings[0].agreeing_pairs.at("analytic") == 2);
  CHECK_FALSE(swapped.rankings[0].agrees.at("analytic"));
  // With wide measured IQRs (±0.3 s) hybrid and lee overlap (1.2..1.8, 1.7..2.3): undecided, so
  // the prediction's order of that pair does not count.
  for (ConfigResult& r : results) r.measured.iteration_q25_s = r.measured.iteration_s - 0.3, r.measured.iteration_q75_s = r.measured.iteration_s + 0.3;
  const ValidationReport noisy = summarize_validation(grid, results);
  CHECK(noisy.rankings[0].decided_pairs == 1);  // only dp (0.7..1.3) against lee (1.7..2.3)
  CHECK(noisy.rankings[0].agrees.at("analytic"));
}

TEST_CASE("the report gives the MAPE by collectives mode and ranks each mode apart", "[validation]") {
  nlohmann::json document = small_grid();
  document["collectives"] = {"p2p", "mpi"};
  const ValidationGrid grid = parse_validation_grid(document, "grid.json");
  // p2p: dp +10 %, lee -20 % → 15 %; mpi: dp 0 %, lee +4 % → 2 %; all four → 8.5 %.
  std::vector<ConfigResult> results = {result_of("dp", 1.0, 1.1, 0, 0), result_of("lee", 2.0, 1.6, 0, 0),
                                       result_of("dp", 1.0, 1.0, 0, 0), result_of("lee", 2.0, 2.08, 0, 0)};
  results[2].collectives = results[3].collectives = "mpi";
  const ValidationReport report = summarize_validation(grid, results);
  CHECK(report.engines.at("analytic").mape_percent == Approx(8.5).epsilon(kTol));
  CHECK(report.mape_by.at("collectives").at("p2p").at("analytic") == Approx(15.0).epsilon(kTol));
  CHECK(report.mape_by.at("collectives").at("mpi").at("analytic") == Approx(2.0).epsilon(kTol));
  // The two modes' runs are two ranking groups, not one of four.
  REQUIRE(report.rankings.size() == 2);
  CHECK_THAT(report.rankings[1].label, Catch::EndsWith(", mpi collectives"));
  CHECK_THAT(validation_csv(report), Catch::Contains(",real,mpi,analytic,"));
  CHECK(config_result_from_json(to_json(results[2]), "result.json").collectives == "mpi");
}

TEST_CASE("a configuration's result reads back as written", "[validation]") {
  ConfigResult r = result_of("lee k=3 f=1", 0.5, 0.52, 30, 35);
  r.diagnosis["analytic"] = Diagnosis{MissCause::tcp_behaviour, "why"};
  r.load_average = 0.7;
  const ConfigResult back = config_result_from_json(to_json(r), "result.json");
  CHECK(back.strategy == r.strategy);
  CHECK(back.error_percent("analytic") == Approx(4.0).epsilon(1e-9));  // 0.52 / 0.5 − 1
  CHECK(back.diagnosis.at("analytic").cause == MissCause::tcp_behaviour);
  CHECK(back.measured.iteration_q75_s == r.measured.iteration_q75_s);
  CHECK(back.load_average == 0.7);
  CHECK(back.compute_speed_ratio == -1);  // not checked (sleep compute, or a result from before the check)
  r.compute_speed_ratio = 1.04;
  r.attempt_compute_speed_ratios = {1.31, 1.04};
  const ConfigResult checked = config_result_from_json(to_json(r), "result.json");
  CHECK(checked.compute_speed_ratio == 1.04);
  CHECK(checked.attempt_compute_speed_ratios == std::vector<double>{1.31, 1.04});
  CHECK_FALSE(checked.compute_recalibrated);
  r.compute_recalibrated = true;
  CHECK(config_result_from_json(to_json(r), "result.json").compute_recalibrated);
  // The report counts it: one configuration measured again, after calibrating compute again.
  const ValidationReport report = summarize_validation(parse_validation_grid(small_grid(), "grid.json"), {r});
  const nlohmann::json speed = to_json(report).at("compute_speed_check");
  CHECK(speed.at("remeasured") == 1);
  CHECK(speed.at("recalibrated") == 1);
  CHECK_THAT(validation_csv(report), Catch::Contains(",1.0400,2,true\n"));
  nlohmann::json before_check = to_json(r);
  before_check.erase("collectives");  // written before collectives were a grid axis: p2p
  CHECK(config_result_from_json(before_check, "result.json").collectives == "p2p");
  before_check.erase("compute_speed_ratio");
  before_check.erase("attempt_compute_speed_ratios");
  CHECK(config_result_from_json(before_check, "result.json").attempt_compute_speed_ratios.empty());
  nlohmann::json damaged = to_json(r);
  damaged["diagnosis"]["analytic"]["cause"] = "gremlins";
  CHECK_THROWS_AS(config_result_from_json(damaged, "result.json"), InputError);
}
