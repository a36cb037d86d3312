// A study's series predicted over its node counts, and what is read off them: the comparison
// with the paper's published numbers, the published orderings checked, the component tables.
#include "experiments/report.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/components.hpp"
#include "base/error.hpp"
#include "experiments/report_tables.hpp"
#include "model/scenarios.hpp"

namespace cnnpar {

std::string file_stem(const std::string& label) {
  std::string stem;
  for (char c : label) {
    if (std::isalnum(static_cast<unsigned char>(c))) stem += char(std::tolower(static_cast<unsigned char>(c)));
    else if (!stem.empty() && stem.back() != '-') stem += '-';
  }
  while (!stem.empty() && stem.back() == '-') stem.pop_back();
  return stem.empty() ? "series" : stem;
}

void check_study(const Study& study) {
  const Platform platform = load_platform(study.platform);
  if (study.nodes.back() > platform.nodes.count)
    throw InputError(study.series.front().strategy.origin, "/nodes", std::to_string(study.nodes.back()),
                     fmt::format("platform {} has {} nodes", platform.name, platform.nodes.count));
  for (const StudySeries& series : study.series) {
    const Network network = load_network(series.network);
    for (int nodes : study.nodes) validate_strategy_options(network, series_options_at(study, series, nodes));
  }
}

StudyResult run_study(const Study& study, const EngineFactory& make_engine, const SweepOptions& options) {
  const Platform platform = load_platform(study.platform);
  StudyResult result = predict_study(study, platform, make_engine, options);
  if (!study.series.empty()) {
    // The largest configuration of the first series, with every record, for the per-layer
    // breakdown and the timeline.
    const StudySeries& first = study.series.front();
    const Network network = load_network(first.network);
    const StrategyOptions options = series_options_at(study, first, study.nodes.back());
    LargestConfiguration largest;
    largest.series_label = first.label;
    largest.nodes = options.ranks;
    largest.trace = make_engine()->run(build_schedule(network, platform, options), platform);
    largest.layers = layer_breakdown(largest.trace, compute_metrics(largest.trace), &network);
    result.largest.push_back(std::move(largest));
  }
  return result;
}

StudyResult predict_study(const Study& study, const Platform& platform, const EngineFactory& make_engine,
                          const SweepOptions& options) {
  StudyResult result;
  for (const StudySeries& series : study.series) {
    const Network network = load_network(series.network);
    SeriesResult out;
    out.label = series.label;
    out.file_stem = file_stem(series.label);
    SweepOptions sweep = options;
    if (has_components(series.strategy.name)) {
      sweep.extra = [&](int, const Trace& trace) {
        return components_json(trace, &network, platform.network.element_bytes).value_or(nlohmann::json());
      };
      sweep.on_extra = [&](int nodes, nlohmann::json& components) {
        if (!components.is_null() && std::find(study.nodes.begin(), study.nodes.end(), nodes) != study.nodes.end())
          out.components[nodes] = std::move(components);
      };
    }
    if (series.weak_scaling) {
      // One sweep per node count at its own batch (each with its one-rank baseline at that batch).
      for (int nodes : study.nodes) {
        const StrategyOptions at_nodes = series_options_at(study, series, nodes);
        out.rows.push_back(predict_sweep(network, platform, at_nodes, {nodes}, make_engine, sweep).front());
        out.row_batches.push_back(at_nodes.global_batch);
      }
    } else {
      out.rows = predict_sweep(network, platform, series.strategy, study.nodes, make_engine, sweep);
    }
    out.config = config_columns(to_json(series.strategy), network.name, platform.name, make_engine()->name());
    result.series.push_back(std::move(out));
  }
  return result;
}

namespace detail {

const SweepRow* row_at(const SeriesResult& series, int nodes) {
  for (const SweepRow& row : series.rows)
    if (row.nodes == nodes) return &row;
  return nullptr;
}

std::vector<ComponentTable> component_tables(const StudyResult& result) {
  std::vector<ComponentTable> tables;
  for (const SeriesResult& series : result.series) {
    if (series.components.empty()) continue;
    ComponentTable table;
    table.series = series.label;
    std::vector<const nlohmann::json*> objects;
    for (const auto& [nodes, components] : series.components) objects.push_back(&components);
    table.keys = component_keys(objects);
    for (const auto& [nodes, components] : series.components) {
      std::vector<std::string> cells;
      for (const std::string& key : table.keys)
        cells.push_back(components.contains(key) && components.at(key).is_number()
                            ? format_component_value(key, components.at(key).get<double>())
                            : "");
      table.rows.emplace_back(nodes, std::move(cells));
    }
    tables.push_back(std::move(table));
  }
  return tables;
}

}  // namespace detail

using detail::row_at;

std::vector<PaperComparison> paper_comparisons(const Study& study, const StudyResult& result) {
  std::vector<PaperComparison> out;
  for (std::size_t i = 0; i < study.series.size() && i < result.series.size(); ++i) {
    const StudySeries& series = study.series[i];
    const SeriesResult& predicted = result.series[i];
    for (const auto& [nodes, paper] : series.paper_speedup_at) {
      const SweepRow* row = row_at(predicted, nodes);
      if (!row) continue;
      out.push_back({series.label, fmt::format("speedup at {} nodes", nodes), paper, row->speedup, nodes,
                     100.0 * (row->speedup - paper) / paper});
    }
    for (const auto& [nodes, paper] : series.paper_iteration_s_at) {
      const SweepRow* row = row_at(predicted, nodes);
      if (!row) continue;
      out.push_back({series.label, fmt::format("iteration time at {} nodes", nodes), paper, row->iteration_s, nodes,
                     100.0 * (row->iteration_s - paper) / paper, true});
    }
    if (series.paper_max_speedup > 0 && !predicted.rows.empty()) {
      const auto best = std::max_element(predicted.rows.begin(), predicted.rows.end(),
                                         [](const SweepRow& a, const SweepRow& b) { return a.speedup < b.speedup; });
      out.push_back({series.label, "maximum speedup", series.paper_max_speedup, best->speedup, best->nodes,
                     100.0 * (best->speedup - series.paper_max_speedup) / series.paper_max_speedup});
    }
  }
  return out;
}

namespace {

const SeriesResult* series_named(const StudyResult& result, const std::string& label) {
  for (const SeriesResult& series : result.series)
    if (series.label == label) return &series;
  return nullptr;
}

double max_speedup(const SeriesResult& series) {
  double best = 0;
  for (const SweepRow& row : series.rows) best = std::max(best, row.speedup);
  return best;
}

}  // namespace

std::vector<OrderingCheck> ordering_checks(const Study& study, const StudyResult& result) {
  std::vector<OrderingCheck> out;
  for (const StudyOrdering& ordering : study.orderings) {
    OrderingCheck check{ordering.claim, false, ""};
    switch (ordering.kind) {
      case StudyOrdering::Kind::best: {
        // The series with the highest speedup at the node count (or the highest maximum).
        const SeriesResult* best = nullptr;
        double best_speedup = 0;
        std::vector<std::string> values;
        for (const SeriesResult& series : result.series) {
          const SweepRow* row = ordering.nodes > 0 ? row_at(series, ordering.nodes) : nullptr;
          const double speedup = ordering.nodes > 0 ? (row ? row->speedup : 0.0) : max_speedup(series);
          values.push_back(fmt::format("{} {:.1f}", series.label, speedup));
          if (!best || speedup > best_speedup) {
            best = &series;
            best_speedup = speedup;
          }
        }
        check.reproduced = best && best->label == ordering.labels[0];
        check.predicted = fmt::format("{} is best ({}{})", best ? best->label : "none", fmt::join(values, ", "),
                                      ordering.nodes > 0 ? fmt::format(" at {} nodes", ordering.nodes) : ", maxima");
        break;
      }
      case StudyOrdering::Kind::increasing: {
        check.reproduced = true;
        double previous = -1;
        for (const std::string& label : ordering.labels) {
          const SeriesResult* series = series_named(result, label);
          const double value = series ? max_speedup(*series) : 0.0;
          check.reproduced = check.reproduced && series && value > previous;
          previous = value;
          check.predicted += fmt::format("{}{} {:.1f}", check.predicted.empty() ? "maxima " : " < ", label, value);
        }
        break;
      }
      case StudyOrdering::Kind::flat_after: {
        const SeriesResult* series = series_named(result, ordering.labels[0]);
        const SweepRow* from = series ? row_at(*series, ordering.nodes) : nullptr;
        if (from && !series->rows.empty() && from->speedup > 0) {
          const SweepRow& last = series->rows.back();
          const double gain = last.speedup / from->speedup;
          check.reproduced = gain <= ordering.max_gain;
          check.predicted = fmt::format("{:.1f} at {} nodes, {:.1f} at {}: × {:.2f} (flat: at most × {:.2f})",
                                        from->speedup, from->nodes, last.speedup, last.nodes, gain, ordering.max_gain);
        }
        break;
      }
    }
    out.push_back(std::move(check));
  }
  return out;
}

}  // namespace cnnpar
