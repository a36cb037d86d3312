// Schedules of the separate-worker-group strategies: veeriah (Veeriah & Modi) and conv_split
// (Marques et al.). Message sizes are worked out by hand from the networks' shapes; every
// schedule must verify, partitions included.
#include <catch2/catch.hpp>

#include <map>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "system/op_time.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

namespace {

Schedule build(const std::string& network, const std::string& name, int ranks, std::int64_t batch,
               const std::string& key, const std::string& value, int iterations = 2) {
  StrategyOptions o;
  o.name = name;
  o.ranks = ranks;
  o.global_batch = batch;
  o.iterations = iterations;
  o.warmup_iterations = 0;
  if (!key.empty()) o.set(key, value);
  const Network net = load_network(network);
  Schedule s = build_schedule(net, load_platform("cori-haswell"), o);
  CHECK(verify(s).empty());
  CHECK(verify_partitions(s, net).empty());
  return s;
}

// Bytes of the iteration-0 collectives by label.
std::map<std::string, double> bytes_by_label(const Schedule& s) {
  std::map<std::string, double> bytes;
  for (const Collective& c : s.collectives)
    if (c.iteration == 0) bytes[c.label] = c.bytes;
  return bytes;
}

}  // namespace

TEST_CASE("veeriah: the interface, merge and reduce messages of veeriah-mnist") {
  // veeriah-mnist: 1x28x28 → conv1 20@24x24 → pool 12x12 → conv2 50@8x8 → pool2 50@4x4 = 800
  // inputs of fc1 (300) → relu3 → fc2 (10) → softmax. K = 2, N = 64, so M = 32 images each.
  const Schedule a = build("veeriah-mnist", "veeriah", 4, 64, "scheme", "a");
  const auto bytes = bytes_by_label(a);
  // conv worker i → fc worker j: its 32 images of pool2 = 4 · 32 · 800 = 102,400 bytes.
  CHECK(bytes.at("send fc1 input 0→2") == 102400);
  CHECK(bytes.at("send fc1 input 1→3") == 102400);
  CHECK(bytes.at("send pool2 errors 3→1") == 102400);
  // Merge before fc2: each fc worker's 150 of relu3's 300 units for 64 images = 4 · 64 · 150.
  CHECK(bytes.at("allgather fc2 input (fc workers)") == 38400);
  // The softmax gathers fc2's 5 + 5 logits: 4 · 64 · 5.
  CHECK(bytes.at("allgather loss input (fc workers)") == 1280);
  // Partial errors summed: pool2's whole output 4 · 64 · 800, relu3's 4 · 64 · 300.
  CHECK(bytes.at("allreduce pool2 errors (fc workers)") == 204800);
  CHECK(bytes.at("allreduce relu3 errors (fc workers)") == 76800);
  // Conv gradients among the 2 conv workers: conv2 = 4 · (50 · 20 · 25 + 50) = 100,200 bytes.
  for (const Collective& c : a.collectives)
    if (c.label == "allreduce conv2 (conv workers)") {
      CHECK(c.bytes == 100200);
      CHECK(c.group == std::vector<int>{0, 1});
    }
  // Schemes b and c: the fc workers take 32 images at a time, so the merge moves half as much
  // per pass, twice per iteration.
  for (const std::string scheme : {"b", "c"}) {
    const Schedule pipelined = build("veeriah-mnist", "veeriah", 4, 64, "scheme", scheme);
    int merges = 0;
    for (const Collective& c : pipelined.collectives)
      if (c.iteration == 0 && c.label == "allgather fc2 input (fc workers)") {
        ++merges;
        CHECK(c.bytes == 19200);
        CHECK(c.images.count == 32);
      }
    CHECK(merges == 2);
  }
  // fc updates per iteration on an fc worker: once (a, c) or once per sub-batch (b).
  for (const auto& [scheme, updates] : std::map<std::string, int>{{"a", 1}, {"b", 2}, {"c", 1}}) {
    const Schedule s = build("veeriah-mnist", "veeriah", 4, 64, "scheme", scheme, 1);
    int count = 0;
    for (const Op& op : s.programs[2].ops) count += op.kind == OpKind::compute && op.label == "fc1.upd";
    INFO("scheme " << scheme);
    CHECK(count == updates);
  }
}

TEST_CASE("veeriah: ranks and partitions of the two worker groups") {
  for (int ranks : {2, 4, 6, 8}) {
    const Schedule s = build("veeriah-cifar10", "veeriah", ranks, 48, "scheme", "c");
    const int K = ranks / 2;
    const Network net = load_network("veeriah-cifar10");
    const int fc1 = net.find("fc1");
    for (int r = 0; r < ranks; ++r) {
      const auto& p = s.programs[std::size_t(r)].partitions;
      if (r < K) {  // conv worker: its 48/K images of the conv layers, nothing of the fc layers
        CHECK(p[0].kind == PartitionKind::data);
        CHECK(p[0].batch == Range{r * 48 / K, 48 / K});
        CHECK(p[std::size_t(fc1)].kind == PartitionKind::none);
      } else {
        CHECK(p[0].kind == PartitionKind::none);
        CHECK(p[std::size_t(fc1)].batch == Range{0, 48});
      }
    }
  }
}

TEST_CASE("conv_split: kernel shares and the master's messages of marques-50-500") {
  // marques-50-500: 3x32x32 → c1 50@28x28 → lrn → pool 14x14 → c2 500@10x10 → pool 5x5 → fc 10.
  // Uniform shares over 3 ranks: c1 50 = 16.67 each → floor 16, the 2 left to the largest
  // remainders (all equal: ranks 0 and 1) → 17, 17, 16; c2 500 → 167, 167, 166.
  const Schedule s = build("marques-50-500", "conv_split", 3, 64, "shares", "uniform");
  CHECK(s.options["kernel_counts"]["c1"] == nlohmann::json({17, 17, 16}));
  CHECK(s.options["kernel_counts"]["c2"] == nlohmann::json({167, 167, 166}));
  const auto bytes = bytes_by_label(s);
  // Input maps of c1 to each worker: 4 · 64 · 3 · 32 · 32 = 786,432; worker 2's 16 kernels of
  // 3 · 5 · 5 weights + 1 bias: 4 · 16 · 76 = 4,864; its 16 maps back: 4 · 64 · 16 · 28 · 28.
  CHECK(bytes.at("send c1 input to 2") == 786432);
  CHECK(bytes.at("send c1 kernels to 2") == 4864);
  CHECK(bytes.at("send c1 maps of 2 to master") == 3211264);
  // c2's input (pool1: 50 · 14 · 14) and its partial input errors reduced to the master:
  // 4 · 64 · 9,800 = 2,508,800 bytes each.
  CHECK(bytes.at("send c2 input to 1") == 2508800);
  CHECK(bytes.at("reduce c2 input errors") == 2508800);
  // Worker 1's c2 gradient rows: 167 · (50 · 25 + 1) · 4 = 835,668 bytes.
  CHECK(bytes.at("send c2 gradient of 1 to master") == 835668);
  // Non-conv layers and every update run on the master.
  for (int r = 1; r < 3; ++r)
    for (const Op& op : s.programs[std::size_t(r)].ops)
      if (op.kind == OpKind::compute) CHECK((op.label.starts_with("c1.") || op.label.starts_with("c2.")));
}

TEST_CASE("conv_split: probe shares follow the node speeds (Eq. 1 on the engines' probe)") {
  // marques-lab's speed factors 1, 3.84, 1.92, 4.16: every probe op's time is its roofline time
  // divided by the node's speed, so t_i ∝ 1/speed_i for any net and batch, and Eq. 1,
  // w_i = (max t / t_i) / Σ_j (max t / t_j), gives w_i = speed_i / Σ speed = speed_i / 10.92:
  // 0.0916, 0.3516, 0.1758, 0.3810 for the four Marques nets at batch 64 and 1024 alike.
  const std::vector<double> expected = {1 / 10.92, 3.84 / 10.92, 1.92 / 10.92, 4.16 / 10.92};
  for (const std::string net : {"marques-50-500", "marques-150-800", "marques-300-1000", "marques-500-1500"})
    for (const std::int64_t batch : {64, 1024}) {
      StrategyOptions o;
      o.name = "conv_split";
      o.ranks = 4;
      o.global_batch = batch;
      o.iterations = 1;
      o.warmup_iterations = 0;
      const Schedule s = build_schedule(load_network(net), load_platform("marques-lab"), o);
      INFO(net << " at batch " << batch);
      for (std::size_t i = 0; i < 4; ++i)
        CHECK(s.options["resolved_shares"][i].get<double>() == Approx(expected[i]).epsilon(1e-9));
    }
}

TEST_CASE("speedup baselines: one rank of dp for veeriah, one whole rank for conv_split's share lists") {
  StrategyOptions veeriah;
  veeriah.name = "veeriah";
  veeriah.ranks = 8;
  veeriah.set("scheme", "b");
  const StrategyOptions v1 = single_rank_baseline(veeriah);
  CHECK(v1.name == "dp");
  CHECK(v1.ranks == 1);
  CHECK(v1.values.empty());  // dp takes none of veeriah's options
  StrategyOptions split;
  split.name = "conv_split";
  split.ranks = 3;
  split.set("shares", "0.5,0.25,0.25");
  const StrategyOptions s1 = single_rank_baseline(split);
  CHECK(s1.name == "conv_split");
  CHECK(s1.text("shares") == "uniform");  // a 3-rank list cannot describe one rank
  split.set("shares", "probe");
  CHECK(single_rank_baseline(split).text("shares") == "probe");
}

TEST_CASE("input images: the master reads the batch, conv_split's workers receive theirs") {
  // conv_split over 3 ranks at batch 64: rank 0 (the master) reads all 64 images; the workers'
  // input arrives by "send c1 input to R", so they read none. dp over 4 ranks: 16 each.
  const Schedule split = build("marques-50-500", "conv_split", 3, 64, "shares", "uniform");
  CHECK(input_images(split, 0) == 64);
  CHECK(input_images(split, 1) == 0);
  CHECK(input_images(split, 2) == 0);
  CHECK_FALSE(input_arrives_by_collective(split, 0));
  CHECK(input_arrives_by_collective(split, 2));
  const Schedule dp = build("marques-50-500", "dp", 4, 64, "", "");
  for (int r = 0; r < 4; ++r) CHECK(input_images(dp, r) == 16);
  // iteration_overhead + input_per_image · images: 1e-3 + 2e-4 · 64 = 13.8e-3 s on the master.
  Platform platform;
  platform.iteration_overhead_s = 1e-3;
  platform.input_per_image_s = 2e-4;
  CHECK(iteration_overhead_s(platform, split, 0) == Approx(13.8e-3));
  CHECK(iteration_overhead_s(platform, split, 1) == Approx(1e-3));
}
