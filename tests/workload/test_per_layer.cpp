// per_layer and hybrid: assignments, partitions, transitions, the verifier's partition checks,
// the Intel note's model-parallel volumes, and equivalence with dp, dp_layerwise and lee.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "workload/strategies/per_layer.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;
using namespace cnnpar::strategies;

namespace {

const Network& vgg_a() {
  static const Network network = load_network("vgg-a");
  return network;
}
const Network& alexnet() {
  static const Network network = load_network("alexnet");
  return network;
}
const Platform& cori() {
  static const Platform platform = load_platform("cori-haswell");
  return platform;
}

StrategyOptions per_layer(const std::string& assign, int ranks, std::int64_t batch = 256) {
  StrategyOptions options;
  options.name = "per_layer";
  options.set("assign", assign);
  options.ranks = ranks;
  options.global_batch = batch;
  options.iterations = 3;
  options.warmup_iterations = 1;
  return options;
}

// The collectives of iteration 0 that carry `payload` for `layer`.
std::vector<const Collective*> transitions(const Schedule& schedule, Payload payload, int layer) {
  std::vector<const Collective*> found;
  for (const Collective& c : schedule.collectives)
    if (c.iteration == 0 && c.payload == payload && c.layers == std::vector<int>{layer}) found.push_back(&c);
  return found;
}

// Fully connected network whose middle layer plays the Intel note's F1 (ofm 3072): an fc input
// layer so that F1's input comes from a data-parallel layer, not from the dataset.
Network f1_network() {
  const nlohmann::json document = {
      {"name", "intel-f1"},
      {"input", {{"channels", 1024}, {"height", 1}, {"width", 1}}},
      {"layers",
       {{{"name", "fc0"}, {"type", "fc"}, {"outputs", 1024}},
        {{"name", "f1"}, {"type", "fc"}, {"outputs", 3072}},
        {{"name", "fc2"}, {"type", "fc"}, {"outputs", 16}},
        {{"name", "loss"}, {"type", "softmax"}}}}};
  return parse_network(document, "<intel-f1>");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("assignments: globs, defaults, JSON files") {
  const LayerAssignment a = parse_assignment(vgg_a(), "conv*=data,fc6=model,fc7=model,fc8=replicated", "--assign");
  CHECK(a.kinds[std::size_t(vgg_a().find("conv3_2"))] == PartitionKind::data);
  CHECK(a.kinds[std::size_t(vgg_a().find("fc6"))] == PartitionKind::model);
  CHECK(a.kinds[std::size_t(vgg_a().find("fc8"))] == PartitionKind::replicated);
  // Unnamed layers are data; "" is pure data parallelism.
  CHECK(parse_assignment(vgg_a(), "fc7=model", "--assign").kinds[std::size_t(vgg_a().find("fc6"))] ==
        PartitionKind::data);
  CHECK(to_string(vgg_a(), parse_assignment(vgg_a(), "", "--assign")).find("model") == std::string::npos);
  // A glob over every layer covers relu and pool layers without complaint: they follow.
  CHECK(parse_assignment(vgg_a(), "*=model", "--assign").kinds[std::size_t(vgg_a().find("fc8"))] == PartitionKind::model);

  const std::string file = "test_per_layer_assign.json";
  std::ofstream(file) << R"({"assign": {"fc6": "model", "fc7": "banana"}})";
  const std::string message = error_of([&] { parse_assignment(vgg_a(), file, "--assign"); });
  CHECK(message.find(file) != std::string::npos);
  CHECK(message.find("/assign/fc7") != std::string::npos);
  CHECK(message.find("banana") != std::string::npos);
  std::ofstream(file) << R"({"assign": {"fc6": "model"}})";
  CHECK(parse_assignment(vgg_a(), file, "--assign").kinds[std::size_t(vgg_a().find("fc6"))] == PartitionKind::model);
  std::remove(file.c_str());
}

TEST_CASE("assignments: bad input names the flag, the entry and the value") {
  const auto message = [](const std::string& assign, int ranks = 4) {
    StrategyOptions options = per_layer(assign, ranks);
    options.origin = "command line";  // an assignment from the command line is named --assign
    return error_of([&] { build_schedule(vgg_a(), cori(), options); });
  };
  CHECK(message("fc9=model").find("no conv or fc layer of vgg-a matches") != std::string::npos);
  CHECK(message("fc9=model").find("--assign") != std::string::npos);
  CHECK(message("fc6=model,fc*=data").find("assigned twice") != std::string::npos);
  CHECK(message("relu6=model").find("no parameters") != std::string::npos);
  CHECK(message("fc6=sideways").find("sideways") != std::string::npos);
  CHECK(message("fc6").find("LAYER=data|model|replicated") != std::string::npos);
  // fc8 has 1000 output neurons: 1024 ranks cannot each own one.
  const std::string too_many = error_of([&] { build_schedule(vgg_a(), cori(), per_layer("fc8=model", 1024, 1024)); });
  CHECK(too_many.find("1000 output units") != std::string::npos);
  CHECK(too_many.find("fc8=model") != std::string::npos);
  // A Lee-style replicated layer delays its update into the next iteration.
  StrategyOptions one = per_layer("fc6=replicated", 4);
  one.iterations = 1;
  one.warmup_iterations = 0;
  CHECK(error_of([&] { build_schedule(vgg_a(), cori(), one); }).find("at least 2 iterations") != std::string::npos);
}

TEST_CASE("every per_layer assignment verifies, partitions included, on 1..8 ranks") {
  const std::vector<std::string> assignments = {
      "",
      "fc*=model",
      "conv*=data,fc6=model,fc7=model,fc8=replicated",
      "fc6=replicated,fc7=replicated",
      "conv5*=model,fc6=replicated",
      "conv1=replicated,conv2=model,fc7=model",
      "*=model",
      "*=replicated",
  };
  for (const Network* network : {&vgg_a(), &alexnet()})
    for (const std::string& assign : assignments)
      for (int ranks : {1, 2, 3, 4, 8})
        for (const char* sync : {"end", "layerwise", "chunks"}) {
          StrategyOptions options = per_layer(assign, ranks, 48);
          options.set("sync", sync).set("k", 6);
          const Schedule schedule = build_schedule(*network, cori(), options);
          INFO(network->name << " " << assign << " on " << ranks << " ranks, sync " << sync);
          CHECK(verify(schedule).empty());
          const std::vector<VerifyIssue> issues = verify_partitions(schedule, *network);
          CHECK(issues.empty());
          if (!issues.empty()) INFO(issues.front().message);
          // Each rank updates each of its parameterised layers once per iteration (+ the
          // flush of Lee-style replicated layers, outside the iterations).
          std::map<int, int> updates;
          for (const Op& op : schedule.programs[std::size_t(ranks - 1)].ops)
            if (op.kind == OpKind::compute && op.phase == Phase::update) ++updates[op.layer];
          CHECK(updates.size() == std::size_t(network->fc_layers().size() + 5 + (network == &vgg_a() ? 3 : 0)));
        }
}

TEST_CASE("hybrid: conv layers data, fc layers model, small classifiers replicated") {
  const Schedule schedule = build_schedule(vgg_a(), cori(), [] {
    StrategyOptions o = per_layer("", 8);
    o.name = "hybrid";
    o.values = nlohmann::json::object();
    return o;
  }());
  const std::vector<LayerPartition>& p = schedule.programs[3].partitions;
  CHECK(p[std::size_t(vgg_a().find("conv3_1"))].kind == PartitionKind::data);
  CHECK(p[std::size_t(vgg_a().find("conv3_1"))].batch == Range{3 * 32, 32});
  // fc6: 4096 neurons over 8 ranks, rank 3 owns [1536, 2048); the whole batch.
  CHECK(p[std::size_t(vgg_a().find("fc6"))].kind == PartitionKind::model);
  CHECK(p[std::size_t(vgg_a().find("fc6"))].units == Range{1536, 512});
  CHECK(p[std::size_t(vgg_a().find("fc6"))].batch == Range{0, 256});
  // fc8 (1000) over 8 ranks: model. veeriah-cifar10's fc2 (10 classes) over 16 ranks: replicated.
  CHECK(p[std::size_t(vgg_a().find("fc8"))].kind == PartitionKind::model);
  const Network small = load_network("veeriah-cifar10");
  CHECK(hybrid_assignment(small, 16).kinds[std::size_t(small.find("fc2"))] == PartitionKind::replicated);
  CHECK(hybrid_assignment(small, 8).kinds[std::size_t(small.find("fc2"))] == PartitionKind::model);
  // Entering fc6: allgather of pool5's batch slices; leaving: errors reduce-scattered.
  const int fc6 = vgg_a().find("fc6");
  REQUIRE(transitions(schedule, Payload::activations, fc6).size() == 1);
  CHECK(transitions(schedule, Payload::activations, fc6)[0]->kind == CollectiveKind::allgather);
  CHECK(transitions(schedule, Payload::activations, fc6)[0]->split == Split::batch);
  REQUIRE(transitions(schedule, Payload::errors, fc6 - 1).size() == 1);
  CHECK(transitions(schedule, Payload::errors, fc6 - 1)[0]->kind == CollectiveKind::reduce_scatter);
  // No gradient exchange for the model-parallel fc layers.
  for (const Collective& c : schedule.collectives)
    if (c.payload == Payload::gradients)
      for (int l : c.layers) CHECK(vgg_a().layers[std::size_t(l)].spec.kind == LayerKind::conv);
  // GEMM shapes follow the slice: fc6 forward W (512 × 25088) · A (25088 × 256).
  for (const Op& op : schedule.programs[3].ops)
    if (op.label == "fc6.fwd") CHECK(op.gemm == GemmShape{512, 256, 25088});
}

TEST_CASE("closed forms: model-parallel volumes equal the Intel note's Send_comms + Recv_comms") {
  // Intel note, model parallelism, per node and layer, forward pass:
  //   Send_comms = 4 · ifm_b · input_w · input_h · MINIBATCH
  //   Recv_comms = 4 · ifm_b · input_w · input_h · MINIBATCH · (ifm / ifm_b − 1)
  // with ifm_b = ifm / P input maps per node. A model layer's input allgather: each node
  // contributes its block (Send_comms) and receives the P − 1 others (Recv_comms).
  const int P = 8;
  const std::int64_t MB = 256;
  const Schedule schedule = build_schedule(vgg_a(), cori(), per_layer("conv4*=model,fc6=model,fc7=model", P, MB));
  struct Case {
    const char* layer;
    double ifm, input_w, input_h;
  };
  // conv4_2: input = conv4_1's 512 maps of 28 × 28 (model-split over maps);
  // conv5_1: input = pool4 (conv4_2's 512 maps pooled to 14 × 14), a data layer fed by a model one;
  // fc7: input = fc6's 4096 neurons (1 × 1), model-split.
  for (const Case& c : {Case{"conv4_2", 512, 28, 28}, Case{"fc7", 4096, 1, 1}}) {
    const double ifm_b = c.ifm / P;
    const double send = 4.0 * ifm_b * c.input_w * c.input_h * double(MB);
    const double recv = 4.0 * ifm_b * c.input_w * c.input_h * double(MB) * (c.ifm / ifm_b - 1.0);
    const auto gathers = transitions(schedule, Payload::activations, vgg_a().find(c.layer));
    REQUIRE(gathers.size() == 1);
    const Collective& g = *gathers[0];
    CAPTURE(c.layer, send, recv, g.bytes);
    CHECK(g.kind == CollectiveKind::allgather);
    CHECK(g.split == Split::units);
    CHECK(g.bytes == Approx(send).epsilon(1e-12));                             // this node's block
    CHECK(double(g.group.size() - 1) * g.bytes == Approx(recv).epsilon(1e-12));  // the others' blocks
  }
  // A model layer after a data-parallel one (fc6 after pool5, 512 maps of 7 × 7): the same
  // volume, cut along the batch instead (MB / P images of every map = ifm_b maps of MB images).
  const auto fc6 = transitions(schedule, Payload::activations, vgg_a().find("fc6"));
  REQUIRE(fc6.size() == 1);
  CHECK(fc6[0]->split == Split::batch);
  CHECK(fc6[0]->bytes == Approx(4.0 * (512.0 / P) * 7 * 7 * MB).epsilon(1e-12));
}

TEST_CASE("closed forms: the Intel data-vs-model rule on F1 (ofm 3072)") {
  // Intel note: model parallelism is favoured when 3 · input_w · input_h · MB < ofm · kw · kh;
  // for F1 (ofm 3072, 1 × 1) that is MB < 1024. The note's data-parallel volume per node is the
  // weight gradient, 4 · ifm · ofm bytes; its model-parallel ratio assumes three passes moving
  // the forward volume. The schedule's model-parallel F1 moves, per node: the input allgather,
  // Send + Recv = 4 · ifm · MB, and the reduce-scatter of the input errors, each node sending
  // and receiving (P − 1)/P of 4 · ifm · MB: 4 · ifm · MB · (1 + 2 (P − 1)/P) → 3 · 4 · ifm · MB.
  const Network network = f1_network();
  const int P = 128;
  const int f1 = network.find("f1");
  const auto volumes = [&](std::int64_t batch) {
    const Schedule model = build_schedule(network, cori(), per_layer("f1=model", P, batch));
    const Collective& gather = *transitions(model, Payload::activations, f1).at(0);
    const Collective& scatter = *transitions(model, Payload::errors, f1 - 1).at(0);
    REQUIRE(scatter.kind == CollectiveKind::reduce_scatter);
    const double model_bytes = double(P) * gather.bytes + 2.0 * double(P - 1) / double(P) * scatter.bytes;
    StrategyOptions dp_options = per_layer("", P, batch);
    dp_options.set("sync", "end");
    const Schedule data = build_schedule(network, cori(), dp_options);
    double data_bytes = 0;
    for (const Collective& c : data.collectives)
      if (c.iteration == 0 && c.payload == Payload::gradients && c.layers == std::vector<int>{f1}) data_bytes = c.bytes;
    // 4 · (1024 · 3072 weights + 3072 biases)
    CHECK(data_bytes == Approx(4.0 * (1024.0 * 3072 + 3072)).epsilon(1e-12));
    CHECK(model_bytes == Approx(4.0 * 1024 * double(batch) * (1.0 + 2.0 * (P - 1) / P)).epsilon(1e-12));
    return std::pair{model_bytes, data_bytes};
  };
  for (std::int64_t batch : {128, 256, 512, 896, 1024}) {
    const auto [model_bytes, data_bytes] = volumes(batch);
    CAPTURE(batch);
    CHECK(model_bytes < data_bytes);
  }
  for (std::int64_t batch : {1152, 2048, 4096}) {
    const auto [model_bytes, data_bytes] = volumes(batch);
    CAPTURE(batch);
    CHECK(model_bytes > data_bytes);
  }
}

TEST_CASE("per_layer expresses dp and dp_layerwise: the same ops and the same prediction") {
  for (const auto& [strategy, sync] : {std::pair{"dp", "end"}, std::pair{"dp_layerwise", "layerwise"}}) {
    for (int ranks : {1, 4, 16}) {
      StrategyOptions reference = per_layer("", ranks);
      reference.name = strategy;
      reference.values = nlohmann::json::object();
      StrategyOptions general = per_layer("conv*=data,fc*=data", ranks);
      general.set("sync", sync);
      const Schedule a = build_schedule(vgg_a(), cori(), reference);
      const Schedule b = build_schedule(vgg_a(), cori(), general);
      INFO(strategy << " on " << ranks);
      REQUIRE(a.programs[0].ops.size() == b.programs[0].ops.size());
      for (std::size_t i = 0; i < a.programs[0].ops.size(); ++i) {
        const Op& x = a.programs[0].ops[i];
        const Op& y = b.programs[0].ops[i];
        CHECK((x.kind == y.kind && x.label == y.label && x.flops == y.flops && x.collective == y.collective));
      }
      CHECK(a.collectives.size() == b.collectives.size());
      const double ta = analytic::analytic_replay(a, cori()).ranks[0].marks.back().time_s;
      const double tb = analytic::analytic_replay(b, cori()).ranks[0].marks.back().time_s;
      CHECK(ta == tb);
    }
  }
}

TEST_CASE("per_layer expresses lee's replicated fc layers: the same ops and the same prediction") {
  for (int ranks : {1, 4, 16}) {
    for (int f : {1, 2}) {
      StrategyOptions reference = per_layer("", ranks);
      reference.name = "lee";
      reference.values = {{"k", 9}, {"f", f}};
      StrategyOptions general = per_layer(f == 1 ? "fc6=replicated" : "fc6=replicated,fc7=replicated", ranks);
      general.set("sync", "chunks").set("k", 9);
      const Schedule a = build_schedule(vgg_a(), cori(), reference);
      const Schedule b = build_schedule(vgg_a(), cori(), general);
      INFO("lee k 9 f " << f << " on " << ranks);
      REQUIRE(a.programs[0].ops.size() == b.programs[0].ops.size());
      std::size_t differing = 0;
      for (std::size_t i = 0; i < a.programs[0].ops.size(); ++i) {
        const Op& x = a.programs[0].ops[i];
        const Op& y = b.programs[0].ops[i];
        if (!(x.kind == y.kind && x.label == y.label && x.flops == y.flops && x.collective == y.collective)) ++differing;
      }
      CHECK(differing == 0);
      CHECK(a.programs[1 % ranks].partitions == b.programs[1 % ranks].partitions);
      const double ta = analytic::analytic_replay(a, cori()).ranks[0].marks.back().time_s;
      const double tb = analytic::analytic_replay(b, cori()).ranks[0].marks.back().time_s;
      CHECK(ta == tb);
    }
  }
}

TEST_CASE("verifier: partitions must tile, model slices must not be empty, transitions must deliver") {
  const Schedule good = build_schedule(vgg_a(), cori(), per_layer("fc6=model", 4));
  REQUIRE(verify_partitions(good, vgg_a()).empty());
  const int fc6 = vgg_a().find("fc6");
  const auto first_message = [](const Schedule& s) {
    const auto issues = verify_partitions(s, vgg_a());
    return issues.empty() ? std::string() : issues.front().message;
  };
  {  // rank 2 claims rank 1's neurons: the slices overlap and leave a gap
    Schedule bad = good;
    bad.programs[2].partitions[std::size_t(fc6)].units = bad.programs[1].partitions[std::size_t(fc6)].units;
    CHECK(first_message(bad).find("do not tile") != std::string::npos);
    CHECK(first_message(bad).find("fc6") != std::string::npos);
  }
  {  // an empty model slice
    Schedule bad = good;
    bad.programs[3].partitions[std::size_t(fc6)].units.count = 0;
    CHECK(first_message(bad).find("model slice is empty") != std::string::npos);
    CHECK(verify_partitions(bad, vgg_a()).front().rank == 3);
  }
  {  // the allgather into fc6 removed: fc6's input is not delivered
    Schedule bad = good;
    const int gather = transitions(good, Payload::activations, fc6).at(0)->id;
    for (Program& program : bad.programs) {
      std::vector<Op>& ops = program.ops.mutable_vector();
      std::erase_if(ops, [&](const Op& op) { return op.kind != OpKind::compute && op.collective == gather; });
    }
    const auto issues = verify_partitions(bad, vgg_a());
    REQUIRE(!issues.empty());
    CHECK(issues.front().message.find("needs input") != std::string::npos);
    CHECK(issues.front().message.find("fc6") != std::string::npos);
    CHECK(issues.front().op >= 0);
    CHECK_THROWS_AS(verify_or_throw(bad, "<test>", &vgg_a()), InputError);
  }
  {  // a rank's kind differs from the others'
    Schedule bad = good;
    bad.programs[1].partitions[std::size_t(fc6)].kind = PartitionKind::data;
    CHECK(first_message(bad).find("differs") != std::string::npos);
  }
}

TEST_CASE("partitions and op slices survive the JSON round trip") {
  const Schedule schedule = build_schedule(vgg_a(), cori(), per_layer("conv5*=model,fc6=model", 3, 48));
  const Schedule back = schedule_from_json(to_json(schedule), "<round trip>");
  REQUIRE(back.ranks() == 3);
  for (int r = 0; r < 3; ++r) {
    CHECK(back.programs[std::size_t(r)].partitions == schedule.programs[std::size_t(r)].partitions);
    for (std::size_t i = 0; i < schedule.programs[std::size_t(r)].ops.size(); ++i)
      CHECK(back.programs[std::size_t(r)].ops[i].units == schedule.programs[std::size_t(r)].ops[i].units);
  }
  for (std::size_t c = 0; c < schedule.collectives.size(); ++c)
    CHECK(back.collectives[c].split == schedule.collectives[c].split);
  CHECK(verify_partitions(back, vgg_a()).empty());
}
