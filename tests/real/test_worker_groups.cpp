// Separate worker groups, several ranks in one process (LocalExecutor): Veeriah & Modi's
// schemes and Marques et al.'s conv_split train as plain SGD on one rank.
//
// Expected values come from the sequential algorithm. Scheme (a) is synchronous SGD on the
// K·M images of one iteration; scheme (c) sums the fc gradients of the K sub-batches before one
// update, which is the same gradient; conv_split computes every kernel's gradient over the
// whole batch on some rank and the master applies it. So after 20 iterations the weights equal
// P = 1 dp's up to the order of FP32 sums (kWeightTolerance, relative to the largest weight).
// Scheme (b) updates the fc layers after each sub-batch, which is not SGD on K·M images (the
// paper says so): only its loss must fall.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "real/dataset.hpp"
#include "real/local_executor.hpp"
#include "real/runtime.hpp"
#include "tests/real/real_test_util.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using namespace cnnpar::real;
using cnnpar::real::testing::assembled_weights;
using cnnpar::real::testing::make_schedule;
using cnnpar::real::testing::relative_difference;
using cnnpar::real::testing::small_network;

namespace {

constexpr double kWeightTolerance = 1e-4;
constexpr std::uint64_t kSeed = 5;
constexpr int kIterations = 20;
constexpr std::int64_t kBatch = 12;  // K·M with K = 1, 2, 3 conv workers
const SgdConfig kSgd{0.02f, 0.9f, 5e-4f};

Schedule worker_schedule(const Network& net, const std::string& strategy, int ranks, const std::string& key,
                         const std::string& value) {
  return testing::schedule_with(net, strategy, ranks, kBatch, kIterations, {{key, value}});
}

}  // namespace

TEST_CASE("worker groups: veeriah a and c and conv_split end with the P = 1 weights") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 200, 11);
  LocalExecutor single(net, make_schedule(net, "dp", 1, kBatch, kIterations), kSeed, kSgd);
  single.run(data);
  const std::vector<float> reference = single.runtime(0).flat_weights();

  struct Case {
    std::string strategy, key, value;
    int ranks;
  };
  const std::vector<Case> cases = {
      {"veeriah", "scheme", "a", 2}, {"veeriah", "scheme", "a", 4}, {"veeriah", "scheme", "a", 6},
      {"veeriah", "scheme", "c", 2}, {"veeriah", "scheme", "c", 4}, {"veeriah", "scheme", "c", 6},
      {"conv_split", "shares", "uniform", 2}, {"conv_split", "shares", "uniform", 3},
      {"conv_split", "shares", "0.5,0.2,0.3", 3}, {"conv_split", "shares", "probe", 1},
  };
  for (const Case& c : cases) {
    LocalExecutor ex(net, worker_schedule(net, c.strategy, c.ranks, c.key, c.value), kSeed, kSgd);
    ex.run(data);
    const double d = relative_difference(reference, assembled_weights(ex));
    std::printf("%-10s %s=%-11s P=%d: relative weight difference to P=1 dp after %d iterations = %.3e\n",
                c.strategy.c_str(), c.key.c_str(), c.value.c_str(), c.ranks, kIterations, d);
    CHECK(d < kWeightTolerance);
  }
}

TEST_CASE("worker groups: veeriah scheme b's loss falls on the synthetic classes") {
  const Network net = small_network();
  SyntheticDataset data(net.input, net.classes(), 200, 11);
  for (int ranks : {2, 4}) {
    LocalExecutor ex(net, worker_schedule(net, "veeriah", ranks, "scheme", "b"), kSeed, kSgd);
    const std::vector<double> loss = ex.run(data);
    const double first = (loss[0] + loss[1]) / 2, last = (loss[kIterations - 2] + loss[kIterations - 1]) / 2;
    std::printf("veeriah b P=%d: mean loss of the first two iterations %.4f, of the last two %.4f\n", ranks, first,
                last);
    CHECK(last < 0.9 * first);
  }
}
