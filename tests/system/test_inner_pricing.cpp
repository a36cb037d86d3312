// nodes.inner: a conv layer's forward and weight-gradient ops priced on the run's T threads
// with the efficiency calibration measured for the inner mode (system/op_time.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "system/op_time.hpp"
#include "workload/emit.hpp"

using namespace cnnpar;

namespace {

constexpr double kTol = 1e-12;  // relative: one division

// 4 cores at 400 GFLOP/s in all (100 per core), 2 us call overhead; the rest of the node is
// priced by the roofline with a GEMM efficiency of 0.5 when nodes.inner is absent.
nlohmann::json node_platform(const nlohmann::json& inner) {
  nlohmann::json p = nlohmann::json::parse(R"({
    "name": "inner-test", "source": "unit test",
    "nodes": {"count": 2, "cores": 4, "peak": "400Gf", "memory_bandwidth": "100GBps",
              "efficiency": {"gemm": 0.5}, "default_efficiency": 0.5, "call_overhead": "2us"},
    "network": {"topology": "crossbar", "bandwidth": "10Gbps", "latency": "1us"}
  })");
  if (!inner.is_null()) p["nodes"]["inner"] = inner;
  return p;
}

// conv1 (3x16x16 -> 8 maps, 3x3, pad 1), pool, fc: conv1's ops carry conv_layer, fc's not.
Network small_network() {
  return parse_network(nlohmann::json::parse(R"({
    "name": "inner-net", "input": {"channels": 3, "height": 16, "width": 16},
    "layers": [
      {"name": "conv1", "type": "conv", "maps": 8, "kernel": 3, "stride": 1, "pad": 1},
      {"name": "relu1", "type": "relu"},
      {"name": "pool1", "type": "pool", "kernel": 2, "stride": 2},
      {"name": "fc1", "type": "fc", "outputs": 10},
      {"name": "loss", "type": "softmax"}
    ]})"),
                       "inner-net.json");
}

const Op& op_labelled(const std::vector<Op>& ops, const std::string& label) {
  for (const Op& op : ops)
    if (op.label == label) return op;
  FAIL("no op " << label);
  return ops.front();
}

std::vector<Op> all_ops(const Network& network, std::int64_t batch) {
  const strategies::LayerOps ops(network, batch, batch);
  std::vector<Op> all;
  for (int l = 0; l < int(network.layers.size()); ++l)
    for (auto list : {ops.forward(l), ops.backward_data(l), ops.backward_weight(l), ops.update(l)})
      all.insert(all.end(), list.begin(), list.end());
  return all;
}

}  // namespace

TEST_CASE("inner pricing: a conv layer's GEMMs on T threads at the mode's efficiency, and dag's im2col inside them",
          "[op_time][inner]") {
  const Network network = small_network();
  const std::vector<Op> ops = all_ops(network, 2);
  const Op& fwd = op_labelled(ops, "conv1.fwd");
  const Op& bwd_w = op_labelled(ops, "conv1.bwd_w");
  const Op& im2col = op_labelled(ops, "conv1.im2col");
  const Op& fc = op_labelled(ops, "fc1.fwd");
  REQUIRE(fwd.conv_layer);
  REQUIRE(im2col.conv_layer);
  REQUIRE_FALSE(fc.conv_layer);
  // conv1 forward: M = 8 maps, N = 2 images · 16·16 = 512, K = 3·3·3 = 27: 2·8·512·27 = 221,184 FLOPs.
  REQUIRE(fwd.flops == Approx(221184.0).epsilon(kTol));

  const nlohmann::json efficiency = {{"gemm", {0.8, 0.7, 0.6, 0.5}}, {"dag", {0.75, 0.6, 0.55, 0.4}}};
  // dag on T = 2: 2/4 of 400 GFLOP/s = 200 GFLOP/s at 0.6 = 120 GFLOP/s;
  //   221,184 / 1.2e11 = 1.8432 us, + 2 us overhead = 3.8432 us.
  const Platform dag2 = parse_platform(node_platform({{"mode", "dag"}, {"threads", 2}, {"conv_efficiency", efficiency}}), "p.json");
  CHECK(op_time_s(dag2, fwd, 0) == Approx(3.8432e-6).epsilon(kTol));
  // Weight gradient: same FLOPs (M = 8, N = 27, K = 512) at the same rate.
  CHECK(op_time_s(dag2, bwd_w, 0) == Approx(2.0 * 8 * 27 * 512 / 1.2e11 + 2e-6).epsilon(kTol));
  // The DAG's tasks extract their own areas: the im2col op is free.
  CHECK(op_time_s(dag2, im2col, 0) == 0.0);

  // gemm on T = 1: 100 GFLOP/s at 0.8 = 80 GFLOP/s: 221,184 / 8e10 = 2.7648 us + 2 us = 4.7648 us;
  // its im2col keeps the roofline price it has without nodes.inner.
  const Platform plain = parse_platform(node_platform(nullptr), "p.json");
  const Platform gemm1 = parse_platform(node_platform({{"mode", "gemm"}, {"threads", 1}, {"conv_efficiency", efficiency}}), "p.json");
  CHECK(op_time_s(gemm1, fwd, 0) == Approx(4.7648e-6).epsilon(kTol));
  CHECK(op_time_s(gemm1, im2col, 0) == Approx(op_time_s(plain, im2col, 0)).epsilon(kTol));
  // Not a conv layer's op: priced as without nodes.inner, the roofline max(flops / (0.5 · 400
  // GFLOP/s), bytes / 100 GB/s) + 2 us.
  CHECK(op_time_s(dag2, fc, 0) == Approx(op_time_s(plain, fc, 0)).epsilon(kTol));
  CHECK(op_time_s(plain, fc, 0) == Approx(std::max(fc.flops / 2e11, fc.bytes / 1e11) + 2e-6).epsilon(kTol));
  // A node of half the speed takes twice as long, overhead included (as every calibrated op).
  Platform slow = dag2;
  slow.slow_down(1, 2.0);
  CHECK(op_time_s(slow, fwd, 1) == Approx(2 * 3.8432e-6).epsilon(kTol));
}

TEST_CASE("inner pricing: the platform's inner section round-trips and its bad values are refused", "[platform][inner]") {
  const nlohmann::json efficiency = {{"gemm", {0.8, 0.7}}, {"dag", {0.75, 0.6}}};
  const Platform platform =
      parse_platform(node_platform({{"mode", "dag"}, {"threads", 2}, {"conv_efficiency", efficiency}}), "p.json");
  const Platform again = parse_platform(to_json(platform), "again.json");
  CHECK(again.nodes.inner.mode == InnerMode::dag);
  CHECK(again.nodes.inner.threads == 2);
  CHECK(again.nodes.inner.conv_efficiency == platform.nodes.inner.conv_efficiency);

  const auto refused = [](const nlohmann::json& inner, const std::string& path) {
    try {
      parse_platform(node_platform(inner), "p.json");
      FAIL("accepted " << inner.dump());
    } catch (const InputError& error) {
      CHECK_THAT(error.what(), Catch::Contains("p.json") && Catch::Contains(path));
    }
  };
  refused({{"mode", "tasks"}, {"threads", 1}, {"conv_efficiency", efficiency}}, "/nodes/inner/mode");
  refused({{"mode", "dag"}, {"threads", 5}, {"conv_efficiency", efficiency}}, "/nodes/inner/threads");  // 4 cores
  refused({{"mode", "dag"}, {"threads", 0}, {"conv_efficiency", efficiency}}, "/nodes/inner/threads");
  refused({{"mode", "dag"}, {"threads", 3}, {"conv_efficiency", efficiency}}, "/nodes/inner/conv_efficiency");
  refused({{"mode", "dag"}, {"threads", 1}, {"conv_efficiency", {{"dag", {1.5}}}}}, "/nodes/inner/conv_efficiency/dag/0");
  refused({{"mode", "dag"}, {"threads", 1}, {"conv_efficiency", {{"dag", {0}}}}}, "/nodes/inner/conv_efficiency/dag/0");
  refused({{"mode", "dag"}, {"threads", 1}, {"conv_efficiency", {{"gemm", {0.5}}}}}, "/nodes/inner/conv_efficiency");
  refused({{"mode", "dag"}, {"threads", 1}, {"conv_efficiency", {{"dag", {0.5}}, {"warp", {0.5}}}}},
          "/nodes/inner/conv_efficiency/warp");
}

TEST_CASE("inner pricing: a schedule read from JSON knows its conv layers' ops", "[schedule][inner]") {
  // Op::conv_layer is not written; reading gives it to every op of a layer with an im2col op.
  Schedule schedule;
  schedule.iterations = 1;
  Program program;
  program.rank = 0;
  for (const Op& op : all_ops(small_network(), 2)) program.ops.push_back(op);
  schedule.programs.push_back(program);
  const Schedule read = schedule_from_json(to_json(schedule), "s.json");
  int conv_ops = 0;
  for (const Op& op : read.programs[0].ops) {
    CHECK(op.conv_layer == (op.layer == 0));
    conv_ops += op.conv_layer ? 1 : 0;
  }
  CHECK(conv_ops == 4);  // conv1: im2col, fwd, bwd_w, upd (no bwd_d: it is the first layer)
}
