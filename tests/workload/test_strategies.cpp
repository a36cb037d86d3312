#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "workload/registry.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

namespace {

const Network& vgg_a() {
  static const Network network = load_network("vgg-a");
  return network;
}
const Platform& cori() {
  static const Platform platform = load_platform("cori-haswell");
  return platform;
}

StrategyOptions options_for(const std::string& name, int ranks, std::int64_t batch = 256) {
  StrategyOptions options;
  options.name = name;
  options.ranks = ranks;
  options.global_batch = batch;
  return options;
}

std::vector<const Collective*> collectives_of(const Schedule& schedule, int iteration) {
  std::vector<const Collective*> found;
  for (const Collective& c : schedule.collectives)
    if (c.iteration == iteration) found.push_back(&c);
  return found;
}

int layer(const std::string& name) { return vgg_a().find(name); }
int layer_index(const std::string& name) { return layer(name); }

}  // namespace

// VGG-A (VGG-11) has 132,863,336 parameters (Simonyan & Zisserman config A; the torchvision
// vgg11 count), so data parallelism reduces 4 bytes x 132,863,336 per iteration.
constexpr double kVggAParameterBytes = 4.0 * 132863336.0;

TEST_CASE("dp: one allreduce per parameterised layer carrying every gradient") {
  const Schedule schedule = build_schedule(vgg_a(), cori(), options_for("dp", 8));
  CHECK(verify(schedule).empty());
  const auto iteration1 = collectives_of(schedule, 1);
  CHECK(iteration1.size() == 11);  // 8 conv + 3 fc
  double bytes = 0;
  for (const Collective* c : iteration1) {
    bytes += c->bytes;
    CHECK(c->kind == CollectiveKind::allreduce);
    CHECK(c->group.size() == 8);
    CHECK(c->payload == Payload::gradients);
  }
  CHECK(bytes == Approx(kVggAParameterBytes).epsilon(1e-12));
}

TEST_CASE("dp: no compute runs between the first post and the last wait of an iteration") {
  const Schedule schedule = build_schedule(vgg_a(), cori(), options_for("dp", 4));
  const auto& ops = schedule.programs[2].ops;
  bool communicating = false;
  int pending = 0;
  for (const Op& op : ops) {
    if (op.kind == OpKind::post) { communicating = true; ++pending; }
    if (op.kind == OpKind::wait && --pending == 0) communicating = false;
    if (op.kind == OpKind::compute) CHECK_FALSE(communicating);
  }
}

TEST_CASE("compute FLOPs follow the Intel formula and split evenly over ranks") {
  const Schedule one = build_schedule(vgg_a(), cori(), options_for("dp", 1));
  const Schedule four = build_schedule(vgg_a(), cori(), options_for("dp", 4));
  // conv1 forward GEMM: 2 * ifm * ofm * kw * kh * ow * oh per image = 2*3*64*3*3*224*224 = 173,408,256
  const auto conv1_fwd = std::find_if(one.programs[0].ops.begin(), one.programs[0].ops.end(),
                                      [](const Op& op) { return op.label == "conv1.fwd"; });
  REQUIRE(conv1_fwd != one.programs[0].ops.end());
  CHECK(conv1_fwd->flops == Approx(173408256.0 * 256).epsilon(1e-12));
  CHECK(conv1_fwd->gemm == GemmShape{64, 256 * 224 * 224, 27});  // Lee Eq. 4-5: D_o x N R_o C_o x D_i R_f C_f
  const auto total = [](const Schedule& s, int rank) {
    double flops = 0;
    for (const Op& op : s.programs[std::size_t(rank)].ops)
      if (op.kind == OpKind::compute && op.phase != Phase::update) flops += op.flops;
    return flops;
  };
  CHECK(total(four, 3) == Approx(total(one, 0) / 4).epsilon(1e-12));
}

TEST_CASE("lee (k = 9, f = 2) on VGG-A follows Algorithm 2") {
  const int ranks = 8;
  const Schedule schedule = build_schedule(vgg_a(), cori(), options_for("lee", ranks));
  REQUIRE(verify(schedule).empty());
  const auto iteration1 = collectives_of(schedule, 1);
  // "Algorithm 2 has 2f+2 communications at each iteration" (Lee et al. Sec. III-C.3).
  CHECK(iteration1.size() == 2 * 2 + 2);

  std::map<std::string, const Collective*> by_label;
  for (const Collective* c : iteration1) by_label[c->label] = c;
  REQUIRE(by_label.count("allreduce chunk1"));
  REQUIRE(by_label.count("allreduce chunk2"));
  // k = 9 counted layers from the output end: fc8 fc7 fc6 pool5 conv5_2 conv5_1 pool4 conv4_2 conv4_1;
  // fc6 and fc7 replicate their gradient calculation, so chunk 1 holds fc8 and conv4_1..conv5_2:
  // 4096*1000+1000 + (256*512*9+512) + 3*(512*512*9+512) = 12,356,584 parameters.
  CHECK(by_label["allreduce chunk1"]->bytes == Approx(4.0 * 12356584).epsilon(1e-12));
  std::vector<int> chunk1 = by_label["allreduce chunk1"]->layers;
  std::sort(chunk1.begin(), chunk1.end());
  CHECK(chunk1 == std::vector<int>{layer("conv4_1"), layer("conv4_2"), layer("conv5_1"), layer("conv5_2"), layer("fc8")});
  // Chunk 2 carries everything else that is not replicated: all but fc6, fc7 and chunk 1.
  const double fc6 = 25088.0 * 4096 + 4096, fc7 = 4096.0 * 4096 + 4096;
  CHECK(by_label["allreduce chunk2"]->bytes ==
        Approx(kVggAParameterBytes - 4.0 * (12356584 + fc6 + fc7)).epsilon(1e-12));

  // Replicated fc6: gathering (K_b + K_c) N = (25,088 + 4,096) * 256 = 7,471,104 values
  // (Lee et al. Sec. III-C.2) replaces reducing K_b K_c = 102,760,448 gradients.
  const Collective* gather_a = by_label.at("allgather A fc6");
  const Collective* gather_e = by_label.at("allgather E fc6");
  CHECK(gather_a->kind == CollectiveKind::allgather);
  CHECK((gather_a->bytes + gather_e->bytes) * ranks == Approx(4.0 * 7471104).epsilon(1e-12));
  CHECK(gather_a->payload == Payload::activations);
  CHECK(gather_e->payload == Payload::errors);
}

TEST_CASE("lee: the replicated fc gradient covers the full batch and is delayed into the next forward") {
  const Schedule schedule = build_schedule(vgg_a(), cori(), options_for("lee", 16));
  const auto& ops = schedule.programs[5].ops;
  // Full-batch weight gradient of fc6: 2 * K_b * K_c * N = 2 * 25088 * 4096 * 256, whatever P is.
  int full_batch_gradients = 0;
  std::size_t mark0 = 0, delayed = 0, fc6_forward_after_mark0 = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind == OpKind::mark && ops[i].iteration == 0) mark0 = i;
    if (ops[i].label == "fc6.bwd_wf") {
      ++full_batch_gradients;
      CHECK(ops[i].flops == Approx(2.0 * 25088 * 4096 * 256).epsilon(1e-12));
      CHECK(ops[i].batch == 256);
      if (mark0 != 0 && delayed == 0) delayed = i;
    }
    if (ops[i].label == "fc6.fwd" && mark0 != 0 && fc6_forward_after_mark0 == 0) fc6_forward_after_mark0 = i;
  }
  // Two iterations: one delayed into iteration 1, one in the flush after the last mark.
  CHECK(full_batch_gradients == 2);
  CHECK(delayed > mark0);
  CHECK(delayed < fc6_forward_after_mark0);
  // No local (sub-batch) weight gradient for the replicated layers.
  CHECK(std::none_of(ops.begin(), ops.end(), [](const Op& op) { return op.label == "fc6.bwd_w" || op.label == "fc7.bwd_w"; }));
}

// A layer's owners update it once per iteration; with separate worker groups (veeriah's conv
// and fc workers, conv_split's master) the owner is not rank 0, so each layer counts the rank
// that updates it most.
TEST_CASE("every strategy updates every parameterised layer once per iteration and verifies") {
  for (const std::string& name : strategy_names()) {
    for (int ranks : {1, 2, 3, 4, 8}) {
      if (ranks < strategy_spec(name).min_ranks) continue;
      if (name == "veeriah" && ranks % 2 != 0) continue;  // K conv + K fc workers
      StrategyOptions options = options_for(name, ranks, 48);
      options.iterations = 3;
      if (name == "lee") options.set("k", 6).set("f", 1);
      if (name == "dp_buckets") options.set("bucket_bytes", 4.0 * 1024 * 1024);
      const Schedule schedule = build_schedule(vgg_a(), cori(), options);
      INFO(name << " on " << ranks << " ranks");
      CHECK(verify(schedule).empty());
      CHECK(schedule.ranks() == ranks);
      std::map<int, int> updates;
      for (const Program& program : schedule.programs) {
        std::map<int, int> mine;
        for (const Op& op : program.ops)
          if (op.kind == OpKind::compute && op.phase == Phase::update) ++mine[op.layer];
        for (const auto& [l, count] : mine) updates[l] = std::max(updates[l], count);
      }
      CHECK(updates.size() == 11);
      for (const auto& [l, count] : updates) CHECK(count == 3);
    }
  }
}

TEST_CASE("dp_buckets: buckets fill to the bucket size in backward order") {
  StrategyOptions options = options_for("dp_buckets", 4);
  options.set("bucket_bytes", 25.0 * 1024 * 1024);
  const Schedule schedule = build_schedule(vgg_a(), cori(), options);
  const auto buckets = collectives_of(schedule, 0);
  double bytes = 0;
  int previous_top = 1 << 30;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    bytes += buckets[i]->bytes;
    if (i + 1 < buckets.size()) CHECK(buckets[i]->bytes >= options.number("bucket_bytes"));
    CHECK(buckets[i]->layers.front() < previous_top);  // later buckets hold lower layers
    previous_top = buckets[i]->layers.back();
  }
  CHECK(bytes == Approx(kVggAParameterBytes).epsilon(1e-12));
  // A one-byte bucket degenerates to one allreduce per layer (dp_layerwise).
  options.set("bucket_bytes", 1);
  CHECK(collectives_of(build_schedule(vgg_a(), cori(), options), 0).size() == 11);
}

TEST_CASE("lee with k covering every layer and f = 0 is a single allreduce") {
  StrategyOptions options = options_for("lee", 4);
  options.set("k", 16).set("f", 0);
  const Schedule schedule = build_schedule(vgg_a(), cori(), options);
  const auto iteration0 = collectives_of(schedule, 0);
  REQUIRE(iteration0.size() == 1);
  CHECK(iteration0[0]->bytes == Approx(kVggAParameterBytes).epsilon(1e-12));
}

TEST_CASE("options out of range are bad input naming the option and value") {
  const auto expect = [](StrategyOptions options, const std::string& path, const std::string& value) {
    options.origin = "command line";
    try {
      build_schedule(vgg_a(), cori(), options);
      FAIL("no error for " << path);
    } catch (const InputError& error) {
      CHECK(error.file() == "command line");
      CHECK(error.json_path() == path);
      CHECK(error.value() == value);
    }
  };
  StrategyOptions lee = options_for("lee", 4);
  lee.set("k", 0);
  expect(lee, "/k", "0");
  lee.set("k", 17);  // VGG-A has 16 counted layers
  expect(lee, "/k", "17");
  lee.set("k", 9);
  lee.set("f", 4);  // 3 fc layers
  expect(lee, "/f", "4");
  lee.set("f", -1);
  expect(lee, "/f", "-1");
  StrategyOptions dp = options_for("dp", 4);
  dp.set("k", 3);  // dp has no k
  expect(dp, "/k", "3");
  expect(options_for("dp", 3, 256), "/batch", "256 over 3 ranks");
  expect(options_for("model_parallel", 2), "/strategy", "model_parallel");
  StrategyOptions warm = options_for("dp", 2);
  warm.warmup_iterations = 2;
  expect(warm, "/warmup", "2");
}

TEST_CASE("data-parallel ranks share one op list, an uneven split gives two") {
  const Schedule even = build_schedule(vgg_a(), cori(), options_for("lee", 8));
  for (const Program& program : even.programs) CHECK(program.ops.same_storage(even.programs[0].ops));

  StrategyOptions options = options_for("dp", 3, 256);
  options.uneven_batch = true;
  const Schedule uneven = build_schedule(vgg_a(), cori(), options);
  CHECK(verify(uneven).empty());
  // 256 = 86 + 85 + 85: rank 0 takes ceil(256/3), ranks 1 and 2 floor(256/3).
  const auto conv1_batch = [&](int rank) {
    for (const Op& op : uneven.programs[std::size_t(rank)].ops)
      if (op.label == "conv1.fwd") return op.batch;
    return std::int64_t(-1);
  };
  CHECK(conv1_batch(0) == 86);
  CHECK(conv1_batch(1) == 85);
  CHECK(conv1_batch(2) == 85);
  CHECK(uneven.programs[1].ops.same_storage(uneven.programs[2].ops));
  CHECK_FALSE(uneven.programs[0].ops.same_storage(uneven.programs[1].ops));
  // The FLOPs of all ranks add up to the full batch's.
  double total = 0, single = 0;
  for (const Program& program : uneven.programs)
    for (const Op& op : program.ops) total += op.phase == Phase::forward ? op.flops : 0;
  // Named: a range-for over a temporary's member does not extend the temporary's life (C++20).
  const Schedule one_rank = build_schedule(vgg_a(), cori(), options_for("dp", 1));
  for (const Op& op : one_rank.programs[0].ops) single += op.phase == Phase::forward ? op.flops : 0;
  CHECK(total == Approx(single).epsilon(1e-12));
}

TEST_CASE("dp_layerwise defer: the last gradients' allreduces are waited for in the next forward pass") {
  // Das et al.: with defer = 2 the allreduces of conv2 and conv1 (posted last in backward)
  // are waited for right before conv1's and conv2's forward in the next iteration; a flush
  // after the last mark applies the last ones, so every layer is still updated once per
  // iteration.
  StrategyOptions options = options_for("dp_layerwise", 4);
  options.iterations = 3;
  options.set("defer", 2);
  const Schedule schedule = build_schedule(vgg_a(), cori(), options);
  CHECK(verify(schedule).empty());
  const std::vector<Op>& ops = schedule.programs[0].ops.vector();
  const auto index_of = [&](const std::string& label, int occurrence) {
    int seen = 0;
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == OpKind::compute && ops[i].label == label && seen++ == occurrence) return int(i);
    return -1;
  };
  const auto mark_of = [&](int iteration) {
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].kind == OpKind::mark && ops[i].iteration == iteration) return int(i);
    return -1;
  };
  for (const char* layer : {"conv1", "conv2"}) {
    const std::string name = layer;
    // Iteration 0's update of this layer comes after mark 0, just before its forward in iteration 1.
    const int update = index_of(name + ".upd", 0);
    const int forward = index_of(name + ".im2col", 1);
    CHECK(update > mark_of(0));
    CHECK(update < forward);
    REQUIRE(ops[std::size_t(update - 1)].kind == OpKind::wait);
    const Collective& c = schedule.collectives[std::size_t(ops[std::size_t(update - 1)].collective)];
    CHECK(c.iteration == 0);
    CHECK(c.layers == std::vector<int>{layer_index(name)});
    // The flush: the last iteration's update after the last mark.
    CHECK(index_of(name + ".upd", 2) > mark_of(2));
  }
  // A layer not deferred (fc8) is updated before its iteration's mark.
  CHECK(index_of("fc8.upd", 0) < mark_of(0));
  // defer = 0 is today's dp_layerwise, op for op.
  StrategyOptions plain = options_for("dp_layerwise", 4);
  plain.iterations = 3;
  StrategyOptions zero = plain;
  zero.set("defer", 0);
  CHECK(build_schedule(vgg_a(), cori(), plain).programs[0].ops.size() ==
        build_schedule(vgg_a(), cori(), zero).programs[0].ops.size());
  options.set("defer", 12);  // VGG-A has 11 conv and fc layers
  CHECK_THROWS_AS(build_schedule(vgg_a(), cori(), options), InputError);
}

TEST_CASE("lee's defaults fit small networks, explicit values out of range are refused") {
  // veeriah-cifar10 counts 6 layers (2 conv, 2 pool, 2 fc): the default k = 9 becomes 6 (one
  // chunk with every gradient) and f = 2 stays 2; Schedule::options records what was built.
  const Network small = load_network("veeriah-cifar10");
  StrategyOptions options = options_for("lee", 2, 64);
  const Schedule schedule = build_schedule(small, cori(), options);
  CHECK(schedule.options.at("k") == 6);
  CHECK(schedule.options.at("f") == 2);
  options.set("k", 9);  // given explicitly: bad input naming the flag to set
  try {
    build_schedule(small, cori(), options);
    FAIL("k = 9 accepted on a 6-layer network");
  } catch (const InputError& e) {
    CHECK(e.json_path() == "/k");
    CHECK(std::string(e.what()).find("set --k") != std::string::npos);
  }
}

TEST_CASE("recomputed columns: one im2col_w op, a copy of the forward im2col, before every conv weight gradient") {
  const Network net = load_network("vgg-a");
  for (const std::string name : {"dp", "lee", "hybrid"}) {
    StrategyOptions o;
    o.name = name;
    o.global_batch = 256;
    o.ranks = 4;
    o.iterations = 2;
    const Schedule kept = build_schedule(net, Platform{}, o);
    o.recompute_columns = true;
    const Schedule recomputed = build_schedule(net, Platform{}, o);
    CHECK(recomputed.options.at("columns") == "recomputed");
    CHECK_FALSE(kept.options.contains("columns"));
    REQUIRE(recomputed.ranks() == kept.ranks());
    for (int r = 0; r < kept.ranks(); ++r) {
      const auto& before = kept.programs[std::size_t(r)].ops;
      const auto& after = recomputed.programs[std::size_t(r)].ops;
      std::size_t conv_weight_gradients = 0, added = 0;
      for (const Op& op : before)
        if (op.kind == OpKind::compute && op.phase == Phase::backward_weight && op.kernel == KernelClass::gemm &&
            net.layers[std::size_t(op.layer)].spec.kind == LayerKind::conv)
          ++conv_weight_gradients;
      CHECK(conv_weight_gradients == 8 * 2);  // VGG-A: 8 conv layers, 2 iterations
      for (std::size_t i = 0; i < after.size(); ++i) {
        const Op& op = after[i];
        if (op.kind != OpKind::compute || op.phase != Phase::backward_weight || op.kernel != KernelClass::im2col) continue;
        ++added;
        REQUIRE(i + 1 < after.size());
        const Op& next = after[i + 1];  // the weight-gradient GEMM of the same layer and batch
        CHECK((next.kernel == KernelClass::gemm && next.phase == Phase::backward_weight));
        CHECK(next.layer == op.layer);
        CHECK(next.batch == op.batch);
        CHECK(op.label == net.layers[std::size_t(op.layer)].spec.name + ".im2col_w");
        // Same work as the forward im2col of that layer: its bytes and batch.
        const auto fwd = std::find_if(after.begin(), after.end(), [&](const Op& f) {
          return f.kind == OpKind::compute && f.phase == Phase::forward && f.kernel == KernelClass::im2col &&
                 f.layer == op.layer;
        });
        REQUIRE(fwd != after.end());
        CHECK(fwd->bytes == op.bytes);
      }
      CHECK(added == conv_weight_gradients);
      CHECK(after.size() == before.size() + added);
    }
    // Identical programs stay one list (dp: every rank).
    if (name == "dp")
      for (int r = 1; r < recomputed.ranks(); ++r)
        CHECK(recomputed.programs[std::size_t(r)].ops.same_storage(recomputed.programs[0].ops));
  }
}
