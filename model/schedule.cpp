#include "model/schedule.hpp"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"

namespace cnnpar {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::forward: return "forward";
    case Phase::backward_data: return "backward_data";
    case Phase::backward_weight: return "backward_weight";
    case Phase::update: return "update";
  }
  return "?";
}

Phase phase_from_string(const std::string& text) {
  for (auto p : {Phase::forward, Phase::backward_data, Phase::backward_weight, Phase::update})
    if (text == to_string(p)) return p;
  throw std::invalid_argument("unknown phase (expected forward, backward_data, backward_weight or update)");
}

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::allreduce: return "allreduce";
    case CollectiveKind::allgather: return "allgather";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::bcast: return "bcast";
    case CollectiveKind::reduce: return "reduce";
    case CollectiveKind::gather: return "gather";
    case CollectiveKind::scatter: return "scatter";
    case CollectiveKind::alltoall: return "alltoall";
    case CollectiveKind::send: return "send";
  }
  return "?";
}

CollectiveKind collective_kind_from_string(const std::string& text) {
  for (auto k : {CollectiveKind::allreduce, CollectiveKind::allgather, CollectiveKind::reduce_scatter,
                 CollectiveKind::bcast, CollectiveKind::reduce, CollectiveKind::gather, CollectiveKind::scatter,
                 CollectiveKind::alltoall, CollectiveKind::send})
    if (text == to_string(k)) return k;
  throw std::invalid_argument(
      "unknown collective kind (expected allreduce, allgather, reduce_scatter, bcast, reduce, gather, scatter, "
      "alltoall or send)");
}

const char* to_string(Payload payload) {
  switch (payload) {
    case Payload::none: return "none";
    case Payload::gradients: return "gradients";
    case Payload::activations: return "activations";
    case Payload::errors: return "errors";
    case Payload::weights: return "weights";
    case Payload::increments: return "increments";
    case Payload::batch_statistics: return "batch_statistics";
    case Payload::error_statistics: return "error_statistics";
  }
  return "?";
}

Payload payload_from_string(const std::string& text) {
  for (auto p : {Payload::none, Payload::gradients, Payload::activations, Payload::errors, Payload::weights,
                 Payload::increments, Payload::batch_statistics, Payload::error_statistics})
    if (text == to_string(p)) return p;
  throw std::invalid_argument(
      "unknown payload (expected none, gradients, activations, errors, weights, increments, batch_statistics or "
      "error_statistics)");
}

const char* to_string(Split split) {
  switch (split) {
    case Split::none: return "none";
    case Split::batch: return "batch";
    case Split::units: return "units";
  }
  return "?";
}

Split split_from_string(const std::string& text) {
  for (auto s : {Split::none, Split::batch, Split::units})
    if (text == to_string(s)) return s;
  throw std::invalid_argument("unknown split (expected none, batch or units)");
}

const char* to_string(OpKind kind) {
  switch (kind) {
    case OpKind::compute: return "compute";
    case OpKind::post: return "post";
    case OpKind::wait: return "wait";
    case OpKind::mark: return "mark";
    case OpKind::serve: return "serve";
  }
  return "?";
}

const char* to_string(ServeOrder order) { return order == ServeOrder::arrival ? "arrival" : "together"; }

ServeOrder serve_order_from_string(const std::string& text) {
  if (text == "arrival") return ServeOrder::arrival;
  if (text == "together") return ServeOrder::together;
  throw std::invalid_argument("unknown serve order (expected arrival or together)");
}

std::string Op::kernel_name() const {
  return kernel == KernelClass::gemm ? gemm.to_string() : std::string(to_string(kernel));
}

Op Op::compute_op(std::string label, int layer, Phase phase, KernelClass kernel, double flops, double bytes,
                  std::int64_t batch, GemmShape gemm) {
  Op op;
  op.kind = OpKind::compute;
  op.label = std::move(label);
  op.layer = layer;
  op.phase = phase;
  op.kernel = kernel;
  op.gemm = gemm;
  op.flops = flops;
  op.bytes = bytes;
  op.batch = batch;
  return op;
}

Op Op::post_op(int collective) {
  Op op;
  op.kind = OpKind::post;
  op.collective = collective;
  return op;
}

Op Op::wait_op(int collective) {
  Op op;
  op.kind = OpKind::wait;
  op.collective = collective;
  return op;
}

Op Op::mark_op(int iteration) {
  Op op;
  op.kind = OpKind::mark;
  op.iteration = iteration;
  return op;
}

Op Op::serve_op(int serve) {
  Op op;
  op.kind = OpKind::serve;
  op.serve = serve;
  return op;
}

int Schedule::add_serve(Serve serve) {
  serves.push_back(std::move(serve));
  return int(serves.size()) - 1;
}

const ServeEntry* Schedule::served(int id) const {
  for (const Serve& serve : serves)
    for (const ServeEntry& entry : serve.entries)
      if (entry.push == id || entry.reply == id) return &entry;
  return nullptr;
}

int Schedule::add_collective(Collective collective) {
  collective.id = int(collectives.size());
  if (!std::is_sorted(collective.group.begin(), collective.group.end()))
    std::sort(collective.group.begin(), collective.group.end());
  collectives.push_back(std::move(collective));
  return collectives.back().id;
}

// ---- JSON -----------------------------------------------------------------

namespace {

nlohmann::json op_to_json(const Op& op) {
  switch (op.kind) {
    case OpKind::compute: {
      nlohmann::json j = {{"op", "compute"}, {"label", op.label},   {"layer", op.layer},
                          {"phase", to_string(op.phase)},           {"kernel", op.kernel_name()},
                          {"flops", op.flops}, {"bytes", op.bytes}, {"batch", op.batch}};
      if (op.units > 0) j["units"] = op.units;
      if (op.images.count > 0) j["images"] = {op.images.begin, op.images.count};
      return j;
    }
    case OpKind::post: return {{"op", "post"}, {"collective", op.collective}};
    case OpKind::wait: return {{"op", "wait"}, {"collective", op.collective}};
    case OpKind::mark: return {{"op", "mark"}, {"iteration", op.iteration}};
    case OpKind::serve: return {{"op", "serve"}, {"serve", op.serve}};
  }
  return {};
}

// Parses "gemm MxNxK" or a kernel class name.
void parse_kernel(const JsonNode& node, Op& op) {
  const std::string text = node.as_string();
  if (text.starts_with("gemm ")) {
    long long m = 0, n = 0, k = 0;
    char x1 = 0, x2 = 0;
    if (std::sscanf(text.c_str() + 5, "%lld%c%lld%c%lld", &m, &x1, &n, &x2, &k) != 5 || x1 != 'x' || x2 != 'x' ||
        m <= 0 || n <= 0 || k <= 0)
      node.fail("expected \"gemm MxNxK\" with positive M, N, K");
    op.kernel = KernelClass::gemm;
    op.gemm = {m, n, k};
    return;
  }
  try {
    op.kernel = kernel_class_from_string(text);
  } catch (const std::invalid_argument& error) {
    node.fail(error.what());
  }
}

Range range_from_json(const JsonNode& node) {
  const std::vector<JsonNode> pair = node.items();
  if (pair.size() != 2) node.fail("expected [begin, count]");
  return {pair[0].as_int_in(0, limits::kMaxTensorElements), pair[1].as_int_in(0, limits::kMaxTensorElements)};
}

// Beyond these an op's time overflows or stops being a prediction.
constexpr double kMaxOpFlops = 1e24;
constexpr double kMaxBytes = 1e18;

Op op_from_json(const JsonNode& node, int collective_count, int serve_count) {
  Op op;
  const std::string kind = node.at("op").as_string();
  if (kind == "compute") {
    node.check_keys({"op", "label", "layer", "phase", "kernel", "flops", "bytes", "batch", "units", "images"});
    op.kind = OpKind::compute;
    op.label = node.at("label").as_string();
    op.layer = node.has("layer") ? int(node.at("layer").as_int_in(-1, limits::kMaxLayers)) : -1;
    const JsonNode phase = node.at("phase");
    try {
      op.phase = phase_from_string(phase.as_string());
    } catch (const std::invalid_argument& error) {
      phase.fail(error.what());
    }
    parse_kernel(node.at("kernel"), op);
    op.flops = node.at("flops").as_number_in(0, kMaxOpFlops);
    op.bytes = node.has("bytes") ? node.at("bytes").as_number_in(0, kMaxBytes) : 0;
    op.batch = node.has("batch") ? node.at("batch").as_int_in(0, limits::kMaxBatch) : 0;
    op.units = node.has("units") ? node.at("units").as_int_in(0, limits::kMaxTensorElements) : 0;
    if (node.has("images")) op.images = range_from_json(node.at("images"));
  } else if (kind == "post" || kind == "wait") {
    node.check_keys({"op", "collective"});
    op.kind = kind == "post" ? OpKind::post : OpKind::wait;
    const JsonNode id = node.at("collective");
    op.collective = int(id.as_int_in(0, limits::kMaxIndex));
    if (op.collective >= collective_count) id.fail(fmt::format("no collective with this id ({} defined)", collective_count));
  } else if (kind == "mark") {
    node.check_keys({"op", "iteration"});
    op.kind = OpKind::mark;
    op.iteration = int(node.at("iteration").as_int_in(0, limits::kMaxIterations));
  } else if (kind == "serve") {
    node.check_keys({"op", "serve"});
    op.kind = OpKind::serve;
    const JsonNode index = node.at("serve");
    op.serve = int(index.as_int_in(0, limits::kMaxIndex));
    if (op.serve >= serve_count) index.fail(fmt::format("no serve with this index ({} defined)", serve_count));
  } else {
    node.at("op").fail("unknown op (expected compute, post, wait, mark or serve)");
  }
  return op;
}

Serve serve_from_json(const JsonNode& node, int collective_count, int ranks) {
  node.check_keys({"order", "entries", "merge", "gamma"});
  Serve serve;
  const JsonNode order = node.at("order");
  try {
    serve.order = serve_order_from_string(order.as_string());
  } catch (const std::invalid_argument& error) {
    order.fail(error.what());
  }
  for (const JsonNode& entry : node.at("entries").items()) {
    entry.check_keys({"push", "reply", "worker", "round"});
    ServeEntry e;
    for (auto [key, field] : {std::pair{"push", &e.push}, std::pair{"reply", &e.reply}}) {
      const JsonNode id = entry.at(key);
      *field = int(id.as_int_in(0, limits::kMaxIndex));
      if (*field >= collective_count) id.fail(fmt::format("no collective with this id ({} defined)", collective_count));
    }
    const JsonNode worker = entry.at("worker");
    e.worker = int(worker.as_nonnegative_int());
    if (e.worker >= ranks) worker.fail(fmt::format("rank out of range (the schedule has {} ranks)", ranks));
    e.round = int(entry.at("round").as_int_in(0, limits::kMaxIterations));
    serve.entries.push_back(e);
  }
  serve.merge = op_from_json(node.at("merge"), collective_count, 0);
  if (node.has("gamma")) {
    const JsonNode gamma = node.at("gamma");
    serve.gamma = gamma.as_number_in(0, 1);
  }
  if (serve.merge.kind != OpKind::compute) node.at("merge").fail("a merge is a compute op");
  return serve;
}

LayerPartition partition_from_json(const JsonNode& node) {
  node.check_keys({"kind", "batch", "units"});
  LayerPartition p;
  const JsonNode kind = node.at("kind");
  try {
    p.kind = partition_kind_from_string(kind.as_string());
  } catch (const std::invalid_argument& error) {
    kind.fail(error.what());
  }
  p.batch = range_from_json(node.at("batch"));
  p.units = range_from_json(node.at("units"));
  return p;
}

}  // namespace

nlohmann::json to_json(const Schedule& schedule) {
  nlohmann::json collectives = nlohmann::json::array();
  for (const Collective& c : schedule.collectives) {
    collectives.push_back({{"id", c.id},
                           {"kind", to_string(c.kind)},
                           {"bytes", c.bytes},
                           {"group", c.group},
                           {"root", c.root},
                           {"algorithm", to_string(c.algorithm)},
                           {"label", c.label},
                           {"payload", to_string(c.payload)},
                           {"layers", c.layers},
                           {"iteration", c.iteration}});
    if (c.split != Split::none) collectives.back()["split"] = to_string(c.split);
    if (c.images.count > 0) collectives.back()["images"] = {c.images.begin, c.images.count};
    if (c.units.count > 0) collectives.back()["units"] = {c.units.begin, c.units.count};
  }
  nlohmann::json programs = nlohmann::json::array();
  for (const Program& program : schedule.programs) {
    nlohmann::json ops = nlohmann::json::array();
    for (const Op& op : program.ops) ops.push_back(op_to_json(op));
    nlohmann::json entry = {{"rank", program.rank}, {"ops", std::move(ops)}};
    if (!program.partitions.empty()) {
      nlohmann::json partitions = nlohmann::json::array();
      for (const LayerPartition& p : program.partitions) partitions.push_back(to_json(p));
      entry["partitions"] = std::move(partitions);
    }
    programs.push_back(std::move(entry));
  }
  nlohmann::json document = {{"strategy", schedule.strategy},
                              {"options", schedule.options.is_null() ? nlohmann::json::object() : schedule.options},
                              {"network", schedule.network},
                              {"global_batch", schedule.global_batch},
                              {"iterations", schedule.iterations},
                              {"warmup_iterations", schedule.warmup_iterations},
                              {"collectives", std::move(collectives)},
                              {"programs", std::move(programs)}};
  if (!schedule.serves.empty()) {
    nlohmann::json serves = nlohmann::json::array();
    for (const Serve& serve : schedule.serves) {
      nlohmann::json entries = nlohmann::json::array();
      for (const ServeEntry& e : serve.entries)
        entries.push_back({{"push", e.push}, {"reply", e.reply}, {"worker", e.worker}, {"round", e.round}});
      serves.push_back({{"order", to_string(serve.order)}, {"entries", std::move(entries)}, {"merge", op_to_json(serve.merge)}});
      if (serve.gamma > 0) serves.back()["gamma"] = serve.gamma;
    }
    document["serves"] = std::move(serves);
  }
  return document;
}

Schedule schedule_from_json(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  root.check_keys({"strategy", "options", "network", "global_batch", "iterations", "warmup_iterations", "collectives",
                   "programs", "serves"});
  Schedule schedule;
  schedule.strategy = root.string_or("strategy", "");
  if (root.has("options")) schedule.options = root.at("options").raw();
  schedule.network = root.string_or("network", "");
  schedule.global_batch = root.has("global_batch") ? root.at("global_batch").as_int_in(0, limits::kMaxBatch) : 0;
  schedule.iterations = int(root.at("iterations").as_int_in(0, limits::kMaxIterations));
  schedule.warmup_iterations =
      root.has("warmup_iterations") ? int(root.at("warmup_iterations").as_int_in(0, limits::kMaxIterations)) : 0;

  const std::vector<JsonNode> collectives = root.at("collectives").items();
  const std::vector<JsonNode> programs = root.at("programs").items();
  if (programs.empty()) root.at("programs").fail("a schedule needs at least one rank");
  if (std::int64_t(programs.size()) > limits::kMaxRanks)
    root.at("programs").fail(fmt::format("a schedule may have at most {} ranks", limits::kMaxRanks));
  const int ranks = int(programs.size());
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    const JsonNode& node = collectives[i];
    node.check_keys(
        {"id", "kind", "bytes", "group", "root", "algorithm", "label", "payload", "layers", "iteration", "split",
         "images", "units"});
    Collective c;
    if (node.has("id") && node.at("id").as_int() != std::int64_t(i)) node.at("id").fail(fmt::format("expected id {}", i));
    const auto parse_enum = [](const JsonNode& value, auto parser) {
      try {
        return parser(value.as_string());
      } catch (const std::invalid_argument& error) {
        value.fail(error.what());
      }
    };
    c.kind = parse_enum(node.at("kind"), collective_kind_from_string);
    c.bytes = node.at("bytes").as_number_in(0, kMaxBytes);
    for (const JsonNode& member : node.at("group").items()) {
      const std::int64_t rank = member.as_nonnegative_int();
      if (rank >= ranks) member.fail(fmt::format("rank out of range (the schedule has {} ranks)", ranks));
      c.group.push_back(int(rank));
    }
    c.root = node.has("root") ? int(node.at("root").as_int_in(-1, limits::kMaxRanks)) : -1;
    if (node.has("algorithm")) c.algorithm = parse_enum(node.at("algorithm"), algorithm_from_string);
    c.label = node.string_or("label", "");
    if (node.has("payload")) c.payload = parse_enum(node.at("payload"), payload_from_string);
    if (node.has("layers"))
      for (const JsonNode& layer : node.at("layers").items()) c.layers.push_back(int(layer.as_int_in(0, limits::kMaxLayers)));
    c.iteration = node.has("iteration") ? int(node.at("iteration").as_int_in(0, limits::kMaxIterations)) : 0;
    if (node.has("split")) c.split = parse_enum(node.at("split"), split_from_string);
    if (node.has("images")) c.images = range_from_json(node.at("images"));
    if (node.has("units")) c.units = range_from_json(node.at("units"));
    // Keep the group as written (the verifier reports unsorted/duplicate groups).
    c.id = int(i);
    schedule.collectives.push_back(std::move(c));
  }
  if (root.has("serves"))
    for (const JsonNode& serve : root.at("serves").items())
      schedule.serves.push_back(serve_from_json(serve, int(collectives.size()), ranks));
  std::vector<std::vector<Op>> ops(programs.size());
  std::set<int> conv_layers;  // layers with an im2col op: emit's conv layers (Op::conv_layer is not written)
  for (std::size_t r = 0; r < programs.size(); ++r) {
    const JsonNode& node = programs[r];
    node.check_keys({"rank", "ops", "partitions"});
    if (node.has("rank") && node.at("rank").as_int() != std::int64_t(r)) node.at("rank").fail(fmt::format("expected rank {}", r));
    for (const JsonNode& op : node.at("ops").items()) {
      ops[r].push_back(op_from_json(op, int(collectives.size()), int(schedule.serves.size())));
      if (ops[r].back().kind == OpKind::compute && ops[r].back().kernel == KernelClass::im2col)
        conv_layers.insert(ops[r].back().layer);
    }
  }
  for (std::size_t r = 0; r < programs.size(); ++r) {
    Program program;
    program.rank = int(r);
    for (Op& op : ops[r]) {
      op.conv_layer = op.kind == OpKind::compute && conv_layers.count(op.layer) > 0;
      program.ops.push_back(std::move(op));
    }
    if (programs[r].has("partitions"))
      for (const JsonNode& p : programs[r].at("partitions").items()) program.partitions.push_back(partition_from_json(p));
    schedule.programs.push_back(std::move(program));
  }
  return schedule;
}

}  // namespace cnnpar
