#include "analysis/metrics.hpp"

#include <algorithm>
#include <cstddef>
#include <span>
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

// Per rank: time of the mark ending each iteration, by iteration (a later mark of the same
// iteration wins). A sorted vector: a trace has a few marks per rank, read many times.
class MarkTimes {
 public:
  explicit MarkTimes(const RankTrace& rank) {
    by_iteration_.reserve(rank.marks.size());
    for (const MarkRecord& mark : rank.marks) by_iteration_.emplace_back(mark.iteration, mark.time_s);
    std::stable_sort(by_iteration_.begin(), by_iteration_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    // Of equal iterations the stable sort keeps record order: keep the last.
    std::size_t kept = 0;
    for (std::size_t i = 0; i < by_iteration_.size(); ++i) {
      if (kept > 0 && by_iteration_[kept - 1].first == by_iteration_[i].first) by_iteration_[kept - 1] = by_iteration_[i];
      else by_iteration_[kept++] = by_iteration_[i];
    }
    by_iteration_.resize(kept);
  }
  const std::vector<std::pair<int, double>>& entries() const { return by_iteration_; }
  const double* find(int iteration) const {
    const auto found = std::lower_bound(by_iteration_.begin(), by_iteration_.end(), iteration,
                                        [](const auto& entry, int value) { return entry.first < value; });
    return found != by_iteration_.end() && found->first == iteration ? &found->second : nullptr;
  }

 private:
  std::vector<std::pair<int, double>> by_iteration_;
};

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

// Per (measured iteration, rank) values, one row per iteration.
class IterationGrid {
 public:
  IterationGrid(std::size_t iterations, std::size_t ranks) : ranks_(ranks), cells_(iterations * ranks, 0.0) {}
  double& at(std::size_t iteration, std::size_t rank) { return cells_[iteration * ranks_ + rank]; }
  std::span<const double> row(std::size_t iteration) const { return {cells_.data() + iteration * ranks_, ranks_}; }

 private:
  std::size_t ranks_;
  std::vector<double> cells_;
};

// A rank and the records it lived: its own, or its class representative's (ClassedTrace).
struct RankView {
  int rank = 0;
  const RankTrace* records = nullptr;
};

// What one distinct RankTrace contributes, per measured iteration and per layer slot, computed
// once however many ranks lived it.
struct RankSums {
  RankSums(std::size_t iterations, std::size_t layer_slots)
      : per_iteration(7 * iterations, 0.0), layer_seconds(layer_slots, 0.0) {
    std::span<double>* rows[] = {&span, &compute, &non_gemm, &comm, &exposed, &waits, &bytes};
    for (std::size_t k = 0; k < 7; ++k) *rows[k] = std::span<double>(per_iteration.data() + k * iterations, iterations);
  }
  RankSums(const RankSums&) = delete;  // the rows point into per_iteration (a move keeps its buffer)
  RankSums(RankSums&&) = default;
  RankSums& operator=(const RankSums&) = delete;
  RankSums& operator=(RankSums&&) = default;

  std::vector<double> per_iteration;  // one buffer for the rows below
  std::span<double> span, compute, non_gemm, comm, exposed, waits, bytes;  // per iteration
  std::vector<double> layer_seconds;                                      // per layer slot
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
    // A class's ranks are usually neighbours: the map is asked once per run of them.
    if (!distinct_of.empty() && view.records == distinct[distinct_of.back()]) {
      distinct_of.push_back(distinct_of.back());
      continue;
    }
    const auto [found, added] = index_of.try_emplace(view.records, distinct.size());
    if (added) distinct.push_back(view.records);
    distinct_of.push_back(found->second);
  }

  std::vector<MarkTimes> marks;
  marks.reserve(distinct.size());
  for (const RankTrace* rank : distinct) marks.emplace_back(*rank);
  // Measured iterations: >= warm-up and marked on every rank.
  for (const auto& [iteration, time] : marks[distinct_of.front()].entries()) {
    if (iteration < warmup_iterations) continue;
    bool everywhere = true;
    for (const MarkTimes& rank_marks : marks) everywhere = everywhere && rank_marks.find(iteration) != nullptr;
    if (everywhere) m.measured_iterations.push_back(iteration);
  }
  if (m.measured_iterations.empty())
    throw InputError("<trace>", "/warmup_iterations", std::to_string(warmup_iterations),
                     "the trace has no measured iteration (marks at or after the warm-up on every rank)");

  const std::size_t n_iter = m.measured_iterations.size();
  const std::size_t n_ranks = views.size();
  // The slot of a measured iteration (measured_iterations ascends), or -1.
  const auto iteration_slot = [&](int iteration) -> std::ptrdiff_t {
    const auto found = std::lower_bound(m.measured_iterations.begin(), m.measured_iterations.end(), iteration);
    return found != m.measured_iterations.end() && *found == iteration ? found - m.measured_iterations.begin() : -1;
  };

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

  std::vector<RankSums> sums;
  sums.reserve(distinct.size());
  for (std::size_t d = 0; d < distinct.size(); ++d) {
    const RankTrace& rank = *distinct[d];
    const auto& rank_marks = marks[d];
    RankSums& out = sums.emplace_back(n_iter, layer_slots);
    out.tc_tb.reserve(rank.collectives.size());
    for (std::size_t i = 0; i < n_iter; ++i) {
      const int iteration = m.measured_iterations[i];
      const double* previous = rank_marks.find(iteration - 1);
      out.span[i] = *rank_marks.find(iteration) - (previous ? *previous : 0.0);
    }
    ordered_marks.assign(rank_marks.entries().begin(), rank_marks.entries().end());
    std::stable_sort(ordered_marks.begin(), ordered_marks.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    // Compute ops (program order, so starts do not decrease): the iteration whose
    // [previous mark, mark) holds the op's start.
    std::size_t next_mark = 0;
    auto slot_of = [&](std::size_t mark) { return iteration_slot(ordered_marks[mark].first); };
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
      if (!detail.per_layer) continue;
      const std::size_t layer_slot = layer_position(op.layer) * 4 + std::size_t(op.phase);
      if (layer_slot < layer_slots) {
        out.layer_seconds[layer_slot] += seconds;
        if (!layer_label[layer_slot]) layer_label[layer_slot] = &op.label;
      }
    }
    for (const CollectiveRecord& record : rank.collectives) {
      // The iteration whose [previous mark, mark) holds the start of the wait (see metrics.hpp).
      const auto window = std::upper_bound(ordered_marks.begin(), ordered_marks.end(), record.wait_start_s,
                                           [](double t, const auto& mark) { return t < mark.second; });
      if (window == ordered_marks.end()) continue;  // waited after the last mark (drain)
      const std::ptrdiff_t found = iteration_slot(window->first);
      if (found < 0) continue;
      const std::size_t i = std::size_t(found);
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
  auto iteration_span = IterationGrid(n_iter, n_ranks), compute = iteration_span, non_gemm = iteration_span,
       comm = iteration_span, exposed = iteration_span, waits = iteration_span, bytes = iteration_span;
  std::vector<double> layer_seconds(layer_slots * n_ranks, 0.0);  // (slot, rank)
  double sum_tc = 0, sum_tb = 0;
  for (std::size_t r = 0; r < n_ranks; ++r) {
    const RankSums& in = sums[distinct_of[r]];
    for (std::size_t i = 0; i < n_iter; ++i) {
      iteration_span.at(i, r) = in.span[i];
      compute.at(i, r) = in.compute[i];
      non_gemm.at(i, r) = in.non_gemm[i];
      comm.at(i, r) = in.comm[i];
      exposed.at(i, r) = in.exposed[i];
      waits.at(i, r) = in.waits[i];
      bytes.at(i, r) = in.bytes[i];
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

  auto max_of = [](std::span<const double> v) { return *std::max_element(v.begin(), v.end()); };
  auto mean_of = [](std::span<const double> v) {
    double s = 0;
    for (double x : v) s += x;
    return s / double(v.size());
  };
  auto median_of_max = [&](const IterationGrid& g) {
    std::vector<double> per_iteration;
    for (std::size_t i = 0; i < n_iter; ++i) per_iteration.push_back(max_of(g.row(i)));
    return median(per_iteration);
  };

  for (std::size_t i = 0; i < n_iter; ++i) m.iteration_times_s.push_back(max_of(iteration_span.row(i)));
  m.iteration_s = median(m.iteration_times_s);
  m.compute_max_s = median_of_max(compute);
  m.non_gemm_compute_s = median_of_max(non_gemm);
  {
    std::vector<double> means, balances;
    for (std::size_t i = 0; i < n_iter; ++i) {
      const std::span<const double> row = compute.row(i);
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
  for (std::size_t d = 0; d < distinct.size(); ++d)
    busy_of[d] = median({sums[d].compute.begin(), sums[d].compute.end()});
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
    const std::span<const double> per_rank(layer_seconds.data() + slot * n_ranks, n_ranks);
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
