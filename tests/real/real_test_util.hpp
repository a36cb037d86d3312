#pragma once
// Shared fixtures of the real/ unit tests: small networks and schedules.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "real/local_executor.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::real::testing {

/** Every layer kind, stride > 1, pad > 0, max and avg pooling, two fc layers (so Lee's
 *  f can be 1 or 2), 5 classes. Input (3, 12, 10). */
inline Network small_network() {
  const auto j = nlohmann::json::parse(R"({
    "name": "real-test-net", "source": "unit test",
    "input": {"channels": 3, "height": 12, "width": 10},
    "layers": [
      {"name": "conv1", "type": "conv", "maps": 6, "kernel": 3, "stride": 1, "pad": 1},
      {"name": "relu1", "type": "relu"},
      {"name": "lrn1", "type": "lrn", "size": 3, "alpha": 0.01, "beta": 0.75, "k": 2},
      {"name": "pool1", "type": "pool", "mode": "max", "kernel": 2, "stride": 2},
      {"name": "conv2", "type": "conv", "maps": 8, "kernel": [3, 2], "stride": 2, "pad": 1},
      {"name": "relu2", "type": "relu"},
      {"name": "pool2", "type": "pool", "mode": "avg", "kernel": 2, "stride": 1},
      {"name": "fc1", "type": "fc", "outputs": 16},
      {"name": "relu3", "type": "relu"},
      {"name": "drop1", "type": "dropout", "ratio": 0.25},
      {"name": "fc2", "type": "fc", "outputs": 12},
      {"name": "relu4", "type": "relu"},
      {"name": "fc3", "type": "fc", "outputs": 5},
      {"name": "loss", "type": "softmax"}
    ]})");
  return parse_network(j, "<real-test-net>");
}

/** The same structure without kinks (no relu, average pooling only), for finite
 *  differences through the whole network: relu and max-pool switch points would otherwise
 *  lie within the step of some of the hundreds of units a first-layer weight feeds. */
inline Network smooth_network() {
  const auto j = nlohmann::json::parse(R"({
    "name": "real-test-smooth", "source": "unit test",
    "input": {"channels": 3, "height": 12, "width": 10},
    "layers": [
      {"name": "conv1", "type": "conv", "maps": 6, "kernel": 3, "stride": 1, "pad": 1},
      {"name": "lrn1", "type": "lrn", "size": 3, "alpha": 0.01, "beta": 0.75, "k": 2},
      {"name": "pool1", "type": "pool", "mode": "avg", "kernel": 2, "stride": 2},
      {"name": "conv2", "type": "conv", "maps": 8, "kernel": [3, 2], "stride": 2, "pad": 1},
      {"name": "pool2", "type": "pool", "mode": "avg", "kernel": 2, "stride": 1},
      {"name": "fc1", "type": "fc", "outputs": 16},
      {"name": "drop1", "type": "dropout", "ratio": 0.25},
      {"name": "fc2", "type": "fc", "outputs": 12},
      {"name": "fc3", "type": "fc", "outputs": 5},
      {"name": "loss", "type": "softmax"}
    ]})");
  return parse_network(j, "<real-test-smooth>");
}

/** A graph without kinks: a residual add over batch normalisation and a concat of a branch
 *  with the add's output, global average pooling, conv layers without bias. Input (3, 6, 5).
 *  conv1 ─ bn1 ─┬─ conv2 ─ bn2 ─ sum ─┬─ conv3 ─ cat ─ gap ─ fc ─ loss
 *               └─────────────────┘   └─────────┘ */
inline Network smooth_graph_network() {
  const auto j = nlohmann::json::parse(R"({
    "name": "real-test-graph", "source": "unit test",
    "input": {"channels": 3, "height": 6, "width": 5},
    "layers": [
      {"name": "conv1", "type": "conv", "maps": 4, "kernel": 3, "pad": 1, "bias": false},
      {"name": "bn1", "type": "batchnorm"},
      {"name": "conv2", "type": "conv", "maps": 4, "kernel": 3, "pad": 1, "bias": false},
      {"name": "bn2", "type": "batchnorm"},
      {"name": "sum", "type": "add", "inputs": ["bn2", "bn1"]},
      {"name": "conv3", "type": "conv", "maps": 2, "kernel": 1},
      {"name": "cat", "type": "concat", "inputs": ["conv3", "sum"]},
      {"name": "gap", "type": "pool", "mode": "avg", "global": true},
      {"name": "fc", "type": "fc", "outputs": 5},
      {"name": "loss", "type": "softmax"}
    ]})");
  return parse_network(j, "<real-test-graph>");
}

inline Schedule make_schedule(const Network& net, const std::string& strategy, int ranks, std::int64_t batch,
                              int iterations, int lee_k = 3, int lee_f = 2, double bucket_bytes = 4000,
                              bool uneven_batch = false) {
  StrategyOptions o;
  o.uneven_batch = uneven_batch;
  o.name = strategy;
  o.global_batch = batch;
  o.ranks = ranks;
  o.iterations = iterations;
  o.warmup_iterations = 0;
  if (strategy == "lee") o.set("k", lee_k).set("f", lee_f);
  if (strategy == "dp_buckets") o.set("bucket_bytes", bucket_bytes);
  return build_schedule(net, Platform{}, o);
}

/** A schedule of `strategy` with the options of `values` (an object: option -> value). */
inline Schedule schedule_with(const Network& net, const std::string& strategy, int ranks, std::int64_t batch,
                              int iterations, const nlohmann::json& values) {
  StrategyOptions o;
  o.name = strategy;
  o.global_batch = batch;
  o.ranks = ranks;
  o.iterations = iterations;
  o.warmup_iterations = 0;
  for (const auto& [key, value] : values.items()) o.set(key, value);
  return build_schedule(net, Platform{}, o);
}

/** The whole model of a run: the sum over ranks of what each owns (adding zeros rounds
 *  nothing), for schedules that split layers over the ranks. */
inline std::vector<float> assembled_weights(LocalExecutor& ex) {
  std::vector<float> sum = ex.runtime(0).owned_state().weights;
  for (int r = 1; r < ex.ranks(); ++r) {
    const std::vector<float> part = ex.runtime(r).owned_state().weights;
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
  }
  return sum;
}

/** max_i |a_i - b_i| / max_i |a_i|. */
inline double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(a[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace cnnpar::real::testing
