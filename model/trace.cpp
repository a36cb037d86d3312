#include "model/trace.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"

namespace cnnpar {

nlohmann::json to_json(const Trace& trace) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankTrace& rank : trace.ranks) {
    nlohmann::json compute = nlohmann::json::array();
    for (const ComputeRecord& r : rank.compute)
      compute.push_back({{"op", r.op}, {"label", r.label}, {"layer", r.layer}, {"phase", to_string(r.phase)},
                         {"kernel", to_string(r.kernel)}, {"flops", r.flops}, {"start", r.start_s}, {"end", r.end_s}});
    nlohmann::json collectives = nlohmann::json::array();
    for (const CollectiveRecord& r : rank.collectives)
      collectives.push_back({{"collective", r.collective}, {"label", r.label}, {"kind", to_string(r.kind)},
                             {"bytes", r.bytes}, {"iteration", r.iteration}, {"posted", r.posted_s},
                             {"comm_start", r.comm_start_s}, {"comm_end", r.comm_end_s},
                             {"wait_start", r.wait_start_s}, {"wait_end", r.wait_end_s}});
    nlohmann::json marks = nlohmann::json::array();
    for (const MarkRecord& m : rank.marks) marks.push_back({{"iteration", m.iteration}, {"time", m.time_s}});
    ranks.push_back({{"rank", rank.rank}, {"compute", std::move(compute)}, {"collectives", std::move(collectives)},
                     {"marks", std::move(marks)}});
    if (!rank.merges.empty()) {
      nlohmann::json merges = nlohmann::json::array();
      for (const MergeRecord& m : rank.merges)
        merges.push_back({{"worker", m.worker}, {"round", m.round}, {"base_version", m.base_version},
                          {"version", m.version}, {"start", m.start_s}, {"end", m.end_s}});
      ranks.back()["merges"] = std::move(merges);
    }
  }
  return {{"format", "cnnpar-trace-1"},
          {"engine", trace.engine},
          {"time_unit", "s"},
          {"metadata", trace.metadata.is_null() ? nlohmann::json::object() : trace.metadata},
          {"warmup_iterations", trace.warmup_iterations},
          {"ranks", std::move(ranks)}};
}

namespace {

template <typename Parser>
auto parse_enum(const JsonNode& node, Parser parser) {
  try {
    return parser(node.as_string());
  } catch (const std::invalid_argument& error) {
    node.fail(error.what());
  }
}
// Timestamps are seconds from the trace's origin; a century bounds any run, and keeps every
// difference of two timestamps finite.
constexpr double kMaxTime_s = 1e10;

}  // namespace

Trace trace_from_json(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  if (root.string_or("format", "cnnpar-trace-1") != "cnnpar-trace-1")
    root.at("format").fail("not a cnnpar trace (expected format \"cnnpar-trace-1\")");
  Trace trace;
  trace.engine = root.at("engine").as_string();
  if (root.has("metadata")) trace.metadata = root.at("metadata").raw();
  trace.warmup_iterations =
      root.has("warmup_iterations") ? int(root.at("warmup_iterations").as_int_in(0, limits::kMaxIterations)) : 0;
  const std::vector<JsonNode> rank_nodes = root.at("ranks").items();
  if (std::int64_t(rank_nodes.size()) > limits::kMaxRanks)
    root.at("ranks").fail(fmt::format("a trace may have at most {} ranks", limits::kMaxRanks));
  for (const JsonNode& rank_node : rank_nodes) {
    RankTrace rank;
    rank.rank = int(rank_node.at("rank").as_int_in(0, limits::kMaxRanks - 1));
    for (const JsonNode& r : rank_node.at("compute").items()) {
      ComputeRecord record;
      record.op = r.has("op") ? int(r.at("op").as_int_in(-1, limits::kMaxIndex)) : -1;
      record.label = r.string_or("label", "");
      record.layer = r.has("layer") ? int(r.at("layer").as_int_in(-1, limits::kMaxLayers)) : -1;
      if (r.has("phase")) record.phase = parse_enum(r.at("phase"), phase_from_string);
      if (r.has("kernel")) record.kernel = parse_enum(r.at("kernel"), kernel_class_from_string);
      record.flops = r.has("flops") ? r.at("flops").as_number_in(0, 1e24) : 0;
      record.start_s = r.at("start").as_number_in(-kMaxTime_s, kMaxTime_s);
      record.end_s = r.at("end").as_number_in(-kMaxTime_s, kMaxTime_s);
      if (record.end_s < record.start_s) r.at("end").fail("ends before it starts");
      rank.compute.push_back(std::move(record));
    }
    for (const JsonNode& r : rank_node.at("collectives").items()) {
      CollectiveRecord record;
      record.collective = int(r.at("collective").as_int_in(0, limits::kMaxIndex));
      record.label = r.string_or("label", "");
      if (r.has("kind")) record.kind = parse_enum(r.at("kind"), collective_kind_from_string);
      record.bytes = r.has("bytes") ? r.at("bytes").as_number_in(0, 1e18) : 0;
      record.iteration = r.has("iteration") ? int(r.at("iteration").as_int_in(0, limits::kMaxIterations)) : 0;
      record.posted_s = r.at("posted").as_number_in(-kMaxTime_s, kMaxTime_s);
      record.comm_start_s = r.at("comm_start").as_number_in(-kMaxTime_s, kMaxTime_s);
      record.comm_end_s = r.at("comm_end").as_number_in(-kMaxTime_s, kMaxTime_s);
      record.wait_start_s = r.at("wait_start").as_number_in(-kMaxTime_s, kMaxTime_s);
      record.wait_end_s = r.at("wait_end").as_number_in(-kMaxTime_s, kMaxTime_s);
      if (record.comm_end_s < record.comm_start_s) r.at("comm_end").fail("ends before it starts");
      if (record.wait_end_s < record.wait_start_s) r.at("wait_end").fail("ends before it starts");
      rank.collectives.push_back(std::move(record));
    }
    for (const JsonNode& m : rank_node.at("marks").items())
      rank.marks.push_back({int(m.at("iteration").as_int_in(0, limits::kMaxIterations)), m.at("time").as_number_in(-kMaxTime_s, kMaxTime_s)});
    if (rank_node.has("merges"))
      for (const JsonNode& m : rank_node.at("merges").items()) {
        m.check_keys({"worker", "round", "base_version", "version", "start", "end"});
        MergeRecord record;
        record.worker = int(m.at("worker").as_int_in(0, limits::kMaxRanks - 1));
        record.round = int(m.at("round").as_int_in(0, limits::kMaxIterations));
        record.version = int(m.at("version").as_int_in(1, limits::kMaxIndex));
        record.base_version = int(m.at("base_version").as_int_in(0, record.version - 1));
        record.start_s = m.at("start").as_number_in(-kMaxTime_s, kMaxTime_s);
        record.end_s = m.at("end").as_number_in(-kMaxTime_s, kMaxTime_s);
        if (record.end_s < record.start_s) m.at("end").fail("ends before it starts");
        rank.merges.push_back(record);
      }
    trace.ranks.push_back(std::move(rank));
  }
  return trace;
}

ComputeRecord describe_compute(const Op& op, int op_index, TraceDetail detail) {
  ComputeRecord record;
  describe_compute_into(record, op, op_index, detail);
  return record;
}

CollectiveRecord describe_collective(const Collective& collective, TraceDetail detail) {
  CollectiveRecord record;
  describe_collective_into(record, collective, detail);
  return record;
}

std::optional<double> run_load_average(const Trace& trace) {
  const nlohmann::json& m = trace.metadata;
  if (!m.is_object() || !m.contains("load_average")) return std::nullopt;
  const nlohmann::json& load = m.at("load_average");
  if (!load.is_array() || load.empty() || !load.at(0).is_number()) return std::nullopt;
  return load.at(0).get<double>();
}

std::vector<CollectiveLayers> read_collective_layers(const Trace& trace, std::optional<std::int64_t> layer_count) {
  std::vector<CollectiveLayers> carried;
  if (!trace.metadata.is_object()) return carried;
  const auto found = trace.metadata.find("collective_layers");
  if (found == trace.metadata.end()) return carried;
  const auto fail = [](const std::string& path, const nlohmann::json& value, const std::string& reason) {
    throw InputError("<trace>", "/metadata/collective_layers" + path, value.dump(), reason);
  };
  const nlohmann::json& entries = *found;
  if (!entries.is_array()) fail("", entries, "expected an array, one entry per collective id");
  for (std::size_t id = 0; id < entries.size(); ++id) {
    const nlohmann::json& entry = entries[id];
    const std::string at = fmt::format("/{}", id);
    if (!entry.is_object() || !entry.contains("payload") || !entry.contains("layers"))
      fail(at, entry, "expected {\"payload\": ..., \"layers\": [...]}");
    CollectiveLayers c;
    try {
      c.payload = payload_from_string(entry.at("payload").is_string() ? entry.at("payload").get<std::string>() : "");
    } catch (const std::invalid_argument& error) {
      fail(at + "/payload", entry.at("payload"), error.what());
    }
    const nlohmann::json& layers = entry.at("layers");
    if (!layers.is_array()) fail(at + "/layers", layers, "expected an array of layer indices");
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const nlohmann::json& layer = layers[i];
      if (!layer.is_number_integer() || layer.get<std::int64_t>() < 0 ||
          (layer_count && layer.get<std::int64_t>() >= *layer_count) || layer.get<std::int64_t>() >= limits::kMaxLayers)
        fail(at + "/layers/" + std::to_string(i), layer,
             layer_count ? fmt::format("expected a layer index from 0 to {}", *layer_count - 1)
                         : std::string("expected a layer index from 0 on"));
      c.layers.push_back(int(layer.get<std::int64_t>()));
    }
    carried.push_back(std::move(c));
  }
  return carried;
}

Trace make_empty_trace_without_layers(const Schedule& schedule, const std::string& engine, TraceDetail detail) {
  Trace trace;
  trace.engine = engine;
  trace.warmup_iterations = schedule.warmup_iterations;
  trace.metadata = nlohmann::json::object();
  if (detail == TraceDetail::full)
    trace.metadata = {{"strategy", schedule.strategy},
                      {"options", schedule.options.is_null() ? nlohmann::json::object() : schedule.options},
                      {"network", schedule.network},
                      {"global_batch", schedule.global_batch},
                      {"ranks", schedule.ranks()},
                      {"iterations", schedule.iterations}};
  // Parameter servers: their merges are no iterations (analysis/metrics.hpp server_ranks).
  // A serve op names one of schedule.serves: without serves there is none to look for.
  nlohmann::json servers = nlohmann::json::array();
  if (!schedule.serves.empty()) {
    const OpList* previous = nullptr;  // ranks sharing one op list serve alike: scan it once
    bool previous_serves = false;
    for (const Program& program : schedule.programs) {
      if (!previous || !program.ops.same_storage(*previous))
        previous_serves = std::any_of(program.ops.begin(), program.ops.end(),
                                      [](const Op& op) { return op.kind == OpKind::serve; });
      previous = &program.ops;
      if (previous_serves) servers.push_back(program.rank);
    }
  }
  if (!servers.empty()) trace.metadata["server_ranks"] = std::move(servers);
  trace.ranks.resize(std::size_t(schedule.ranks()));
  for (int r = 0; r < schedule.ranks(); ++r) trace.ranks[std::size_t(r)].rank = r;
  return trace;
}

void add_collective_layers(Trace& trace, const Schedule& schedule) {
  // What each collective carries, for the per-layer breakdown (analysis/layer_breakdown.hpp).
  nlohmann::json carried = nlohmann::json::array();
  carried.get_ref<nlohmann::json::array_t&>().reserve(schedule.collectives.size());
  for (const Collective& collective : schedule.collectives) {
    nlohmann::json entry = nlohmann::json::object();
    entry["payload"] = to_string(collective.payload);
    entry["layers"] = collective.layers;
    carried.push_back(std::move(entry));
  }
  trace.metadata["collective_layers"] = std::move(carried);
}

Trace make_empty_trace(const Schedule& schedule, const std::string& engine) {
  Trace trace = make_empty_trace_without_layers(schedule, engine);
  add_collective_layers(trace, schedule);
  return trace;
}

}  // namespace cnnpar
