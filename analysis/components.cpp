#include "analysis/components.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "analysis/metrics.hpp"
#include "base/error.hpp"
#include "base/units.hpp"
#include "workload/registry.hpp"
#include "workload/strategies/marques.hpp"

namespace cnnpar {
namespace {

// A rank's measured iterations as windows [previous mark, mark): slot of a time, −1 outside.
class IterationWindows {
 public:
  IterationWindows(const RankTrace& rank, const std::vector<int>& measured) {
    std::map<int, double> marks;
    for (const MarkRecord& mark : rank.marks) marks[mark.iteration] = mark.time_s;
    for (std::size_t i = 0; i < measured.size(); ++i) {
      const auto end = marks.find(measured[i]);
      const auto begin = marks.find(measured[i] - 1);
      if (end == marks.end()) continue;  // compute_metrics checked every rank has it
      windows_.push_back({begin == marks.end() ? 0.0 : begin->second, end->second, i});
    }
  }
  std::ptrdiff_t slot(double t_s) const {
    for (const Window& w : windows_)
      if (t_s >= w.begin_s && t_s < w.end_s) return std::ptrdiff_t(w.slot);
    return -1;
  }
  double span_s(std::size_t slot) const {
    for (const Window& w : windows_)
      if (w.slot == slot) return w.end_s - w.begin_s;
    return 0;
  }

 private:
  struct Window {
    double begin_s, end_s;
    std::size_t slot;
  };
  std::vector<Window> windows_;
};


// Per (slot, rank) sums, then the max over `ranks` per slot, then the median over slots.
struct Grid {
  Grid(std::size_t slots, std::size_t ranks) : cells(slots, std::vector<double>(ranks, 0.0)) {}
  double median_of_max(int first_rank, int end_rank) const {
    std::vector<double> per_slot;
    for (const std::vector<double>& row : cells) {
      double most = 0;
      for (int r = first_rank; r < end_rank && r < int(row.size()); ++r) most = std::max(most, row[std::size_t(r)]);
      per_slot.push_back(most);
    }
    return median(per_slot);
  }
  double median_at(int rank) const { return median_of_max(rank, rank + 1); }
  std::vector<std::vector<double>> cells;
};

std::vector<IterationWindows> windows_of(const Trace& trace, const std::vector<int>& measured) {
  std::vector<IterationWindows> windows;
  for (const RankTrace& rank : trace.ranks) windows.emplace_back(rank, measured);
  return windows;
}

const nlohmann::json& options_of(const Trace& trace) {
  static const nlohmann::json kNone = nlohmann::json::object();
  if (!trace.metadata.is_object()) return kNone;
  const auto found = trace.metadata.find("options");
  return found != trace.metadata.end() && found->is_object() ? *found : kNone;
}

bool carries(const std::vector<CollectiveLayers>& table, int id, Payload payload) {
  return id >= 0 && std::size_t(id) < table.size() && table[std::size_t(id)].payload == payload &&
         !table[std::size_t(id)].layers.empty();
}
int first_layer(const std::vector<CollectiveLayers>& table, int id) { return table[std::size_t(id)].layers.front(); }

bool is_conv_phase(Phase phase) { return phase != Phase::update; }

std::string layer_name(const std::string& label) { return label.substr(0, label.find('.')); }

// max/min − 1 of the positive seconds from index `first` on; 0 with fewer than two.
double spread(const std::vector<double>& seconds, std::size_t first) {
  double least = 0, most = 0;
  int counted = 0;
  for (std::size_t r = first; r < seconds.size(); ++r) {
    if (seconds[r] <= 0) continue;
    least = counted == 0 ? seconds[r] : std::min(least, seconds[r]);
    most = std::max(most, seconds[r]);
    ++counted;
  }
  return counted >= 2 ? most / least - 1 : 0;
}

}  // namespace

VeeriahComponents veeriah_components(const Trace& trace) {
  const TraceMetrics metrics = compute_metrics(trace, MetricsDetail{false, false});
  const int P = int(trace.ranks.size());
  VeeriahComponents out;
  const nlohmann::json& options = options_of(trace);
  const auto given = options.find("conv_workers");
  out.conv_workers = P / 2;
  if (given != options.end() && given->is_number_integer() && given->get<int>() > 0) out.conv_workers = given->get<int>();
  if (out.conv_workers < 1 || 2 * out.conv_workers != P)
    throw InputError("<trace>", "/metadata/options/conv_workers",
                     given == options.end() ? std::string("(missing)") : given->dump(),
                     fmt::format("veeriah runs K conv and K fc workers; the trace has {} ranks", P));
  const int K = out.conv_workers;
  const std::vector<CollectiveLayers> table = read_collective_layers(trace);

  // The first fc layer: what the conv→fc activation sends carry. Then the layer whose gathered
  // input is fc1's output (the first allgather above it) and the errors below it.
  int fc1 = std::numeric_limits<int>::max();
  int merge_layer = std::numeric_limits<int>::max();
  for (int r = K; r < P; ++r)
    for (const CollectiveRecord& c : trace.ranks[std::size_t(r)].collectives)
      if (c.kind == CollectiveKind::send && carries(table, c.collective, Payload::activations))
        fc1 = std::min(fc1, first_layer(table, c.collective));
  for (int r = K; r < P; ++r)
    for (const CollectiveRecord& c : trace.ranks[std::size_t(r)].collectives)
      if (c.kind == CollectiveKind::allgather && carries(table, c.collective, Payload::activations) &&
          first_layer(table, c.collective) > fc1)
        merge_layer = std::min(merge_layer, first_layer(table, c.collective));

  const std::size_t slots = metrics.measured_iterations.size();
  const std::vector<IterationWindows> windows = windows_of(trace, metrics.measured_iterations);
  Grid span(slots, std::size_t(P)), compute(slots, std::size_t(P)), act_wait(slots, std::size_t(P)),
      merge(slots, std::size_t(P)), reduce(slots, std::size_t(P));
  for (int r = 0; r < P; ++r) {
    const RankTrace& rank = trace.ranks[std::size_t(r)];
    const IterationWindows& w = windows[std::size_t(r)];
    for (std::size_t s = 0; s < slots; ++s) span.cells[s][std::size_t(r)] = w.span_s(s);
    for (const ComputeRecord& op : rank.compute) {
      const std::ptrdiff_t s = w.slot(op.start_s);
      if (s >= 0) compute.cells[std::size_t(s)][std::size_t(r)] += op.end_s - op.start_s;
    }
    for (const CollectiveRecord& c : rank.collectives) {
      const std::ptrdiff_t s = w.slot(c.wait_start_s);
      if (s < 0) continue;
      const std::size_t at = std::size_t(s);
      if (c.kind == CollectiveKind::send && carries(table, c.collective, Payload::activations) &&
          first_layer(table, c.collective) == fc1)
        act_wait.cells[at][std::size_t(r)] += c.wait_end_s - c.wait_start_s;
      if (c.kind == CollectiveKind::allgather && carries(table, c.collective, Payload::activations) &&
          first_layer(table, c.collective) == merge_layer)
        merge.cells[at][std::size_t(r)] += c.comm_end_s - c.comm_start_s;
      if (c.kind == CollectiveKind::allreduce && carries(table, c.collective, Payload::errors) &&
          first_layer(table, c.collective) == fc1 - 1)
        reduce.cells[at][std::size_t(r)] += c.comm_end_s - c.comm_start_s;
    }
  }
  out.conv_iteration_s = span.median_of_max(0, K);
  out.fc_pass_s = compute.median_of_max(K, P);
  out.fc_activation_wait_s = act_wait.median_of_max(K, P);
  out.fc1_merge_s = merge.median_of_max(K, P);
  out.fc1_error_reduce_s = reduce.median_of_max(K, P);
  return out;
}

ConvSplitComponents conv_split_components(const Trace& trace, const Network* network, int element_bytes) {
  const TraceMetrics metrics = compute_metrics(trace, MetricsDetail{false, false});
  const int P = int(trace.ranks.size());
  std::set<std::string> conv_names;
  const nlohmann::json& options = options_of(trace);
  if (const auto counts = options.find("kernel_counts"); counts != options.end() && counts->is_object())
    for (const auto& [name, value] : counts->items()) conv_names.insert(name);

  // Conv layers by index (from the op labels), and each op's share of the grids.
  std::map<int, std::size_t> conv_slot;  // layer index → position
  for (const RankTrace& rank : trace.ranks)
    for (const ComputeRecord& op : rank.compute)
      if (conv_names.count(layer_name(op.label))) conv_slot.emplace(op.layer, 0);
  std::size_t position = 0;
  for (auto& [layer, slot] : conv_slot) slot = position++;

  const std::size_t slots = metrics.measured_iterations.size();
  const std::vector<IterationWindows> windows = windows_of(trace, metrics.measured_iterations);
  Grid conv(slots, std::size_t(P)), other(slots, std::size_t(P)), exposed(slots, std::size_t(P));
  // Per (slot, conv layer, rank) seconds for "the slowest node per layer".
  std::vector<Grid> per_layer(slots, Grid(conv_slot.size(), std::size_t(P)));
  for (int r = 0; r < P; ++r) {
    const RankTrace& rank = trace.ranks[std::size_t(r)];
    const IterationWindows& w = windows[std::size_t(r)];
    for (const ComputeRecord& op : rank.compute) {
      const std::ptrdiff_t s = w.slot(op.start_s);
      if (s < 0) continue;
      const double seconds = op.end_s - op.start_s;
      const auto found = conv_slot.find(op.layer);
      if (found != conv_slot.end() && is_conv_phase(op.phase)) {
        conv.cells[std::size_t(s)][std::size_t(r)] += seconds;
        per_layer[std::size_t(s)].cells[found->second][std::size_t(r)] += seconds;
      } else {
        other.cells[std::size_t(s)][std::size_t(r)] += seconds;
      }
    }
    for (const CollectiveRecord& c : rank.collectives) {
      const std::ptrdiff_t s = w.slot(c.wait_start_s);
      if (s >= 0) exposed.cells[std::size_t(s)][std::size_t(r)] += exposed_comm_s(c);
    }
  }
  ConvSplitComponents out;
  out.comm_s = exposed.median_at(0);
  out.comp_s = other.median_at(0);
  std::vector<double> conv_per_slot;
  for (const Grid& layers : per_layer) {
    double sum = 0;
    for (const std::vector<double>& row : layers.cells) sum += *std::max_element(row.begin(), row.end());
    conv_per_slot.push_back(sum);
  }
  out.conv_s = median(conv_per_slot);
  for (int r = 0; r < P; ++r) out.conv_per_rank_s.push_back(conv.median_at(r));
  out.conv_spread = spread(out.conv_per_rank_s, 0);
  out.workers_conv_spread = spread(out.conv_per_rank_s, 1);
  out.element_bytes = element_bytes;
  if (network) {
    const auto batch = trace.metadata.is_object() ? trace.metadata.find("global_batch") : trace.metadata.end();
    if (trace.metadata.is_object() && batch != trace.metadata.end() && batch->is_number_integer()) {
      out.has_upload = true;
      out.upload_elements = upload_elements(*network, batch->get<std::int64_t>());
      out.upload_bytes = out.upload_elements * double(element_bytes);
    }
  }
  return out;
}

nlohmann::json to_json(const VeeriahComponents& c) {
  return {{"conv_workers", c.conv_workers},
          {"conv_iteration_s", c.conv_iteration_s},
          {"fc_pass_s", c.fc_pass_s},
          {"fc_activation_wait_s", c.fc_activation_wait_s},
          {"fc1_merge_s", c.fc1_merge_s},
          {"fc1_error_reduce_s", c.fc1_error_reduce_s}};
}

nlohmann::json to_json(const ConvSplitComponents& c) {
  nlohmann::json j = {{"comm_s", c.comm_s},
                      {"conv_s", c.conv_s},
                      {"comp_s", c.comp_s},
                      {"conv_per_rank_s", c.conv_per_rank_s},
                      {"conv_spread", c.conv_spread},
                      {"workers_conv_spread", c.workers_conv_spread}};
  if (c.has_upload) {
    j["upload_elements"] = c.upload_elements;
    j["element_bytes"] = c.element_bytes;
    j["upload_bytes"] = c.upload_bytes;
  }
  return j;
}

namespace {
// A strategy unknown to this build (a trace of another version) has none.
ComponentSplit component_split(const std::string& strategy) {
  for (const StrategySpec& spec : strategy_registry())
    if (spec.name == strategy) return spec.components;
  return ComponentSplit::none;
}
}  // namespace

bool has_components(const std::string& strategy) { return component_split(strategy) != ComponentSplit::none; }

std::optional<nlohmann::json> components_json(const Trace& trace, const Network* network, int element_bytes) {
  const auto found = trace.metadata.is_object() ? trace.metadata.find("strategy") : trace.metadata.end();
  if (!trace.metadata.is_object() || found == trace.metadata.end() || !found->is_string()) return std::nullopt;
  nlohmann::json j;
  switch (component_split(found->get<std::string>())) {
    case ComponentSplit::none: return std::nullopt;
    case ComponentSplit::worker_groups: j = to_json(veeriah_components(trace)); break;
    case ComponentSplit::master_workers: j = to_json(conv_split_components(trace, network, element_bytes)); break;
    case ComponentSplit::parameter_server: j = to_json(parameter_server_components(trace)); break;
  }
  j["strategy"] = *found;
  return j;
}

ParameterServerComponents parameter_server_components(const Trace& trace) {
  const std::vector<int> servers = server_ranks(trace);
  if (servers.empty())
    throw InputError("<trace>", "/metadata/server_ranks", "[]", "a parameter server's trace names its server rank");
  const TraceMetrics metrics = compute_metrics(trace, MetricsDetail{false, false});
  ParameterServerComponents c;
  c.workers = int(trace.ranks.size() - servers.size());
  c.sync_wait_s = metrics.sync_wait_s;
  c.workload_balance = metrics.load_balance;
  for (const RankTrace& rank : trace.ranks)
    if (std::find(servers.begin(), servers.end(), rank.rank) == servers.end() && !rank.marks.empty())
      c.run_s = std::max(c.run_s, rank.marks.back().time_s);
  const nlohmann::json options = trace.metadata.value("options", nlohmann::json::object());
  const auto nominal = options.find("iterations");
  if (nominal == options.end() || !nominal->is_number_integer() || nominal->get<std::int64_t>() < 1)
    throw InputError("<trace>", "/metadata/options/iterations", nominal == options.end() ? "(missing)" : nominal->dump(),
                     "a parameter server's trace states its nominal iterations K");
  c.epoch_s = c.run_s / double(nominal->get<std::int64_t>());
  double staleness_sum = 0;
  for (int server : servers) {
    const RankTrace& rank = trace.ranks[std::size_t(server)];
    for (const CollectiveRecord& record : rank.collectives) c.volume_bytes += record.bytes;
    for (const MergeRecord& merge : rank.merges) {
      c.staleness.push_back(merge.staleness());
      staleness_sum += merge.staleness();
      c.staleness_max = std::max(c.staleness_max, merge.staleness());
    }
  }
  c.merges = int(c.staleness.size());
  c.staleness_mean = c.merges > 0 ? staleness_sum / c.merges : 0.0;
  return c;
}

nlohmann::json to_json(const ParameterServerComponents& c) {
  return {{"workers", c.workers},
          {"sync_wait_s", c.sync_wait_s},
          {"run_s", c.run_s},
          {"epoch_s", c.epoch_s},
          {"workload_balance", c.workload_balance},
          {"volume_bytes", c.volume_bytes},
          {"merges", c.merges},
          {"staleness_mean", c.staleness_mean},
          {"staleness_max", c.staleness_max},
          {"staleness", c.staleness}};
}

std::string format_component_value(const std::string& key, double value) {
  const auto ends_with = [&](std::string_view tail) {
    return key.size() > tail.size() && key.compare(key.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (ends_with("_s")) return format_seconds(value);
  if (ends_with("_bytes") && key != "element_bytes") return format_bytes(value);
  return fmt::format("{:.4g}", value);
}

std::vector<std::string> component_keys(const std::vector<const nlohmann::json*>& objects) {
  // The papers' order (Veeriah Tables 1-5; Marques' Comm./Conv./Comp.) before any other key.
  static const std::vector<std::string> kPaperOrder = {
      "conv_workers", "conv_iteration_s", "fc_pass_s", "fc_activation_wait_s", "fc1_merge_s", "fc1_error_reduce_s",
      "comm_s",       "conv_s",           "comp_s",    "conv_spread",          "workers_conv_spread",
      "upload_elements", "element_bytes", "upload_bytes", "workers", "epoch_s", "run_s", "sync_wait_s", "workload_balance",
      "volume_bytes", "merges", "staleness_mean", "staleness_max"};
  std::vector<std::string> seen;
  for (const nlohmann::json* object : objects)
    if (object->is_object())
      for (const auto& [key, value] : object->items())
        if (value.is_number() && std::find(seen.begin(), seen.end(), key) == seen.end()) seen.push_back(key);
  std::vector<std::string> keys;
  for (const std::string& key : kPaperOrder)
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) keys.push_back(key);
  for (const std::string& key : seen)
    if (std::find(kPaperOrder.begin(), kPaperOrder.end(), key) == kPaperOrder.end()) keys.push_back(key);
  return keys;
}

std::string format_components_comparison(const nlohmann::json& predicted, const nlohmann::json& measured) {
  const auto cell = [](const nlohmann::json& side, const std::string& key) -> std::string {
    if (!side.is_object() || !side.contains(key) || !side.at(key).is_number()) return "-";
    return format_component_value(key, side.at(key).get<double>());
  };
  std::string out = fmt::format("{:<24} {:>14} {:>14}\n", "component", "predicted", "measured");
  for (const std::string& key : component_keys({&predicted, &measured}))
    out += fmt::format("{:<24} {:>14} {:>14}\n", key, cell(predicted, key), cell(measured, key));
  return out;
}

}  // namespace cnnpar
