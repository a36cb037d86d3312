#include "workload/study.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <iterator>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "model/scenarios.hpp"
#include "workload/registry.hpp"

namespace cnnpar {
namespace {

// {"<nodes>": value, ...} with positive values.
std::map<int, double> parse_per_nodes(const JsonNode& table, const char* name) {
  std::map<int, double> out;
  for (const std::string& key : table.keys()) {
    const JsonNode value = table.at(key);
    int nodes = 0;
    const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), nodes);
    if (error != std::errc() || end != key.data() + key.size() || nodes < 1 || nodes > limits::kMaxRanks)
      throw InputError(value.file(), value.path(), key,
                       fmt::format("keys of {} are node counts in [1, {}]", name, limits::kMaxRanks));
    out[nodes] = value.as_positive_number();
  }
  return out;
}

void parse_paper(const JsonNode& node, StudySeries& series) {
  node.check_keys({"speedup_at", "iteration_s_at", "max_speedup"});
  if (node.has("speedup_at")) series.paper_speedup_at = parse_per_nodes(node.at("speedup_at"), "speedup_at");
  if (node.has("iteration_s_at")) series.paper_iteration_s_at = parse_per_nodes(node.at("iteration_s_at"), "iteration_s_at");
  if (node.has("max_speedup")) series.paper_max_speedup = node.at("max_speedup").as_positive_number();
}

const StudySeries* find_series(const Study& study, const std::string& label) {
  for (const StudySeries& series : study.series)
    if (series.label == label) return &series;
  return nullptr;
}

StudyOrdering parse_ordering(const JsonNode& item, const Study& study) {
  item.check_keys({"claim", "best", "increasing", "flat_after", "at", "from", "max_gain"});
  StudyOrdering ordering;
  ordering.claim = item.at("claim").as_string();
  const auto label = [&](const JsonNode& value) {
    const std::string text = value.as_string();
    if (!find_series(study, text)) value.fail("no series has this label");
    return text;
  };
  const int kinds = int(item.has("best")) + int(item.has("increasing")) + int(item.has("flat_after"));
  if (kinds != 1) item.fail("an ordering is one of best, increasing or flat_after");
  const auto node_count = [&](const JsonNode& value) {
    const int nodes = int(value.as_int_in(1, limits::kMaxRanks));
    if (std::find(study.nodes.begin(), study.nodes.end(), nodes) == study.nodes.end())
      value.fail("not one of the study's node counts");
    return nodes;
  };
  if (item.has("best")) {
    ordering.kind = StudyOrdering::Kind::best;
    ordering.labels = {label(item.at("best"))};
    if (item.has("at")) ordering.nodes = node_count(item.at("at"));
  } else if (item.has("increasing")) {
    ordering.kind = StudyOrdering::Kind::increasing;
    for (const JsonNode& value : item.at("increasing").items()) ordering.labels.push_back(label(value));
    if (ordering.labels.size() < 2) item.at("increasing").fail("an increasing ordering names at least two series");
  } else {
    ordering.kind = StudyOrdering::Kind::flat_after;
    ordering.labels = {label(item.at("flat_after"))};
    ordering.nodes = node_count(item.at("from"));
    ordering.max_gain = item.at("max_gain").as_number_in(1, 1e6);
  }
  return ordering;
}

}  // namespace

Study parse_study(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  root.check_keys({"name", "title", "source", "network", "platform", "batch", "nodes", "iterations", "warmup", "series",
                   "findings", "orderings"});
  Study study;
  study.name = root.at("name").as_string();
  // The name becomes a folder under report --out: nothing that could leave it ("..", "/").
  const bool plain_name = std::all_of(study.name.begin(), study.name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.';
  });
  if (study.name.empty() || study.name.front() == '.' || !plain_name || study.name.size() > 200)
    root.at("name").fail("a study name is a folder name: letters, digits, '-', '_' and '.', not starting with '.'");
  study.title = root.string_or("title", study.name);
  study.source = root.string_or("source", "");
  study.platform = root.at("platform").as_string();
  const std::string network = root.string_or("network", "");
  const std::int64_t batch = root.has("batch") ? root.at("batch").as_int_in(1, limits::kMaxBatch) : 256;
  const int iterations = int(root.has("iterations") ? root.at("iterations").as_int_in(1, limits::kMaxIterations) : 3);
  const int warmup = int(root.has("warmup") ? root.at("warmup").as_int_in(0, limits::kMaxIterations) : 1);
  for (const JsonNode& count : root.at("nodes").items()) study.nodes.push_back(int(count.as_int_in(1, limits::kMaxRanks)));
  if (study.nodes.empty()) root.at("nodes").fail("a study needs at least one node count");
  if (!std::is_sorted(study.nodes.begin(), study.nodes.end()) ||
      std::adjacent_find(study.nodes.begin(), study.nodes.end()) != study.nodes.end())
    root.at("nodes").fail("node counts must be ascending without repeats");

  if (root.has("findings")) {
    const JsonNode findings = root.at("findings");
    if (findings.raw().is_string()) study.findings.push_back(findings.as_string());
    else
      for (const JsonNode& paragraph : findings.items()) study.findings.push_back(paragraph.as_string());
  }

  const std::vector<JsonNode> series_nodes = root.at("series").items();
  if (series_nodes.empty()) root.at("series").fail("a study needs at least one series");
  for (const JsonNode& node : series_nodes) {
    // Besides these keys, a series takes its strategy's options by their schema keys.
    static constexpr std::string_view kSeriesKeys[] = {"label", "strategy", "network", "batch", "paper",
                                                       "weak_scaling"};
    StudySeries series;
    series.label = node.at("label").as_string();
    series.network = node.string_or("network", network);
    if (series.network.empty()) node.fail("no network: give one for the study or for this series");
    StrategyOptions& options = series.strategy;
    options.origin = file;
    options.global_batch = node.has("batch") ? node.at("batch").as_int_in(1, limits::kMaxBatch) : batch;
    options.iterations = iterations;
    options.warmup_iterations = warmup;
    parse_strategy_object(node, kSeriesKeys, options);
    if (node.has("paper")) parse_paper(node.at("paper"), series);
    series.weak_scaling = node.bool_or("weak_scaling", false);
    if (series.weak_scaling)
      for (int nodes : study.nodes)
        if ((options.global_batch * nodes) % study.nodes.front() != 0)
          node.at("weak_scaling")
              .fail(fmt::format("the batch {} scaled to {} nodes (× {}/{}) is not a whole number of images",
                                options.global_batch, nodes, nodes, study.nodes.front()));
    for (const StudySeries& other : study.series)
      if (other.label == series.label) node.at("label").fail("two series with the same label");
    study.series.push_back(std::move(series));
  }
  if (root.has("orderings"))
    for (const JsonNode& item : root.at("orderings").items()) study.orderings.push_back(parse_ordering(item, study));
  return study;
}

StrategyOptions series_options_at(const Study& study, const StudySeries& series, int nodes) {
  StrategyOptions options = series.strategy;
  options.ranks = nodes;
  if (series.weak_scaling && !study.nodes.empty())
    options.global_batch = options.global_batch * nodes / study.nodes.front();
  return options;
}

Study load_study(const std::string& name_or_path) {
  const ScenarioDocument document = load_scenario("studies", name_or_path);
  return parse_study(document.json, document.origin);
}

}  // namespace cnnpar
