#include "analysis/metrics.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <unordered_map>
#include <utility>

#include "base/error.hpp"

namespace cnnpar {

double exposed_comm_s(const CollectiveRecord& record) {
  return std::max(0.0, record.wait_end_s - std::max(record.wait_start_s, record.comm_start_s));
}

double speedup(double iteration_1_s, double iteration_p_s) {
  return iteration_p_s > 0 ? iteration_1_s / iteration_p_s : 0.0;
}

double efficiency(double speedup_value, int ranks) { return ranks > 0 ? speedup_value / ranks : 0.0; }

double iteration_spread_percent(const TraceMetrics& metrics) {
  const std::vector<double>& times = metrics.iteration_times_s;
  if (times.size() < 2 || metrics.iteration_s <= 0) return 0;
  const auto [least, most] = std::minmax_element(times.begin(), times.end());
  return 100 * (*most - *least) / metrics.iteration_s;
}

namespace {

// Per rank: time of the mark ending each iteration.
std::map<int, double> mark_times(const RankTrace& rank) {
  std::map<int, double> marks;
  for (const MarkRecord& mark : rank.marks) marks[mark.iteration] = mark.time_s;
  return marks;
}

}  // namespace

std::vector<int> server_ranks(const Trace& trace) {
  std::vector<int> servers;
  const auto found = trace.metadata.is_object() ? trace.metadata.find("server_ranks") : trace.metadata.end();
  if (!trace.metadata.is_object() || found == trace.metadata.end()) return servers;
  if (!found->is_array()) throw InputError("<trace>", "/metadata/server_ranks", found->dump(), "expected a list of ranks");
  for (const nlohmann::json& rank : *found) {
    if (!rank.is_number_integer() || rank.get<std::int64_t>() < 0 || rank.get<std::int64_t>() >= std::int64_t(trace.ranks.size()))
      throw InputError("<trace>", "/metadata/server_ranks", found->dump(), "expected ranks of the trace");
    if (std::find(servers.begin(), servers.end(), rank.get<int>()) != servers.end())
      throw InputError("<trace>", "/metadata/server_ranks", found->dump(), "expected each rank once");
    servers.push_back(rank.get<int>());
  }
  return servers;
}

namespace {

// A rank and the records it lived: its own, or its class representative's (ClassedTrace).
struct RankView {
  int rank = 0;
  const RankTrace* records = nullptr;
};

// What one distinct RankTrace contributes, per measured iteration and per layer slot, computed
// once however many ranks lived it.
struct RankSums {
  std::vector<double> span, compute, non_gemm, comm, exposed, waits, bytes;  // per iteration
  std::vector<double> layer_seconds;                                         // per layer slot
  std::vector<std::pair<double, double>> tc_tb;  // (T_c, T_b) per counted record, in order
  std::vector<CollectiveTiming> timings;         // rank left for each rank that lived them
};

TraceMetrics metrics_of(const Trace& full_trace, const std::vector<RankView>& all_ranks, const MetricsDetail& detail) {
  TraceMetrics m;
  m.engine = full_trace.engine;
  m.ranks = int(full_trace.ranks.size());
  m.warmup_iterations = full_trace.warmup_iterations;
  if (full_trace.ranks.empty()) throw InputError("<trace>", "/ranks", "[]", "the trace has no ranks");
  // A parameter server has no iterations of its own: the metrics are the workers'.
  const std::vector<int> servers = server_ranks(full_trace);
  std::vector<RankView> views;
  for (const RankView& view : all_ranks)
    if (std::find(servers.begin(), servers.end(), view.rank) == servers.end()) views.push_back(view);
  if (views.empty())
    throw InputError("<trace>", "/metadata/server_ranks", nlohmann::json(servers).dump(),
                     "every rank is a parameter server: the trace has no worker to measure");
  const int warmup_iterations = full_trace.warmup_iterations;

  // Ranks that lived the same records share one computation (rank classes).
  std::vector<const RankTrace*> distinct;
  std::vector<std::size_t> distinct_of;
  distinct_of.reserve(views.size());
  std::unordered_map<const RankTrace*, std::size_t> index_of;  // a full trace: every rank distinct
  for (const RankView& view : views) {
    const auto [found, added] = index_of.try_emplace(view.records, distinct.size());
    if (added) distinct.push_back(view.records);
    distinct_of.push_back(found->second);
  }

  std::vector<std::map<int, double>> marks;
  marks.reserve(distinct.size());
  for (const RankTrace* rank : distinct) marks.push_back(mark_times(*rank));
  // Measured iterations: >= warm-up and marked on every rank.
  for (const auto& [iteration, time] : marks[distinct_of.front()]) {
    if (iteration < warmup_iterations) continue;
    bool everywhere = true;
    for (const auto& rank_marks : marks) everywhere = everywhere && rank_marks.count(iteration) > 0;
    if (everywhere) m.measured_iterations.push_back(iteration);
  }
  if (m.measured_iterations.empty())
    throw InputError("<trace>", "/warmup_iterations", std::to_string(warmup_iterations),
                     "the trace has no measured iteration (marks at or after the warm-up on every rank)");

  const std::size_t n_iter = m.measured_iterations.size();
  const std::size_t n_ranks = views.size();
  std::map<int, std::size_t> iteration_slot;
  for (std::size_t i = 0; i < n_iter; ++i) iteration_slot[m.measured_iterations[i]] = i;

  // Per (layer, phase): flat index (position of the layer among the layers present) * 4 +
  // phase. Only present layers get slots: a trace's layer ids are input.
  std::vector<int> layer_ids;
  if (detail.per_layer) {
    for (const RankTrace* rank : distinct)
      for (const ComputeRecord& op : rank->compute) layer_ids.push_back(op.layer);
    std::sort(layer_ids.begin(), layer_ids.end());
    layer_ids.erase(std::unique(layer_ids.begin(), layer_ids.end()), layer_ids.end());
  }
  const auto layer_position = [&](int layer) {
    return std::size_t(std::lower_bound(layer_ids.begin(), layer_ids.end(), layer) - layer_ids.begin());
  };
  const std::size_t layer_slots = layer_ids.size() * 4;
  std::vector<const std::string*> layer_label(layer_slots, nullptr);
  std::vector<std::pair<int, double>> ordered_marks;  // (iteration, time), by time

  std::vector<RankSums> sums(distinct.size());
  for (std::size_t d = 0; d < distinct.size(); ++d) {
    const RankTrace& rank = *distinct[d];
    const auto& rank_marks = marks[d];
    RankSums& out = sums[d];
    for (auto* row : {&out.span, &out.compute, &out.non_gemm, &out.comm, &out.exposed, &out.waits, &out.bytes})
      row->assign(n_iter, 0.0);
    out.layer_seconds.assign(layer_slots, 0.0);
    for (std::size_t i = 0; i < n_iter; ++i) {
      const int iteration = m.measured_iterations[i];
      const auto previous = rank_marks.find(iteration - 1);
      const double begin = previous == rank_marks.end() ? 0.0 : previous->second;
      out.span[i] = rank_marks.at(iteration) - begin;
    }
    ordered_marks.assign(rank_marks.begin(), rank_marks.end());
    std::stable_sort(ordered_marks.begin(), ordered_marks.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    // Compute ops (program order, so starts do not decrease): the iteration whose
    // [previous mark, mark) holds the op's start.
    std::size_t next_mark = 0;
    auto slot_of = [&](std::size_t mark) -> std::ptrdiff_t {
      const auto found = iteration_slot.find(ordered_marks[mark].first);
      return found == iteration_slot.end() ? -1 : std::ptrdiff_t(found->second);
    };
    std::ptrdiff_t slot = ordered_marks.empty() ? -1 : slot_of(0);
    for (const ComputeRecord& op : rank.compute) {
      if (next_mark < ordered_marks.size() && op.start_s >= ordered_marks[next_mark].second) {
        while (next_mark < ordered_marks.size() && op.start_s >= ordered_marks[next_mark].second) ++next_mark;
        if (next_mark == ordered_marks.size()) break;
        slot = slot_of(next_mark);
      }
      if (next_mark == ordered_marks.size()) break;
      if (slot < 0) continue;
      const double seconds = op.end_s - op.start_s;
      out.compute[std::size_t(slot)] += seconds;
      if (op.kernel != KernelClass::gemm) out.non_gemm[std::size_t(slot)] += seconds;
      const std::size_t layer_slot = layer_position(op.layer) * 4 + std::size_t(op.phase);
      if (detail.per_layer && layer_slot < layer_slots) {
        out.layer_seconds[layer_slot] += seconds;
        if (!layer_label[layer_slot]) layer_label[layer_slot] = &op.label;
      }
    }
    for (const CollectiveRecord& record : rank.collectives) {
      // The iteration whose [previous mark, mark) holds the start of the wait (see metrics.hpp).
      const auto window = std::upper_bound(ordered_marks.begin(), ordered_marks.end(), record.wait_start_s,
                                           [](double t, const auto& mark) { return t < mark.second; });
      if (window == ordered_marks.end()) continue;  // waited after the last mark (drain)
      const auto found = iteration_slot.find(window->first);
      if (found == iteration_slot.end()) continue;
      const std::size_t i = found->second;
      const double comm_s = record.comm_end_s - record.comm_start_s;
      const double exposed_s = exposed_comm_s(record);
      const double wait_s = record.wait_end_s - record.wait_start_s;
      out.comm[i] += comm_s;
      out.exposed[i] += exposed_s;
      out.waits[i] += wait_s;
      out.bytes[i] += record.bytes;
      out.tc_tb.emplace_back(comm_s, exposed_s);
      if (!detail.per_collective) continue;
      CollectiveTiming timing;
      timing.collective = record.collective;
      timing.label = record.label;
      timing.kind = record.kind;
      timing.iteration = window->first;
      timing.bytes = record.bytes;
      timing.comm_s = comm_s;
      timing.exposed_s = exposed_s;
      timing.wait_s = wait_s;
      out.timings.push_back(std::move(timing));
    }
  }

  // Per (iteration, rank) sums, and per (layer slot, rank) seconds; the totals add rank by
  // rank, record by record, as one pass over the expanded trace would.
  auto grid = [&] { return std::vector<std::vector<double>>(n_iter, std::vector<double>(n_ranks, 0.0)); };
  auto iteration_span = grid(), compute = grid(), non_gemm = grid(), comm = grid(), exposed = grid(), waits = grid(),
       bytes = grid();
  std::vector<double> layer_seconds(layer_slots * n_ranks, 0.0);  // (slot, rank)
  double sum_tc = 0, sum_tb = 0;
  for (std::size_t r = 0; r < n_ranks; ++r) {
    const RankSums& in = sums[distinct_of[r]];
    for (std::size_t i = 0; i < n_iter; ++i) {
      iteration_span[i][r] = in.span[i];
      compute[i][r] = in.compute[i];
      non_gemm[i][r] = in.non_gemm[i];
      comm[i][r] = in.comm[i];
      exposed[i][r] = in.exposed[i];
      waits[i][r] = in.waits[i];
      bytes[i][r] = in.bytes[i];
    }
    for (std::size_t slot = 0; slot < layer_slots; ++slot) layer_seconds[slot * n_ranks + r] = in.layer_seconds[slot];
    for (const auto& [comm_s, exposed_s] : in.tc_tb) {
      sum_tc += comm_s;
      sum_tb += exposed_s;
    }
    for (const CollectiveTiming& timing : in.timings) {
      m.collectives.push_back(timing);
      m.collectives.back().rank = views[r].rank;
    }
  }

  auto max_of = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
  auto mean_of = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  };
  auto median_of_max = [&](const std::vector<std::vector<double>>& g) {
    std::vector<double> per_iteration;
    for (const auto& row : g) per_iteration.push_back(max_of(row));
    return median(per_iteration);
  };

  for (const auto& row : iteration_span) m.iteration_times_s.push_back(max_of(row));
  m.iteration_s = median(m.iteration_times_s);
  m.compute_max_s = median_of_max(compute);
  m.non_gemm_compute_s = median_of_max(non_gemm);
  {
    std::vector<double> means, balances;
    for (const auto& row : compute) {
      const double mx = max_of(row), mean = mean_of(row);
      means.push_back(mean);
      balances.push_back(mx > 0 ? mean / mx : 1.0);
      for (double t : row) m.sync_wait_s += mx - t;  // BPT-CNN Eq. 8
    }
    m.compute_mean_s = median(means);
    m.load_balance = median(balances);
  }
  // A rank's busy time is its records' (RankSums::compute): once per distinct records.
  std::vector<double> busy_of(distinct.size());
  for (std::size_t d = 0; d < distinct.size(); ++d) busy_of[d] = median(sums[d].compute);
  m.busy_s.reserve(n_ranks);
  for (std::size_t r = 0; r < n_ranks; ++r) m.busy_s.push_back(busy_of[distinct_of[r]]);
  {
    const auto [least, most] = std::minmax_element(m.busy_s.begin(), m.busy_s.end());
    m.busy_min_max = *most > 0 ? *least / *most : 1.0;
  }
  m.comm_s = median_of_max(comm);
  m.exposed_comm_s = median_of_max(exposed);
  m.wait_s = median_of_max(waits);
  m.comm_bytes = median_of_max(bytes);
  m.total_comm_s = sum_tc;
  m.total_exposed_s = sum_tb;
  // 100·(1 − ΣT_b/ΣT_c) = Eq. 11, written so that ΣT_b = 0 gives exactly 100.
  m.overlap_ratio_percent = sum_tc > 0 ? 100.0 * (1.0 - sum_tb / sum_tc) : 0.0;

  for (std::size_t slot = 0; slot < layer_slots; ++slot) {
    if (!layer_label[slot]) continue;
    const std::vector<double> per_rank(layer_seconds.begin() + std::ptrdiff_t(slot * n_ranks),
                                       layer_seconds.begin() + std::ptrdiff_t((slot + 1) * n_ranks));
    LayerPhaseTime layer;
    layer.layer = layer_ids[slot / 4];
    layer.phase = Phase(slot % 4);
    layer.name = layer_label[slot]->substr(0, layer_label[slot]->find('.'));
    layer.mean_s = mean_of(per_rank) / double(n_iter);
    layer.max_s = max_of(per_rank) / double(n_iter);
    m.layers.push_back(std::move(layer));
  }
  return m;
}

}  // namespace

TraceMetrics compute_metrics(const Trace& trace, const MetricsDetail& detail) {
  std::vector<RankView> views;
  views.reserve(trace.ranks.size());
  for (const RankTrace& rank : trace.ranks) views.push_back({rank.rank, &rank});
  return metrics_of(trace, views, detail);
}

TraceMetrics compute_metrics(const ClassedTrace& classed, const MetricsDetail& detail) {
  std::vector<RankView> views;
  views.reserve(classed.trace.ranks.size());
  for (std::size_t r = 0; r < classed.trace.ranks.size(); ++r)
    views.push_back({classed.trace.ranks[r].rank, &classed.records_of(int(r))});
  return metrics_of(classed.trace, views, detail);
}

nlohmann::json to_json(const TraceMetrics& m) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerPhaseTime& layer : m.layers)
    layers.push_back({{"layer", layer.layer}, {"name", layer.name}, {"phase", to_string(layer.phase)},
                      {"mean_s", layer.mean_s}, {"max_s", layer.max_s}});
  nlohmann::json collectives = nlohmann::json::array();
  for (const CollectiveTiming& c : m.collectives)
    collectives.push_back({{"rank", c.rank}, {"collective", c.collective}, {"label", c.label},
                           {"kind", to_string(c.kind)}, {"iteration", c.iteration}, {"bytes", c.bytes},
                           {"comm_s", c.comm_s}, {"exposed_s", c.exposed_s}, {"wait_s", c.wait_s}});
  return {{"engine", m.engine},
          {"ranks", m.ranks},
          {"warmup_iterations", m.warmup_iterations},
          {"measured_iterations", m.measured_iterations},
          {"iteration_times_s", m.iteration_times_s},
          {"iteration_s", m.iteration_s},
          {"compute_max_s", m.compute_max_s},
          {"compute_mean_s", m.compute_mean_s},
          {"non_gemm_compute_s", m.non_gemm_compute_s},
          {"comm_s", m.comm_s},
          {"exposed_comm_s", m.exposed_comm_s},
          {"wait_s", m.wait_s},
          {"total_comm_s", m.total_comm_s},
          {"total_exposed_s", m.total_exposed_s},
          {"overlap_ratio_percent", m.overlap_ratio_percent},
          {"comm_bytes", m.comm_bytes},
          {"load_balance", m.load_balance},
          {"sync_wait_s", m.sync_wait_s},
          {"busy_s", m.busy_s},
          {"busy_min_max", m.busy_min_max},
          {"layers", std::move(layers)},
          {"collectives", std::move(collectives)}};
}

}  // namespace cnnpar
