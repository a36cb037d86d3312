// The Runtime driven by the strategy builders' schedules, several ranks in one process
// (LocalExecutor emulates the collectives by summing / concatenating buffers).
//
// Expected values come from the sequential algorithm: data-parallel SGD with the loss
// normalised by the global batch is the same computation as P = 1, only the order of the
// floating-point sums differs, so weights agree to FP32 rounding (tolerance kWeightTolerance,
// relative to the largest weight).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "real/dataset.hpp"
#include "real/kernels.hpp"
#include "real/local_executor.hpp"
#include "real/runtime.hpp"
#include "tests/real/real_test_util.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using namespace cnnpar::real;
using cnnpar::real::testing::make_schedule;
using cnnpar::real::testing::relative_difference;
using cnnpar::real::testing::small_network;

namespace {

constexpr double kWeightTolerance = 1e-4;
constexpr std::uint64_t kSeed = 5;
const SgdConfig kSgd{0.05f, 0.9f, 5e-4f};

std::vector<float> train(const Network& net, const Schedule& s, const Dataset& data,
                         std::vector<double>* losses = nullptr) {
  LocalExecutor ex(net, s, kSeed, kSgd);
  auto l = ex.run(data);
  if (losses) *losses = l;
  return ex.runtime(0).flat_weights();
}

// A schedule of 8 images per iteration with synchronised batchnorm (sync_bn on) and `values`.
Schedule sync_bn_schedule(const Network& net, const std::string& strategy, int ranks, int iterations,
                          nlohmann::json values = nlohmann::json::object()) {
  values["sync_bn"] = "on";
  return testing::schedule_with(net, strategy, ranks, 8, iterations, values);
}

}  // namespace

TEST_CASE("runtime: P = 2 and P = 4 data parallel end with the P = 1 weights") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 200, 11);
  const int iterations = 20;
  const auto w1 = train(net, make_schedule(net, "dp", 1, 8, iterations), data);
  for (const std::string strategy : {"dp", "dp_layerwise", "dp_buckets"})
    for (int P : {2, 4}) {
      LocalExecutor ex(net, make_schedule(net, strategy, P, 8, iterations), kSeed, kSgd);
      ex.run(data);
      const auto wp = ex.runtime(0).flat_weights();
      const double d = relative_difference(w1, wp);
      std::printf("%-14s P=%d: relative weight difference to P=1 after %d iterations = %.3e\n",
                  strategy.c_str(), P, iterations, d);
      CHECK(d < kWeightTolerance);
      // Every rank holds the same weights (they applied the same summed gradient).
      for (int r = 1; r < P; ++r) CHECK(ex.runtime(r).flat_weights() == wp);
    }
}

TEST_CASE("runtime: Lee's schedule (chunks + replicated fc with delayed update) equals plain SGD") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 200, 12);
  const int iterations = 20;
  const auto w1 = train(net, make_schedule(net, "dp", 1, 8, iterations), data);
  for (int f : {0, 1, 2})
    for (int P : {1, 2, 4}) {
      const auto wl = train(net, make_schedule(net, "lee", P, 8, iterations, 3, f), data);
      const double d = relative_difference(w1, wl);
      std::printf("lee k=3 f=%d P=%d: relative weight difference to dp P=1 = %.3e\n", f, P, d);
      CHECK(d < kWeightTolerance);
    }
}

TEST_CASE("runtime: one iteration's allreduced gradient equals the single-process gradient") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 13);
  LocalExecutor one(net, make_schedule(net, "dp", 1, 8, 1), kSeed, kSgd);
  one.run(data);
  LocalExecutor two(net, make_schedule(net, "dp", 2, 8, 1), kSeed, kSgd);
  two.run(data);
  const auto g1 = one.runtime(0).flat_gradients(), g2 = two.runtime(1).flat_gradients();
  const double d = relative_difference(g1, g2);
  std::printf("summed P=2 gradient vs P=1 gradient: relative difference %.3e\n", d);
  CHECK(d < 1e-5);  // one FP32 reordering of sums of 4 + 4 instead of 8 terms
}

TEST_CASE("runtime: training is bit-reproducible and learns the synthetic classes") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 256, 14, 0.5f);
  const Schedule s = make_schedule(net, "dp", 2, 16, 60);
  std::vector<double> l1, l2;
  const auto a = train(net, s, data, &l1);
  const auto b = train(net, s, data, &l2);
  CHECK(a == b);
  CHECK(l1 == l2);
  // Chance level for 5 classes is ln 5 = 1.609 nats; a learnable pattern + noise set must
  // fall well below it: mean loss of the last 10 iterations < 0.5·ln 5.
  double last = 0;
  for (int i = 50; i < 60; ++i) last += l1[std::size_t(i)] / 10;
  std::printf("loss: first iteration %.3f, mean of the last 10 %.3f (ln 5 = 1.609)\n", l1.front(), last);
  CHECK(last < 0.5 * std::log(5.0));
}

TEST_CASE("runtime: GEMM column tiles call back between tiles and keep the results") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 15);
  const Schedule s = make_schedule(net, "dp", 1, 8, 1);
  Runtime plain(net, s, 0, kSeed, kSgd), tiled(net, s, 0, kSeed, kSgd);
  tiled.set_gemm_tile_columns(16);
  int calls = 0;
  const std::function<void()> poll = [&] { ++calls; };
  plain.load_batch(0, data);
  tiled.load_batch(0, data);
  for (const Op& op : s.programs[0].ops) {
    if (op.kind != OpKind::compute) continue;
    plain.run_compute(op, 0, {});
    tiled.run_compute(op, 0, poll);
  }
  // conv1's forward GEMM alone has n·OH·OW = 8·12·10 = 960 columns: 60 tiles, 59 callbacks.
  CHECK(calls >= 59);
  const double d = relative_difference(plain.flat_weights(), tiled.flat_weights());
  std::printf("tiled vs untiled weights after one step: %.3e\n", d);
  CHECK(d < 1e-6);
}

TEST_CASE("runtime: collective buffers have the sizes the schedule states") {
  const Network net = small_network();
  const Schedule s = make_schedule(net, "lee", 2, 8, 2, 3, 1);
  Runtime rt(net, s, 0, kSeed, kSgd);
  for (const Collective& c : s.collectives) {
    const CollectiveBuffers b = rt.prepare(c);
    if (c.payload == Payload::gradients) {
      CHECK(b.send == b.recv);
      CHECK(4.0 * double(b.send_count) == c.bytes);
    } else {
      // allgather: this rank's (n, K) block, n = 8 / 2 = 4 images, into (N, K), N = 8
      const Layer& l = net.layers[std::size_t(c.layers.front())];
      const std::int64_t k = c.payload == Payload::activations ? l.in.elements() : l.out.elements();
      CHECK(b.send_count == 4 * k);
      CHECK(b.recv_count == 8 * k);
      CHECK(b.send != b.recv);
    }
    rt.complete(c);
  }
}

TEST_CASE("runtime: a network without a softmax output is rejected") {
  auto j = nlohmann::json::parse(R"({"name": "no-loss", "source": "unit test", "input": {"channels": 1, "height": 4, "width": 4},
      "layers": [{"name": "fc", "type": "fc", "outputs": 3}]})");
  const Network net = parse_network(j, "<no-loss>");
  const Schedule s = make_schedule(net, "dp", 1, 2, 1);
  CHECK_THROWS_AS(Runtime(net, s, 0, 1), cnnpar::InputError);
}

TEST_CASE("runtime: sharing the im2col columns (recomputed for the weight gradient) gives the same bits") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 16);
  const Schedule s = make_schedule(net, "dp", 1, 8, 3);
  LocalExecutor kept(net, s, kSeed, kSgd), shared(net, s, kSeed, kSgd);
  CHECK(kept.runtime(0).keep_columns());  // a few KiB of columns: under the 2 GiB limit
  shared.runtime(0).set_keep_columns(false);
  kept.run(data);
  shared.run(data);
  CHECK(kept.runtime(0).flat_weights() == shared.runtime(0).flat_weights());
}

TEST_CASE("runtime: a schedule with recomputed columns shares one buffer and gives the kept bits") {
  // Recomputing im2col from the same input is the same deterministic copy, so every GEMM reads
  // the same columns: the weights must agree bit for bit.
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 18);
  const Schedule kept_schedule = make_schedule(net, "dp", 1, 8, 3);
  Schedule recomputed_schedule = kept_schedule;
  add_column_recompute(recomputed_schedule);  // what --columns recomputed adds
  LocalExecutor kept(net, kept_schedule, kSeed, kSgd), recomputed(net, recomputed_schedule, kSeed, kSgd);
  CHECK(kept.runtime(0).keep_columns());
  CHECK_FALSE(recomputed.runtime(0).keep_columns());  // the schedule's im2col_w ops decide
  kept.run(data);
  recomputed.run(data);
  CHECK(kept.runtime(0).flat_weights() == recomputed.runtime(0).flat_weights());
}

TEST_CASE("runtime: two threads are bit-reproducible run to run") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 64, 17);
  const Schedule s = make_schedule(net, "dp", 1, 16, 4);
  set_compute_threads(2);
  const auto a = train(net, s, data), b = train(net, s, data);
  set_compute_threads(1);
  CHECK(a == b);
}

namespace {
// Two ranks, one collective (posted then waited by both unless `rank1_posts` is false).
Schedule one_collective_schedule(const Network& net, Collective c, bool rank1_posts = true) {
  Schedule s;
  s.strategy = "hand-made";
  s.network = net.name;
  s.global_batch = 2;
  s.iterations = 0;
  s.programs.resize(2);
  const int id = s.add_collective(std::move(c));
  for (int r = 0; r < 2; ++r) {
    s.programs[std::size_t(r)].rank = r;
    if (r == 0 || rank1_posts) s.programs[std::size_t(r)].ops.push_back(Op::post_op(id));
    s.programs[std::size_t(r)].ops.push_back(Op::wait_op(id));
  }
  return s;
}
}  // namespace

TEST_CASE("runtime: a weights broadcast gives every rank the root's parameters") {
  const Network net = small_network();
  Collective c;
  c.kind = CollectiveKind::bcast;
  c.group = {0, 1};
  c.root = 0;
  c.payload = Payload::weights;
  c.label = "bcast weights";
  for (int l = 0; l < int(net.layers.size()); ++l)
    if (net.layers[std::size_t(l)].has_parameters()) c.layers.push_back(l);
  LocalExecutor ex(net, one_collective_schedule(net, c), kSeed, kSgd);
  RuntimeState other = ex.runtime(1).state();
  for (float& w : other.weights) w += 1.0f;
  ex.runtime(1).restore(other);
  REQUIRE(ex.runtime(1).flat_weights() != ex.runtime(0).flat_weights());
  SyntheticDataset data(net.input, net.classes(), 8, 1);
  ex.run(data);
  CHECK(ex.runtime(1).flat_weights() == ex.runtime(0).flat_weights());
}

TEST_CASE("runtime: the local executor reports a schedule that deadlocks") {
  const Network net = small_network();
  Collective c;
  c.kind = CollectiveKind::allreduce;
  c.group = {0, 1};
  c.payload = Payload::gradients;
  c.label = "allreduce fc3";
  c.layers = {net.find("fc3")};
  LocalExecutor ex(net, one_collective_schedule(net, c, false), kSeed, kSgd);
  SyntheticDataset data(net.input, net.classes(), 8, 1);
  CHECK_THROWS_AS(ex.run(data), cnnpar::InternalError);
}

TEST_CASE("runtime: an uneven split (N = 10 over P = 3 and 4) still trains like P = 1") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 200, 18);
  const auto w1 = train(net, make_schedule(net, "dp", 1, 10, 10), data);
  for (const std::string strategy : {"dp", "lee"})
    for (int P : {3, 4}) {
      const Schedule s = make_schedule(net, strategy, P, 10, 10, 3, 2, 4000, true);
      LocalExecutor ex(net, s, kSeed, kSgd);
      // ceil(10/P) images for the first 10 % P ranks, floor for the rest, consecutive.
      std::int64_t first = 0;
      for (int r = 0; r < P; ++r) {
        const std::int64_t expected = 10 / P + (r < 10 % P ? 1 : 0);
        CHECK(ex.runtime(r).local_batch() == expected);
        CHECK(ex.runtime(r).first_image() == first);
        CHECK(ex.runtime(0).rank_batches().at(std::size_t(r)) == expected);
        first += expected;
      }
      ex.run(data);
      const double d = relative_difference(w1, ex.runtime(0).flat_weights());
      std::printf("%s uneven P=%d: relative weight difference to P=1 = %.3e\n", strategy.c_str(), P, d);
      CHECK(d < kWeightTolerance);
    }
}

namespace {
// Images [first, first + size) of another dataset: one rank's share of a global batch.
class DatasetSlice final : public Dataset {
 public:
  DatasetSlice(const Dataset& all, std::int64_t first, std::int64_t size) : all_(all), first_(first), size_(size) {}
  Shape shape() const override { return all_.shape(); }
  std::int64_t classes() const override { return all_.classes(); }
  std::int64_t size() const override { return size_; }
  void image(std::int64_t index, float* out) const override { all_.image(first_ + index, out); }
  int label(std::int64_t index) const override { return all_.label(first_ + index); }
  std::string origin() const override { return "slice"; }

 private:
  const Dataset& all_;
  std::int64_t first_ = 0, size_ = 0;
};
}  // namespace

TEST_CASE("runtime: a graph network's allreduced gradient with per-rank batch statistics is the mean of the ranks' own") {
  // Per-rank batch normalisation (PyTorch DDP's default): rank r normalises its n = N/P images
  // with their own statistics, so its share of the allreduced gradient is that of one process
  // on those n images; the loss is normalised by N, one process's by n: the sum over ranks is
  // (1/P)·Σ_r g_r(n images). Sums of 4 + 4 reordered: FP32 rounding, 1e-5.
  const Network net = testing::smooth_graph_network();
  const std::int64_t N = 8;
  SyntheticDataset data(net.input, net.classes(), N, 17);
  for (const std::string strategy : {"dp", "dp_buckets"}) {
    LocalExecutor two(net, make_schedule(net, strategy, 2, N, 1), kSeed, kSgd);
    two.run(data);
    std::vector<float> expected;
    for (int r = 0; r < 2; ++r) {
      const DatasetSlice half(data, r * N / 2, N / 2);
      LocalExecutor one(net, make_schedule(net, "dp", 1, N / 2, 1), kSeed, kSgd);
      one.run(half);
      const std::vector<float> g = one.runtime(0).flat_gradients();
      if (expected.empty()) expected.assign(g.size(), 0.0f);
      for (std::size_t i = 0; i < g.size(); ++i) expected[i] += 0.5f * g[i];
    }
    for (int r = 0; r < 2; ++r) {
      const double d = relative_difference(expected, two.runtime(r).flat_gradients());
      std::printf("%-10s P=2 rank %d: allreduced gradient vs the mean of the halves' gradients: %.3e\n",
                  strategy.c_str(), r, d);
      CHECK(d < 1e-5);
    }
  }
}

TEST_CASE("runtime: a graph network trains data parallel, every rank holding the same weights") {
  const Network net = testing::smooth_graph_network();
  SyntheticDataset data(net.input, net.classes(), 256, 18, 0.5f);
  for (const std::string strategy : {"dp", "dp_layerwise", "dp_buckets"}) {
    LocalExecutor ex(net, make_schedule(net, strategy, 2, 16, 40, 3, 2, 200), kSeed, kSgd);
    const std::vector<double> losses = ex.run(data);
    CHECK(ex.runtime(0).flat_weights() == ex.runtime(1).flat_weights());
    double first = 0, last = 0;
    for (int i = 0; i < 5; ++i) first += losses[std::size_t(i)] / 5;
    for (int i = 35; i < 40; ++i) last += losses[std::size_t(i)] / 5;
    std::printf("%-13s graph network, P=2: mean loss of the first 5 iterations %.3f, of the last 5 %.3f\n",
                strategy.c_str(), first, last);
    CHECK(last < 0.8 * first);
  }
}

TEST_CASE("runtime: with synchronised batch normalisation P = 2 and P = 4 end with the P = 1 weights") {
  // sync_bn: every rank normalises with the statistics of all N images (an allreduce of the
  // per-channel sums in forward and in backward), which is one process's computation on the
  // N images; only the order of the sums differs: kWeightTolerance after 20 iterations.
  const Network net = testing::smooth_graph_network();
  SyntheticDataset data(net.input, net.classes(), 200, 19);
  const int iterations = 20;
  const auto w1 = train(net, make_schedule(net, "dp", 1, 8, iterations), data);
  for (const std::string strategy : {"dp", "dp_layerwise", "dp_buckets"})
    for (int P : {2, 4}) {
      const Schedule s = sync_bn_schedule(net, strategy, P, iterations);
      int statistics = 0;
      for (const Collective& c : s.collectives)
        statistics += c.payload == Payload::batch_statistics || c.payload == Payload::error_statistics ? 1 : 0;
      CHECK(statistics == 2 * 2 * iterations);  // two batchnorm layers, forward and backward
      LocalExecutor ex(net, s, kSeed, kSgd);
      ex.run(data);
      const double d = relative_difference(w1, ex.runtime(0).flat_weights());
      std::printf("%-13s sync_bn P=%d: relative weight difference to P=1 after %d iterations = %.3e\n",
                  strategy.c_str(), P, iterations, d);
      CHECK(d < kWeightTolerance);
      // Without it each rank's statistics are its own: the weights differ from P = 1.
      LocalExecutor per_rank(net, make_schedule(net, strategy, P, 8, iterations), kSeed, kSgd);
      per_rank.run(data);
      CHECK(relative_difference(w1, per_rank.runtime(0).flat_weights()) > 100 * kWeightTolerance);
    }
}

TEST_CASE("runtime: hybrid and per_layer on a graph network with synchronised batchnorm end with the P = 1 weights") {
  // The graph's body data parallel, its classifier model parallel (hybrid) or replicated the
  // way Lee et al. do it (per_layer fc=replicated): one process's computation, as above.
  const Network net = testing::smooth_graph_network();
  SyntheticDataset data(net.input, net.classes(), 200, 20);
  const int iterations = 20;
  const auto w1 = train(net, make_schedule(net, "dp", 1, 8, iterations), data);
  for (const std::string strategy : {"hybrid", "per_layer"})
    for (int P : {2, 4}) {
      const nlohmann::json values = strategy == "per_layer" ? nlohmann::json{{"assign", "fc=replicated"}}
                                                            : nlohmann::json::object();
      LocalExecutor ex(net, sync_bn_schedule(net, strategy, P, iterations, values), kSeed, kSgd);
      ex.run(data);
      const double d = relative_difference(w1, testing::assembled_weights(ex));
      std::printf("%-10s sync_bn P=%d: relative weight difference to dp P=1 after %d iterations = %.3e\n",
                  strategy.c_str(), P, iterations, d);
      CHECK(d < kWeightTolerance);
    }
}
