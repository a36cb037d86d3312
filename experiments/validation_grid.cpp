// The validation grid file parsed and checked, expanded to its configurations, and the names
// a configuration and a group calibration are given.
#include "experiments/validation_grid.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "base/units.hpp"
#include "model/scenarios.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

namespace {

constexpr std::string_view kFormat = "cnnpar-validation";

LinkSetting parse_link(const JsonNode& bandwidth, const JsonNode& latency) {
  LinkSetting link;
  link.bandwidth_text = bandwidth.as_string();
  if (link.bandwidth_text != "native") link.bandwidth_Bps = bandwidth.as_quantity(Unit::bandwidth_Bps);
  link.latency_text = latency.as_string();
  if (link.latency_text != "native") link.latency_s = latency.as_quantity(Unit::time_s);
  return link;
}

/** A network of the grid, loaded; an unknown name or a missing file is the grid's error. */
Network load_grid_network(const JsonNode& node) {
  const std::string name = node.as_string();
  try {
    return load_network(name);
  } catch (const InputError& error) {
    // Errors inside an existing network file name that file; a name that is not one names the grid.
    if (error.file() == "<command line>" || (error.json_path() == "/" && error.value() == name)) node.fail(error.reason());
    throw;
  }
}

/** Re-raises a configuration check of validate_strategy_options at the grid's own path. */
[[noreturn]] void fail_at_grid_path(const InputError& error, const ValidationGrid& grid, std::size_t strategy,
                                    std::size_t batch, std::size_t ranks, const std::string& context) {
  std::string path = error.json_path();
  if (path == "/batch") path = fmt::format("/batches/{}", batch);
  else if (path == "/nodes") path = fmt::format("/ranks/{}", ranks);
  else if (path != "/iterations" && path != "/warmup" && path != "/conv") path = fmt::format("/strategies/{}{}", strategy, path);
  throw InputError(grid.file, path, error.value(), error.reason() + " (" + context + ")");
}

/** "p2p", "mpi" or a list of them, each once. */
std::vector<std::string> parse_collective_modes(const JsonNode& node) {
  const auto check = [](const JsonNode& item) {
    const std::string mode = item.as_string();
    if (!is_collectives_mode(mode)) item.fail("expected mpi or p2p");
    return mode;
  };
  if (node.raw().is_string()) return {check(node)};
  std::vector<std::string> modes;
  for (const JsonNode& item : node.items()) {
    const std::string mode = check(item);
    if (std::find(modes.begin(), modes.end(), mode) != modes.end()) item.fail("the same collectives mode twice");
    modes.push_back(mode);
  }
  if (modes.empty()) node.fail("expected mpi, p2p or a list of them");
  return modes;
}

std::string safe_for_file_name(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
    if (keep) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out;
}

}  // namespace

bool ValidationFitSpec::observes(const std::string& strategy, std::int64_t batch) const {
  const bool strategy_kept = strategies.empty() || std::find(strategies.begin(), strategies.end(), strategy) != strategies.end();
  const bool batch_kept = batches.empty() || std::find(batches.begin(), batches.end(), batch) != batches.end();
  return strategy_kept && batch_kept;
}

std::string LinkSetting::label() const {
  if (latency_text == "native") return bandwidth_text;
  return bandwidth_text + " " + latency_text;
}

std::string LinkSetting::key() const {
  if (latency_text == "native") return safe_for_file_name(bandwidth_text);
  return safe_for_file_name(bandwidth_text) + "_" + safe_for_file_name(latency_text);
}

ValidationGrid parse_validation_grid(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  if (!document.is_object()) root.fail("a validation grid is a JSON object");
  root.check_keys({"format", "name", "description", "networks", "strategies", "bandwidths", "latencies", "batches",
                   "ranks", "real_compute_max_ranks", "iterations", "warmup", "measure_seconds", "comm_progress",
                   "collectives", "conv", "platform", "testbed", "calibration", "tolerance", "fit", "run_attempts"});
  if (root.has("format") && root.at("format").as_string() != kFormat)
    root.at("format").fail(fmt::format("expected \"{}\"", kFormat));
  ValidationGrid grid;
  grid.file = file;
  grid.name = root.at("name").as_string();
  if (grid.name.empty() || safe_for_file_name(grid.name) != grid.name)
    root.at("name").fail("a grid name is letters, digits, '.' and '-' (it names files)");
  grid.description = root.string_or("description", "");
  grid.iterations = int(root.int_or("iterations", grid.iterations));
  grid.warmup = int(root.int_or("warmup", grid.warmup));
  if (root.has("iterations")) grid.iterations = int(root.at("iterations").as_int_in(2, limits::kMaxIterations));
  if (root.has("warmup")) grid.warmup = int(root.at("warmup").as_int_in(0, grid.iterations - 1));
  if (root.has("measure_seconds")) grid.measure_seconds = root.at("measure_seconds").as_number_in(0, 3600);
  if (root.has("run_attempts")) grid.run_attempts = int(root.at("run_attempts").as_int_in(1, kMaxRunAttempts));
  grid.comm_progress = root.string_or("comm_progress", grid.comm_progress);
  if (grid.comm_progress != "poll" && grid.comm_progress != "thread") root.at("comm_progress").fail("expected poll or thread");
  if (root.has("collectives")) grid.collectives = parse_collective_modes(root.at("collectives"));
  if (root.has("conv")) grid.conv = parse_conv_paths(root.at("conv").as_string(), file, "/conv");
  grid.platform = root.string_or("platform", grid.platform);
  try {
    (void)load_platform(grid.platform);
  } catch (const InputError& error) {
    if (error.file() == "<command line>" || (error.json_path() == "/" && error.value() == grid.platform))
      root.at("platform").fail(error.reason());
    throw;
  }

  for (const JsonNode& batch : root.at("batches").items()) grid.batches.push_back(batch.as_int_in(1, limits::kMaxBatch));
  if (grid.batches.empty()) root.at("batches").fail("a grid needs at least one batch");
  for (const JsonNode& count : root.at("ranks").items()) grid.ranks.push_back(int(count.as_int_in(1, limits::kMaxRanks)));
  if (grid.ranks.empty()) root.at("ranks").fail("a grid needs at least one rank count");
  const int most_ranks = *std::max_element(grid.ranks.begin(), grid.ranks.end());
  if (root.has("real_compute_max_ranks"))
    grid.real_compute_max_ranks = int(root.at("real_compute_max_ranks").as_int_in(0, limits::kMaxRanks));

  if (root.has("testbed")) {
    const JsonNode testbed = root.at("testbed");
    testbed.check_keys({"nodes", "burst"});
    if (testbed.has("nodes")) grid.testbed_nodes = int(testbed.at("nodes").as_int_in(1, limits::kMaxRanks));
    if (testbed.has("burst")) grid.burst_bytes = testbed.at("burst").as_quantity(Unit::size_bytes);
  }
  if (grid.testbed_nodes == 0) grid.testbed_nodes = most_ranks;
  const std::vector<JsonNode> rank_nodes = root.at("ranks").items();
  for (std::size_t i = 0; i < grid.ranks.size(); ++i)
    if (grid.ranks[i] > grid.testbed_nodes)
      rank_nodes[i].fail(fmt::format("more ranks than the testbed has nodes ({}; testbed.nodes)", grid.testbed_nodes));

  if (root.has("calibration")) {
    const JsonNode calibration = root.at("calibration");
    calibration.check_keys({"repeats", "recalibrate_compute"});
    if (calibration.has("repeats")) grid.calibration_repeats = int(calibration.at("repeats").as_int_in(1, 100));
    if (calibration.has("recalibrate_compute")) grid.recalibrate_compute = calibration.at("recalibrate_compute").as_bool();
  }
  if (root.has("tolerance")) {
    const JsonNode tolerance = root.at("tolerance");
    tolerance.check_keys({"iteration_percent", "overlap_points", "compute_speed_percent"});
    if (tolerance.has("iteration_percent"))
      grid.iteration_tolerance_percent = tolerance.at("iteration_percent").as_number_in(0, 1000);
    if (tolerance.has("overlap_points")) grid.overlap_tolerance_points = tolerance.at("overlap_points").as_number_in(0, 100);
    if (tolerance.has("compute_speed_percent"))
      grid.compute_speed_tolerance_percent = tolerance.at("compute_speed_percent").as_number_in(0, 1000);
  }

  const nlohmann::json native = "native";
  const nlohmann::json native_list = nlohmann::json::array({native});
  const JsonNode bandwidths = root.has("bandwidths") ? root.at("bandwidths") : JsonNode(native_list, file, "/bandwidths");
  const JsonNode latencies = root.has("latencies") ? root.at("latencies") : JsonNode(native_list, file, "/latencies");
  const std::vector<JsonNode> bandwidth_nodes = bandwidths.items(), latency_nodes = latencies.items();
  for (std::size_t b = 0; b < bandwidth_nodes.size(); ++b)
    for (std::size_t l = 0; l < latency_nodes.size(); ++l) {
      LinkSetting link = parse_link(bandwidth_nodes[b], latency_nodes[l]);
      link.bandwidth_index = b;
      link.latency_index = l;
      grid.links.push_back(std::move(link));
    }
  if (grid.links.empty()) root.fail("a grid needs at least one bandwidth and one latency");

  std::vector<Network> networks;
  for (const JsonNode& node : root.at("networks").items()) {
    networks.push_back(load_grid_network(node));
    grid.networks.push_back(node.as_string());
  }
  if (grid.networks.empty()) root.at("networks").fail("a grid needs at least one network");

  const std::vector<JsonNode> strategy_nodes = root.at("strategies").items();
  if (strategy_nodes.empty()) root.at("strategies").fail("a grid needs at least one strategy");
  for (const JsonNode& node : strategy_nodes) {
    StrategyOptions options;
    options.origin = file;
    options.recompute_columns = kExecutorRecomputesColumns;
    options.conv = grid.conv;
    if (node.raw().is_string()) {
      const nlohmann::json object = {{"strategy", node.raw()}};
      parse_strategy_object(JsonNode(object, file, node.path()), {}, options);
    } else {
      parse_strategy_object(node, {}, options);
    }
    for (const StrategyOptions& other : grid.strategies)
      if (strategy_label(other) == strategy_label(options)) node.fail("the same strategy twice");
    grid.strategies.push_back(std::move(options));
  }

  if (root.has("fit")) {
    const JsonNode fit = root.at("fit");
    fit.check_keys({"free", "observe"});
    for (const JsonNode& path : fit.at("free").items()) grid.fit.free.push_back(path.as_string());
    if (grid.fit.free.empty()) fit.at("free").fail("a fit needs at least one free parameter");
    if (fit.has("observe")) {
      const JsonNode observe = fit.at("observe");
      observe.check_keys({"strategies", "batches"});
      if (observe.has("strategies"))
        for (const JsonNode& label : observe.at("strategies").items()) {
          const bool known = std::any_of(grid.strategies.begin(), grid.strategies.end(),
                                         [&](const StrategyOptions& s) { return strategy_label(s) == label.as_string(); });
          if (!known) label.fail("not a strategy of the grid (its label, e.g. \"lee k=3 f=1\")");
          grid.fit.strategies.push_back(label.as_string());
        }
      if (observe.has("batches"))
        for (const JsonNode& batch : observe.at("batches").items()) {
          const std::int64_t value = batch.as_int_in(1, limits::kMaxBatch);
          if (std::find(grid.batches.begin(), grid.batches.end(), value) == grid.batches.end())
            batch.fail("not a batch of the grid");
          grid.fit.batches.push_back(value);
        }
    }
  }

  // Every configuration must be one the strategy accepts (batch split, k within the network...).
  for (std::size_t n = 0; n < networks.size(); ++n)
    for (std::size_t s = 0; s < grid.strategies.size(); ++s)
      for (std::size_t b = 0; b < grid.batches.size(); ++b)
        for (std::size_t r = 0; r < grid.ranks.size(); ++r) {
          StrategyOptions options = grid.strategies[s];
          options.global_batch = grid.batches[b];
          options.ranks = grid.ranks[r];
          options.iterations = grid.iterations;
          options.warmup_iterations = grid.warmup;
          if (grid.ranks[r] < strategy_spec(options.name, file).min_ranks)
            throw InputError(file, fmt::format("/ranks/{}", r), std::to_string(grid.ranks[r]),
                             fmt::format("strategy {} needs at least {} ranks", options.name,
                                         strategy_spec(options.name, file).min_ranks));
          try {
            validate_strategy_options(networks[n], options);
          } catch (const InputError& error) {
            fail_at_grid_path(error, grid, s, b, r,
                              fmt::format("{}, batch {}, {} ranks", grid.networks[n], grid.batches[b], grid.ranks[r]));
          }
        }
  return grid;
}

ValidationGrid load_validation_grid(const std::string& path) { return parse_validation_grid(read_json_file(path), path); }

bool is_collectives_mode(const std::string& text) { return text == "p2p" || text == "mpi"; }

std::string collectives_key_suffix(const std::string& collectives) {
  return collectives == "p2p" ? "" : "_" + collectives;
}

std::string collectives_label_suffix(const std::string& collectives) {
  return collectives == "p2p" ? "" : ", " + collectives + " collectives";
}

std::vector<ValidationConfig> validation_configs(const ValidationGrid& grid) {
  std::vector<ValidationConfig> configs;
  for (const std::string& collectives : grid.collectives)
    for (const std::string& network : grid.networks)
      for (const StrategyOptions& strategy : grid.strategies)
        for (std::size_t link = 0; link < grid.links.size(); ++link)
          for (std::int64_t batch : grid.batches)
            for (int ranks : grid.ranks) {
              ValidationConfig config;
              config.network = network;
              config.strategy = strategy;
              config.strategy.global_batch = batch;
              config.strategy.ranks = ranks;
              config.strategy.iterations = grid.iterations;
              config.strategy.warmup_iterations = grid.warmup;
              config.link = link;
              config.compute = ranks <= grid.real_compute_max_ranks ? "real" : "sleep";
              config.collectives = collectives;
              configs.push_back(std::move(config));
            }
  return configs;
}

std::string strategy_label(const StrategyOptions& strategy) {
  // The options the grid gives, in schema order: "lee k=3 f=1", "dp".
  std::string label = strategy.name;
  for (const OptionSpec& option : strategy_spec(strategy.name, strategy.origin).options) {
    if (!strategy.values.contains(option.key)) continue;
    const nlohmann::json& value = strategy.values.at(option.key);
    label += " " + option.key + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  }
  return label;
}

std::string config_label(const ValidationGrid& grid, const ValidationConfig& config) {
  return fmt::format("{} {}, {}, batch {}, {} rank{}{}", config.network, strategy_label(config.strategy),
                     grid.links.at(config.link).label(), config.strategy.global_batch, config.strategy.ranks,
                     config.strategy.ranks == 1 ? "" : "s", collectives_label_suffix(config.collectives));
}

std::string config_key(const ValidationGrid& grid, const ValidationConfig& config) {
  std::string strategy = strategy_label(config.strategy);
  strategy.erase(std::remove(strategy.begin(), strategy.end(), '='), strategy.end());
  return fmt::format("{}_{}_{}_b{}_p{}{}", safe_for_file_name(std::filesystem::path(config.network).stem().string()),
                     safe_for_file_name(strategy), grid.links.at(config.link).key(), config.strategy.global_batch,
                     config.strategy.ranks, collectives_key_suffix(config.collectives));
}

std::string config_settings(const ValidationGrid& grid, const ValidationConfig& config) {
  const std::string measured_time =
      grid.measure_seconds > 0 ? fmt::format(", at least {:g} s measured", grid.measure_seconds) : "";
  // A finished run is reused only under the same settings, so they name the conv paths; the
  // default's text is the one work folders made before `conv` existed hold.
  const std::string conv =
      config.strategy.conv == kDefaultConvPaths ? "" : fmt::format(", conv {}", config.strategy.conv.text());
  return fmt::format("{} iterations ({} warm-up){}, {} compute, {} progress, {} collectives, platform {}{}",
                     config.strategy.iterations, config.strategy.warmup_iterations, measured_time, config.compute,
                     grid.comm_progress, config.collectives, grid.platform, conv);
}

int run_iterations(const ValidationGrid& grid, double predicted_iteration_s) {
  if (grid.measure_seconds <= 0 || !(predicted_iteration_s > 0)) return grid.iterations;
  const double needed = grid.warmup + std::ceil(grid.measure_seconds / predicted_iteration_s);
  return int(std::clamp(needed, double(grid.iterations), double(kMaxValidationIterations)));
}

std::string group_calibration(const std::string& platform_file) {
  const std::filesystem::path file(platform_file);
  const std::string stem = file.stem().string();
  const std::size_t mark = stem.rfind(kRecalibratedSuffix);
  if (mark == std::string::npos) return platform_file;
  const std::string number = stem.substr(mark + std::char_traits<char>::length(kRecalibratedSuffix));
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) return platform_file;
  return (file.parent_path() / (stem.substr(0, mark) + file.extension().string())).string();
}

std::string recalibrated_platform_file(const std::string& group_file, int n) {
  const std::filesystem::path file(group_file);
  return (file.parent_path() / fmt::format("{}{}{}{}", file.stem().string(), kRecalibratedSuffix, n,
                                           file.extension().string()))
      .string();
}

}  // namespace cnnpar
