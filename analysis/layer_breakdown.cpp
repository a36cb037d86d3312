#include "analysis/layer_breakdown.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/output_files.hpp"
#include "base/units.hpp"
#include "model/cost.hpp"

namespace cnnpar {

Phase collective_phase(Payload payload) {
  switch (payload) {
    case Payload::activations:
    case Payload::batch_statistics: return Phase::forward;
    case Payload::errors:
    case Payload::error_statistics: return Phase::backward_data;
    case Payload::weights:
    case Payload::increments: return Phase::update;  // a parameter server's pushes and pulls
    case Payload::gradients:
    case Payload::none: break;
  }
  return Phase::backward_weight;
}

namespace {

constexpr const char* kUnattributed = "(unattributed)";

struct Share {
  int layer = -1;
  double fraction = 1;  ///< of the collective's times and bytes
};
struct Carried {
  Phase phase = Phase::backward_weight;
  std::vector<Share> shares;
};

// What each collective id carries, its layers weighted by parameter bytes.
std::vector<Carried> carried_layers(const Trace& trace, const Network* network) {
  const std::optional<std::int64_t> layer_count =
      network ? std::optional<std::int64_t>(network->layers.size()) : std::nullopt;
  std::vector<Carried> carried;
  for (const CollectiveLayers& entry : read_collective_layers(trace, layer_count)) {
    Carried c;
    c.phase = collective_phase(entry.payload);
    double total_bytes = 0;
    for (int layer : entry.layers) {
      Share share;
      share.layer = layer;
      share.fraction = network ? layer_cost(network->layers[std::size_t(layer)]).parameter_bytes() : 1.0;
      total_bytes += share.fraction;
      c.shares.push_back(share);
    }
    // Parameter bytes weigh the layers; layers without parameters (or no network) share evenly.
    for (Share& share : c.shares)
      share.fraction = total_bytes > 0 ? share.fraction / total_bytes : 1.0 / double(c.shares.size());
    carried.push_back(std::move(c));
  }
  return carried;
}

struct Key {
  int layer;
  Phase phase;
  bool operator<(const Key& other) const {
    // −1 (unattributed) sorts last.
    const auto order = [](int layer) { return layer < 0 ? std::int64_t(1) << 40 : std::int64_t(layer); };
    if (layer != other.layer) return order(layer) < order(other.layer);
    return int(phase) < int(other.phase);
  }
};

}  // namespace

std::vector<LayerPhaseBreakdown> layer_breakdown(const Trace& trace, const TraceMetrics& metrics,
                                                 const Network* network) {
  const std::vector<Carried> carried = carried_layers(trace, network);
  const std::size_t n_ranks = std::size_t(std::max(metrics.ranks, 1));
  const double n_iter = double(std::max<std::size_t>(metrics.measured_iterations.size(), 1));

  std::map<Key, LayerPhaseBreakdown> rows;
  const auto row = [&](int layer, Phase phase) -> LayerPhaseBreakdown& {
    LayerPhaseBreakdown& r = rows[Key{layer, phase}];
    r.layer = layer;
    r.phase = phase;
    return r;
  };
  for (const LayerPhaseTime& layer : metrics.layers) {
    LayerPhaseBreakdown& r = row(layer.layer, layer.phase);
    r.name = layer.name;
    r.compute_s = layer.max_s;
  }

  // Per (layer, phase): per-rank sums over measured iterations, then the max over ranks.
  struct RankSums {
    std::vector<double> comm_s, exposed_s, bytes;
  };
  std::map<Key, RankSums> sums;
  const auto add = [&](const Key& key, int rank, double fraction, const CollectiveTiming& timing) {
    RankSums& s = sums[key];
    if (s.comm_s.empty()) s.comm_s.assign(n_ranks, 0), s.exposed_s.assign(n_ranks, 0), s.bytes.assign(n_ranks, 0);
    const std::size_t r = std::min(std::size_t(std::max(rank, 0)), n_ranks - 1);
    s.comm_s[r] += fraction * timing.comm_s;
    s.exposed_s[r] += fraction * timing.exposed_s;
    s.bytes[r] += fraction * timing.bytes;
  };
  for (const CollectiveTiming& timing : metrics.collectives) {
    const bool known = timing.collective >= 0 && std::size_t(timing.collective) < carried.size() &&
                       !carried[std::size_t(timing.collective)].shares.empty();
    if (!known) {
      add(Key{-1, Phase::backward_weight}, timing.rank, 1.0, timing);
      continue;
    }
    const Carried& c = carried[std::size_t(timing.collective)];
    for (const Share& share : c.shares) add(Key{share.layer, c.phase}, timing.rank, share.fraction, timing);
  }
  for (const auto& [key, s] : sums) {
    LayerPhaseBreakdown& r = row(key.layer, key.phase);
    r.comm_s = *std::max_element(s.comm_s.begin(), s.comm_s.end()) / n_iter;
    r.exposed_comm_s = *std::max_element(s.exposed_s.begin(), s.exposed_s.end()) / n_iter;
    r.bytes = *std::max_element(s.bytes.begin(), s.bytes.end()) / n_iter;
  }

  std::vector<LayerPhaseBreakdown> out;
  out.reserve(rows.size());
  for (auto& [key, r] : rows) {
    if (r.layer < 0) r.name = kUnattributed;
    else if (network && std::size_t(r.layer) < network->layers.size()) r.name = network->layers[std::size_t(r.layer)].spec.name;
    else if (r.name.empty()) r.name = fmt::format("layer{}", r.layer);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<LayerPhaseBreakdown> layer_totals(const std::vector<LayerPhaseBreakdown>& rows) {
  std::vector<LayerPhaseBreakdown> totals;
  for (const LayerPhaseBreakdown& r : rows) {
    if (totals.empty() || totals.back().layer != r.layer) {
      totals.push_back(r);
      totals.back().phase = Phase::forward;
      continue;
    }
    LayerPhaseBreakdown& t = totals.back();
    t.compute_s += r.compute_s;
    t.comm_s += r.comm_s;
    t.exposed_comm_s += r.exposed_comm_s;
    t.bytes += r.bytes;
  }
  return totals;
}

std::string format_layer_table(const std::vector<LayerPhaseBreakdown>& rows) {
  const std::vector<LayerPhaseBreakdown> totals = layer_totals(rows);
  const auto unit_of = [&](double LayerPhaseBreakdown::*field) {
    double largest = 0;
    for (const LayerPhaseBreakdown& r : totals) largest = std::max(largest, std::fabs(r.*field));
    return time_unit_for(largest);
  };
  const TimeUnit compute = unit_of(&LayerPhaseBreakdown::compute_s), comm = unit_of(&LayerPhaseBreakdown::comm_s),
                 exposed = unit_of(&LayerPhaseBreakdown::exposed_comm_s);
  std::size_t width = 5;
  for (const LayerPhaseBreakdown& r : totals) width = std::max(width, r.name.size());
  const auto head = [](const char* name, const TimeUnit& unit) { return fmt::format("{} {}", name, unit.name); };
  std::string out = fmt::format("{:<{}} {:>12} {:>12} {:>12} {:>12}\n", "layer", width, head("compute", compute),
                                head("comm", comm), head("exposed", exposed), "bytes");
  for (const LayerPhaseBreakdown& r : totals)
    out += fmt::format("{:<{}} {:>12.3f} {:>12.3f} {:>12.3f} {:>12}\n", r.name, width, r.compute_s * compute.per_second,
                       r.comm_s * comm.per_second, r.exposed_comm_s * exposed.per_second,
                       r.bytes > 0 ? format_bytes(r.bytes) : "0");
  return out;
}

const char* const kLayerCsvHeader =
    "network,platform,engine,strategy,options,batch,nodes,layer,name,phase,compute_s,comm_s,exposed_comm_s,bytes";

std::string layer_csv_lines(const ConfigColumns& config, int nodes, const std::vector<LayerPhaseBreakdown>& rows) {
  const std::string prefix = config_csv_fields(config);
  std::string out;
  for (const LayerPhaseBreakdown& r : rows)
    out += fmt::format("{},{},{},{},{},{:.9g},{:.9g},{:.9g},{:.12g}\n", prefix, nodes, r.layer, csv_field(r.name),
                       to_string(r.phase), r.compute_s, r.comm_s, r.exposed_comm_s, r.bytes);
  return out;
}

nlohmann::json to_json(const std::vector<LayerPhaseBreakdown>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const LayerPhaseBreakdown& r : rows)
    out.push_back({{"layer", r.layer}, {"name", r.name}, {"phase", to_string(r.phase)}, {"compute_s", r.compute_s},
                   {"comm_s", r.comm_s}, {"exposed_comm_s", r.exposed_comm_s}, {"bytes", r.bytes}});
  return out;
}

std::vector<LayerPair> pair_layers(const std::vector<LayerPhaseBreakdown>& predicted,
                                   const std::vector<LayerPhaseBreakdown>& measured) {
  std::map<Key, LayerPair> pairs;
  for (const LayerPhaseBreakdown& r : predicted) pairs[Key{r.layer, r.phase}].predicted = r;
  for (const LayerPhaseBreakdown& r : measured) pairs[Key{r.layer, r.phase}].measured = r;
  std::vector<LayerPair> out;
  for (auto& [key, pair] : pairs) {
    // The side without the row takes its identity, so both name the same layer and phase.
    if (pair.predicted.name.empty()) pair.predicted = LayerPhaseBreakdown{key.layer, pair.measured.name, key.phase};
    if (pair.measured.name.empty()) pair.measured = LayerPhaseBreakdown{key.layer, pair.predicted.name, key.phase};
    out.push_back(pair);
  }
  return out;
}

std::string format_layer_comparison(const std::vector<LayerPair>& pairs) {
  std::vector<LayerPhaseBreakdown> predicted, measured;
  for (const LayerPair& p : pairs) predicted.push_back(p.predicted), measured.push_back(p.measured);
  const std::vector<LayerPhaseBreakdown> p_totals = layer_totals(predicted), m_totals = layer_totals(measured);
  const auto unit_of = [&](double LayerPhaseBreakdown::*field) {
    double largest = 0;
    for (const auto* totals : {&p_totals, &m_totals})
      for (const LayerPhaseBreakdown& r : *totals) largest = std::max(largest, std::fabs(r.*field));
    return time_unit_for(largest);
  };
  const TimeUnit compute = unit_of(&LayerPhaseBreakdown::compute_s), comm = unit_of(&LayerPhaseBreakdown::comm_s),
                 exposed = unit_of(&LayerPhaseBreakdown::exposed_comm_s);
  std::size_t width = 5;
  for (const LayerPhaseBreakdown& r : p_totals) width = std::max(width, r.name.size());
  const auto head = [](const char* name, const TimeUnit& unit) { return fmt::format("{} {}", name, unit.name); };
  std::string out = fmt::format("{:<{}} {:>25} {:>8} {:>25} {:>25}\n", "layer", width,
                                head("compute", compute) + " pred/meas", "diff", head("comm", comm) + " pred/meas",
                                head("exposed", exposed) + " pred/meas");
  for (std::size_t i = 0; i < p_totals.size(); ++i) {
    const LayerPhaseBreakdown& p = p_totals[i];
    const LayerPhaseBreakdown& m = m_totals[i];
    const std::string diff = m.compute_s > 0 ? fmt::format("{:+.1f}%", 100 * (p.compute_s - m.compute_s) / m.compute_s) : "";
    const auto both = [](double a, double b, const TimeUnit& unit) {
      return fmt::format("{:.3f} / {:.3f}", a * unit.per_second, b * unit.per_second);
    };
    out += fmt::format("{:<{}} {:>25} {:>8} {:>25} {:>25}\n", p.name, width, both(p.compute_s, m.compute_s, compute),
                       diff, both(p.comm_s, m.comm_s, comm), both(p.exposed_comm_s, m.exposed_comm_s, exposed));
  }
  return out;
}

nlohmann::json to_json(const std::vector<LayerPair>& pairs) {
  nlohmann::json out = nlohmann::json::array();
  const auto side = [](const LayerPhaseBreakdown& r) {
    return nlohmann::json{{"compute_s", r.compute_s}, {"comm_s", r.comm_s}, {"exposed_comm_s", r.exposed_comm_s},
                          {"bytes", r.bytes}};
  };
  for (const LayerPair& p : pairs)
    out.push_back({{"layer", p.predicted.layer}, {"name", p.predicted.name}, {"phase", to_string(p.predicted.phase)},
                   {"predicted", side(p.predicted)}, {"measured", side(p.measured)}});
  return out;
}

}  // namespace cnnpar
