#include "experiments/validation.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "experiments/sweep.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "base/output_files.hpp"
#include "model/scenarios.hpp"
#include "base/statistics.hpp"
#include "workload/registry.hpp"
#include "base/units.hpp"

namespace cnnpar {

namespace {

constexpr std::string_view kFormat = "cnnpar-validation";
constexpr const char* kEngines[] = {"analytic", "simgrid"};
constexpr MissCause kCauses[] = {MissCause::none,     MissCause::compute,       MissCause::effective_bandwidth,
                                 MissCause::latency,  MissCause::progress,      MissCause::tcp_behaviour,
                                 MissCause::contention};

// Message sizes per step that separate the communication causes (diagnose).
constexpr double kLatencyBoundBytes = 64.0 * 1024;
constexpr double kBandwidthBoundBytes = 1024.0 * 1024;
// A collective "overlapped compute" when its rank computed during at least this fraction of
// its measured T_c; a compute op "overlapped communication" likewise.
constexpr double kOverlapFraction = 0.25;

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
  else if (path != "/iterations" && path != "/warmup") path = fmt::format("/strategies/{}{}", strategy, path);
  throw InputError(grid.file, path, error.value(), error.reason() + " (" + context + ")");
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
                   "collectives", "platform", "testbed", "calibration", "tolerance", "fit", "run_attempts"});
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
  grid.collectives = root.string_or("collectives", grid.collectives);
  if (grid.collectives != "mpi" && grid.collectives != "p2p") root.at("collectives").fail("expected mpi or p2p");
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

std::vector<ValidationConfig> validation_configs(const ValidationGrid& grid) {
  std::vector<ValidationConfig> configs;
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
  return fmt::format("{} {}, {}, batch {}, {} rank{}", config.network, strategy_label(config.strategy),
                     grid.links.at(config.link).label(), config.strategy.global_batch, config.strategy.ranks,
                     config.strategy.ranks == 1 ? "" : "s");
}

std::string config_key(const ValidationGrid& grid, const ValidationConfig& config) {
  std::string strategy = strategy_label(config.strategy);
  strategy.erase(std::remove(strategy.begin(), strategy.end(), '='), strategy.end());
  return fmt::format("{}_{}_{}_b{}_p{}", safe_for_file_name(std::filesystem::path(config.network).stem().string()),
                     safe_for_file_name(strategy), grid.links.at(config.link).key(), config.strategy.global_batch,
                     config.strategy.ranks);
}

std::string config_settings(const ValidationGrid& grid, const ValidationConfig& config) {
  const std::string measured_time =
      grid.measure_seconds > 0 ? fmt::format(", at least {:g} s measured", grid.measure_seconds) : "";
  return fmt::format("{} iterations ({} warm-up){}, {} compute, {} progress, {} collectives, platform {}",
                     config.strategy.iterations, config.strategy.warmup_iterations, measured_time, config.compute,
                     grid.comm_progress, grid.collectives, grid.platform);
}

int run_iterations(const ValidationGrid& grid, double predicted_iteration_s) {
  if (grid.measure_seconds <= 0 || !(predicted_iteration_s > 0)) return grid.iterations;
  const double needed = grid.warmup + std::ceil(grid.measure_seconds / predicted_iteration_s);
  return int(std::clamp(needed, double(grid.iterations), double(kMaxValidationIterations)));
}

FidelityMetrics fidelity_metrics(const TraceMetrics& metrics) {
  FidelityMetrics f;
  f.iteration_s = metrics.iteration_s;
  f.compute_s = metrics.compute_max_s;
  f.comm_s = metrics.comm_s;
  f.exposed_comm_s = metrics.exposed_comm_s;
  f.overlap_ratio_percent = metrics.overlap_ratio_percent;
  f.iteration_q25_s = quantile(metrics.iteration_times_s, 0.25);
  f.iteration_q75_s = quantile(metrics.iteration_times_s, 0.75);
  f.measured_iterations = int(metrics.iteration_times_s.size());
  return f;
}

const char* to_string(MissCause cause) {
  switch (cause) {
    case MissCause::none: return "none";
    case MissCause::compute: return "compute";
    case MissCause::effective_bandwidth: return "effective bandwidth";
    case MissCause::latency: return "latency";
    case MissCause::progress: return "progress";
    case MissCause::tcp_behaviour: return "TCP behaviour";
    case MissCause::contention: return "contention";
  }
  return "none";
}

namespace {

MissCause miss_cause_from_string(const JsonNode& node) {
  const std::string text = node.as_string();
  for (MissCause cause : kCauses)
    if (text == to_string(cause)) return cause;
  node.fail("not a cause of a miss");
}

/** Seconds of [begin, end] covered by the union of `spans` (sorted by start). */
double covered_s(double begin, double end, const std::vector<std::pair<double, double>>& spans) {
  double covered = 0, reach = begin;
  for (const auto& [start, stop] : spans) {
    if (stop <= reach) continue;
    if (start >= end) break;
    const double from = std::max(start, reach), to = std::min(stop, end);
    if (to > from) covered += to - from;
    reach = std::max(reach, to);
  }
  return covered;
}

/** The measured iterations' window [first mark before, last mark] of a rank. */
std::pair<double, double> measured_window(const RankTrace& rank, int warmup) {
  double begin = 0, end = 0;
  for (const MarkRecord& mark : rank.marks) {
    if (mark.iteration == warmup - 1) begin = mark.time_s;
    end = std::max(end, mark.time_s);
  }
  return {begin, end};
}

/** Bytes one step of a collective moves, roughly: ring-like allreduce and reduce_scatter move
 *  a P-th of the vector per step; the other kinds move their contribution. For sorting
 *  collectives into latency-, TCP- and bandwidth-bound sizes only. */
double step_bytes(const CollectiveRecord& record, int ranks) {
  const bool split = record.kind == CollectiveKind::allreduce || record.kind == CollectiveKind::reduce_scatter;
  return split ? record.bytes / std::max(1, ranks) : record.bytes;
}

/** When the last member of each collective started it (its communication engine began), by id. */
std::map<int, double> last_starts(const Trace& trace) {
  std::map<int, double> latest;
  for (const RankTrace& rank : trace.ranks)
    for (const CollectiveRecord& c : rank.collectives) {
      const auto [it, inserted] = latest.try_emplace(c.collective, c.comm_start_s);
      if (!inserted) it->second = std::max(it->second, c.comm_start_s);
    }
  return latest;
}

struct Deviation {
  double predicted_s = 0;
  double measured_s = 0;
  int count = 0;
  double bytes = 0;  ///< step bytes, summed
  double error_s() const { return predicted_s - measured_s; }
  double relative() const { return measured_s > 0 ? predicted_s / measured_s - 1 : 0; }
};

/** In-flight spans [comm_start, comm_end] of the collectives of rank `only_rank` (-1: of every
 *  rank), sorted by start. */
std::vector<std::pair<double, double>> comm_spans(const Trace& trace, int only_rank) {
  std::vector<std::pair<double, double>> spans;
  for (std::size_t r = 0; r < trace.ranks.size(); ++r)
    if (only_rank < 0 || int(r) == only_rank)
      for (const CollectiveRecord& c : trace.ranks[r].collectives) spans.emplace_back(c.comm_start_s, c.comm_end_s);
  std::sort(spans.begin(), spans.end());
  return spans;
}

/** Adds the compute ops of `m`'s measured iterations (only GEMMs when `gemm_only`), against the
 *  same ops of `p`, to `overlapped` when `busy` spans cover more than kOverlapFraction of them,
 *  else to `alone`. */
void split_ops(const RankTrace& m, const RankTrace& p, int warmup, const std::vector<std::pair<double, double>>& busy,
               bool gemm_only, Deviation& alone, Deviation& overlapped) {
  const auto [begin, end] = measured_window(m, warmup);
  std::map<int, const ComputeRecord*> predicted_ops;
  for (const ComputeRecord& op : p.compute) predicted_ops[op.op] = &op;
  for (const ComputeRecord& op : m.compute) {
    if (op.start_s < begin || op.start_s >= end || (gemm_only && op.kernel != KernelClass::gemm)) continue;
    const auto found = predicted_ops.find(op.op);
    if (found == predicted_ops.end()) continue;
    const double duration = op.end_s - op.start_s;
    Deviation& d = covered_s(op.start_s, op.end_s, busy) > kOverlapFraction * duration ? overlapped : alone;
    d.measured_s += duration;
    d.predicted_s += found->second->end_s - found->second->start_s;
    ++d.count;
  }
}

std::string percent(double relative) { return fmt::format("{:+.1f} %", 100 * relative); }
std::string ms(double seconds) { return fmt::format("{:.2f} ms", 1e3 * seconds); }

}  // namespace

Diagnosis diagnose(const Trace& predicted, const TraceMetrics& pm, const Trace& measured, const TraceMetrics& mm,
                   double tolerance_percent) {
  Diagnosis out;
  if (!(mm.iteration_s > 0)) return out;
  const double error = pm.iteration_s / mm.iteration_s - 1;
  if (std::abs(100 * error) <= tolerance_percent) {
    out.explanation = fmt::format("iteration {} of the measured, within {:g} %", percent(error), tolerance_percent);
    return out;
  }
  const double compute_error_s = pm.compute_max_s - mm.compute_max_s;
  const double exposed_error_s = pm.exposed_comm_s - mm.exposed_comm_s;
  const double iteration_error_s = pm.iteration_s - mm.iteration_s;
  const double other_error_s = iteration_error_s - compute_error_s - exposed_error_s;
  const int ranks = int(measured.ranks.size());
  const int warmup = measured.warmup_iterations;
  const std::string head = fmt::format("iteration {} ({} predicted, {} measured)", percent(error), ms(pm.iteration_s),
                                       ms(mm.iteration_s));

  // Waits beyond compute and exposed communication: ranks that drift apart.
  if (std::abs(other_error_s) > std::max(std::abs(compute_error_s), std::abs(exposed_error_s))) {
    out.cause = MissCause::contention;
    out.explanation = fmt::format(
        "{}: {} of it is neither compute ({}) nor exposed communication ({}) but ranks waiting for each other, "
        "as ranks that share the machine's cores drift apart",
        head, ms(other_error_s), ms(compute_error_s), ms(exposed_error_s));
    return out;
  }

  if (std::abs(compute_error_s) >= std::abs(exposed_error_s)) {
    // Compute: ops alone against ops that ran while the rank's communication progressed.
    Deviation alone, overlapped;
    for (std::size_t r = 0; r < measured.ranks.size() && r < predicted.ranks.size(); ++r)
      split_ops(measured.ranks[r], predicted.ranks[r], warmup, comm_spans(measured, int(r)), false, alone, overlapped);
    const bool progress = std::abs(overlapped.error_s()) > std::abs(alone.error_s());
    out.cause = progress ? MissCause::progress : MissCause::compute;
    out.explanation = fmt::format(
        "{}: compute {} per iteration (predicted {}, measured {}); ops that ran while communication progressed "
        "{} ({} ops), ops alone {} ({} ops){}",
        head, ms(compute_error_s), ms(pm.compute_max_s), ms(mm.compute_max_s), percent(overlapped.relative()),
        overlapped.count, percent(alone.relative()), alone.count,
        progress ? ": the cost of communication to compute (comm_compute_slowdown) is off" : "");
    return out;
  }

  // Communication: every collective of the measured iterations, predicted against measured. A
  // collective's T_c on a rank includes waiting for its last member to start it (rank skew);
  // its transfer is timed from that start, in both traces (their clocks are common to the ranks).
  const std::map<int, double> measured_last_start = last_starts(measured);
  const std::map<int, double> predicted_last_start = last_starts(predicted);
  Deviation during_compute, idle;
  Deviation small, middle, large;
  Deviation skew;  ///< waiting for the last member to start: its start − the rank's own
  for (std::size_t r = 0; r < measured.ranks.size() && r < predicted.ranks.size(); ++r) {
    const RankTrace& m = measured.ranks[r];
    const RankTrace& p = predicted.ranks[r];
    const auto [begin, end] = measured_window(m, warmup);
    std::vector<std::pair<double, double>> busy;
    for (const ComputeRecord& op : m.compute) busy.emplace_back(op.start_s, op.end_s);
    std::sort(busy.begin(), busy.end());
    std::map<int, const CollectiveRecord*> predicted_collectives;
    for (const CollectiveRecord& c : p.collectives) predicted_collectives[c.collective] = &c;
    for (const CollectiveRecord& c : m.collectives) {
      if (c.wait_start_s < begin || c.wait_start_s >= end) continue;
      const auto found = predicted_collectives.find(c.collective);
      if (found == predicted_collectives.end()) continue;
      const double measured_s = std::max(0.0, c.comm_end_s - measured_last_start.at(c.collective));
      const double predicted_s =
          std::max(0.0, found->second->comm_end_s - predicted_last_start.at(found->second->collective));
      skew.measured_s += measured_last_start.at(c.collective) - c.comm_start_s;
      skew.predicted_s += predicted_last_start.at(c.collective) - found->second->comm_start_s;
      ++skew.count;
      const bool with_compute = covered_s(c.comm_start_s, c.comm_end_s, busy) > kOverlapFraction * measured_s;
      Deviation& d = with_compute ? during_compute : idle;
      d.measured_s += measured_s;
      d.predicted_s += predicted_s;
      ++d.count;
      if (with_compute) continue;  // sizes are judged on collectives that had the link to themselves
      const double bytes = step_bytes(c, ranks);
      Deviation& by_size = bytes < kLatencyBoundBytes ? small : bytes < kBandwidthBoundBytes ? middle : large;
      by_size.measured_s += measured_s;
      by_size.predicted_s += predicted_s;
      by_size.bytes += bytes;
      ++by_size.count;
    }
  }
  const std::string comm_head =
      fmt::format("{}: exposed communication {} per iteration (predicted {}, measured {})", head, ms(exposed_error_s),
                  ms(pm.exposed_comm_s), ms(mm.exposed_comm_s));
  if (during_compute.count > 0 && std::abs(during_compute.relative()) > 2 * std::abs(idle.relative()) &&
      std::abs(100 * during_compute.relative()) > tolerance_percent) {
    out.cause = MissCause::progress;
    out.explanation = fmt::format(
        "{}; collectives that ran during compute are predicted {} of their measured transfer time ({} of them), those "
        "alone {} ({}): posted collectives do not progress as the model assumes",
        comm_head, percent(during_compute.relative()), during_compute.count, percent(idle.relative()), idle.count);
    return out;
  }
  const Deviation* worst = &large;
  for (const Deviation* d : {&small, &middle})
    if (std::abs(d->error_s()) > std::abs(worst->error_s())) worst = d;
  if (std::abs(skew.error_s()) > std::abs(worst->error_s())) {
    out.cause = MissCause::contention;
    out.explanation = fmt::format(
        "{}; ranks waited {} for the last member to start their collectives, {} predicted (summed over ranks and "
        "measured iterations), while the transfers themselves are predicted {}: ranks that share the machine drift apart",
        comm_head, ms(skew.measured_s), ms(skew.predicted_s),
        percent((small.predicted_s + middle.predicted_s + large.predicted_s) /
                    std::max(1e-300, small.measured_s + middle.measured_s + large.measured_s) - 1));
    return out;
  }
  out.cause = worst == &large ? MissCause::effective_bandwidth : worst == &small ? MissCause::latency : MissCause::tcp_behaviour;
  out.explanation = fmt::format(
      "{}; collectives alone, predicted against measured transfer time (from the last member's start): steps < 64 KiB "
      "{} ({}), 64 KiB - 1 MiB {} ({}), >= 1 MiB {} ({})",
      comm_head, percent(small.relative()), small.count, percent(middle.relative()), middle.count,
      percent(large.relative()), large.count);
  if (ranks > 2 && worst == &large && idle.count > 0)
    out.explanation += "; with more than two ranks the nodes' traffic also shares the machine";
  return out;
}

std::optional<ComputeSpeedCheck> compute_speed_check(const Trace& predicted, const Trace& measured) {
  const std::vector<std::pair<double, double>> every_rank = comm_spans(measured, -1);
  Deviation alone, overlapped;
  for (std::size_t r = 0; r < measured.ranks.size() && r < predicted.ranks.size(); ++r)
    split_ops(measured.ranks[r], predicted.ranks[r], measured.warmup_iterations, every_rank, true, alone, overlapped);
  const double predicted_s = alone.predicted_s + overlapped.predicted_s;
  if (!(alone.predicted_s > 0) || alone.predicted_s < kMinUndisturbedShare * predicted_s) return std::nullopt;
  return ComputeSpeedCheck{alone.measured_s / alone.predicted_s, alone.count, alone.predicted_s / predicted_s};
}

double ConfigResult::error_percent(const std::string& engine) const {
  const auto found = predicted.find(engine);
  if (found == predicted.end() || !(measured.iteration_s > 0)) return 0;
  return 100 * (found->second.iteration_s / measured.iteration_s - 1);
}

namespace {

nlohmann::json to_json(const FidelityMetrics& f) {
  return {{"iteration_s", f.iteration_s},
          {"compute_s", f.compute_s},
          {"comm_s", f.comm_s},
          {"exposed_comm_s", f.exposed_comm_s},
          {"overlap_ratio_percent", f.overlap_ratio_percent},
          {"iteration_q25_s", f.iteration_q25_s},
          {"iteration_q75_s", f.iteration_q75_s},
          {"measured_iterations", f.measured_iterations}};
}

FidelityMetrics fidelity_from_json(const JsonNode& node) {
  node.check_keys({"iteration_s", "compute_s", "comm_s", "exposed_comm_s", "overlap_ratio_percent", "iteration_q25_s",
                   "iteration_q75_s", "measured_iterations"});
  FidelityMetrics f;
  f.iteration_s = node.at("iteration_s").as_nonnegative_number();
  f.compute_s = node.at("compute_s").as_nonnegative_number();
  f.comm_s = node.at("comm_s").as_nonnegative_number();
  f.exposed_comm_s = node.at("exposed_comm_s").as_nonnegative_number();
  f.overlap_ratio_percent = node.at("overlap_ratio_percent").as_number();  // clock jitter can take it past 0 or 100
  f.iteration_q25_s = node.at("iteration_q25_s").as_nonnegative_number();
  f.iteration_q75_s = node.at("iteration_q75_s").as_nonnegative_number();
  f.measured_iterations = int(node.at("measured_iterations").as_int_in(0, limits::kMaxIterations));
  return f;
}

}  // namespace

nlohmann::json to_json(const ConfigResult& r) {
  nlohmann::json predicted = nlohmann::json::object(), diagnosis = nlohmann::json::object(),
                 errors = nlohmann::json::object();
  for (const auto& [engine, metrics] : r.predicted) {
    predicted[engine] = to_json(metrics);
    errors[engine] = r.error_percent(engine);
  }
  for (const auto& [engine, d] : r.diagnosis) diagnosis[engine] = {{"cause", to_string(d.cause)}, {"explanation", d.explanation}};
  return {{"format", "cnnpar-validation-result"},
          {"key", r.key},
          {"label", r.label},
          {"network", r.network},
          {"strategy", r.strategy},
          {"link", r.link},
          {"batch", r.batch},
          {"ranks", r.ranks},
          {"compute", r.compute},
          {"settings", r.settings},
          {"platform", r.platform},
          {"load_average", r.load_average},
          {"compute_speed_ratio", r.compute_speed_ratio},
          {"attempt_compute_speed_ratios", r.attempt_compute_speed_ratios},
          {"compute_recalibrated", r.compute_recalibrated},
          {"measured", to_json(r.measured)},
          {"predicted", predicted},
          {"error_percent", errors},
          {"diagnosis", diagnosis}};
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

ConfigResult config_result_from_json(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  if (!document.is_object()) root.fail("a validation result is a JSON object");
  root.check_keys({"format", "key", "label", "network", "strategy", "link", "batch", "ranks", "compute", "settings",
                   "platform", "load_average", "compute_speed_ratio", "attempt_compute_speed_ratios", "compute_recalibrated",
                   "measured", "predicted", "error_percent", "diagnosis"});
  if (root.at("format").as_string() != "cnnpar-validation-result") root.at("format").fail("not a validation result");
  ConfigResult r;
  r.key = root.at("key").as_string();
  r.label = root.at("label").as_string();
  r.network = root.at("network").as_string();
  r.strategy = root.at("strategy").as_string();
  r.link = root.at("link").as_string();
  r.batch = root.at("batch").as_int_in(1, limits::kMaxBatch);
  r.ranks = int(root.at("ranks").as_int_in(1, limits::kMaxRanks));
  r.compute = root.at("compute").as_string();
  r.settings = root.at("settings").as_string();
  r.platform = root.at("platform").as_string();
  r.load_average = root.at("load_average").as_number();
  // Results written before the compute speed check have neither (-1 and none: not checked).
  if (root.has("compute_speed_ratio")) r.compute_speed_ratio = root.at("compute_speed_ratio").as_number();
  if (root.has("attempt_compute_speed_ratios"))
    for (const JsonNode& ratio : root.at("attempt_compute_speed_ratios").items())
      r.attempt_compute_speed_ratios.push_back(ratio.as_number());
  if (root.has("compute_recalibrated")) r.compute_recalibrated = root.at("compute_recalibrated").as_bool();
  r.measured = fidelity_from_json(root.at("measured"));
  const JsonNode predicted = root.at("predicted");
  for (const std::string& engine : predicted.keys()) r.predicted[engine] = fidelity_from_json(predicted.at(engine));
  const JsonNode diagnosis = root.at("diagnosis");
  for (const std::string& engine : diagnosis.keys()) {
    const JsonNode d = diagnosis.at(engine);
    d.check_keys({"cause", "explanation"});
    r.diagnosis[engine] = Diagnosis{miss_cause_from_string(d.at("cause")), d.at("explanation").as_string()};
  }
  return r;
}

namespace {

std::string group_label(const ConfigResult& r) {
  return fmt::format("{}, {}, batch {}, {} rank{}", r.network, r.link, r.batch, r.ranks, r.ranks == 1 ? "" : "s");
}

/** The strategies of a group ordered by iteration time, fastest first (ties by name). */
std::vector<std::string> order_by(const std::vector<const ConfigResult*>& group,
                                  const std::function<double(const ConfigResult&)>& iteration_s) {
  std::vector<const ConfigResult*> sorted = group;
  std::stable_sort(sorted.begin(), sorted.end(), [&](const ConfigResult* a, const ConfigResult* b) {
    return iteration_s(*a) < iteration_s(*b);
  });
  std::vector<std::string> out;
  for (const ConfigResult* r : sorted) out.push_back(r->strategy);
  return out;
}

RankingGroup rank_group(const std::vector<const ConfigResult*>& group, const std::vector<std::string>& engines) {
  RankingGroup g;
  g.label = group_label(*group.front());
  g.measured_order = order_by(group, [](const ConfigResult& r) { return r.measured.iteration_s; });
  for (const std::string& engine : engines) {
    g.predicted_order[engine] = order_by(group, [&](const ConfigResult& r) { return r.predicted.at(engine).iteration_s; });
    g.agreeing_pairs[engine] = 0;
  }
  for (std::size_t i = 0; i < group.size(); ++i)
    for (std::size_t j = i + 1; j < group.size(); ++j) {
      const ConfigResult& a = *group[i];
      const ConfigResult& b = *group[j];
      // Decided: the measured interquartile ranges do not overlap.
      const bool a_faster = a.measured.iteration_q75_s < b.measured.iteration_q25_s;
      const bool b_faster = b.measured.iteration_q75_s < a.measured.iteration_q25_s;
      if (!a_faster && !b_faster) continue;
      ++g.decided_pairs;
      for (const std::string& engine : engines) {
        const double pa = a.predicted.at(engine).iteration_s, pb = b.predicted.at(engine).iteration_s;
        if ((a_faster && pa < pb) || (b_faster && pb < pa)) ++g.agreeing_pairs[engine];
      }
    }
  for (const std::string& engine : engines) g.agrees[engine] = g.agreeing_pairs[engine] == g.decided_pairs;
  return g;
}

}  // namespace

ValidationReport summarize_validation(const ValidationGrid& grid, std::vector<ConfigResult> results) {
  ValidationReport report;
  report.grid_name = grid.name;
  report.grid_file = grid.file;
  report.description = grid.description;
  report.iteration_tolerance_percent = grid.iteration_tolerance_percent;
  report.overlap_tolerance_points = grid.overlap_tolerance_points;
  report.compute_speed_tolerance_percent = grid.compute_speed_tolerance_percent;
  report.run_attempts = grid.run_attempts;
  report.recalibrate_compute = grid.recalibrate_compute;
  report.configurations = int(validation_configs(grid).size());
  report.results = std::move(results);

  std::vector<std::string> engines;
  for (const char* engine : kEngines) {
    const bool everywhere = !report.results.empty() &&
                            std::all_of(report.results.begin(), report.results.end(),
                                        [&](const ConfigResult& r) { return r.predicted.count(engine) > 0; });
    if (everywhere) engines.push_back(engine);
  }
  for (const std::string& engine : engines) {
    EngineSummary& s = report.engines[engine];
    for (MissCause cause : kCauses) s.causes[to_string(cause)] = 0;  // every cause, so readers find each key
    double absolute_sum = 0, overlap_sum = 0;
    for (const ConfigResult& r : report.results) {
      const double error = std::abs(r.error_percent(engine));
      absolute_sum += error;
      s.max_abs_error_percent = std::max(s.max_abs_error_percent, error);
      if (error <= grid.iteration_tolerance_percent) ++s.within_tolerance;
      overlap_sum += std::abs(r.predicted.at(engine).overlap_ratio_percent - r.measured.overlap_ratio_percent);
      const auto d = r.diagnosis.find(engine);
      ++s.causes[to_string(d == r.diagnosis.end() ? MissCause::none : d->second.cause)];
    }
    s.mape_percent = absolute_sum / double(report.results.size());
    s.r_mae_points = overlap_sum / double(report.results.size());
  }

  // MAPE by one dimension of the grid.
  const std::vector<std::pair<std::string, std::function<std::string(const ConfigResult&)>>> dimensions = {
      {"network", [](const ConfigResult& r) { return r.network; }},
      {"strategy", [](const ConfigResult& r) { return r.strategy; }},
      {"link", [](const ConfigResult& r) { return r.link; }},
      {"batch", [](const ConfigResult& r) { return std::to_string(r.batch); }},
      {"ranks", [](const ConfigResult& r) { return std::to_string(r.ranks); }}};
  for (const auto& [dimension, value_of] : dimensions)
    for (const std::string& engine : engines) {
      std::map<std::string, std::pair<double, int>> sums;
      for (const ConfigResult& r : report.results) {
        auto& [sum, count] = sums[value_of(r)];
        sum += std::abs(r.error_percent(engine));
        ++count;
      }
      for (const auto& [value, sum_count] : sums)
        report.mape_by[dimension][value][engine] = sum_count.first / double(sum_count.second);
    }

  // Rankings: configurations that differ only in strategy.
  std::map<std::string, std::vector<const ConfigResult*>> groups;
  std::vector<std::string> group_order;
  for (const ConfigResult& r : report.results) {
    const std::string label = group_label(r);
    if (groups.count(label) == 0) group_order.push_back(label);
    groups[label].push_back(&r);
  }
  for (const std::string& label : group_order) {
    if (groups[label].size() < 2 || engines.empty()) continue;
    report.rankings.push_back(rank_group(groups[label], engines));
    for (const std::string& engine : engines)
      if (report.rankings.back().agrees[engine]) ++report.engines[engine].ranking_groups_agreeing;
  }
  return report;
}

bool compute_speed_off(double ratio, double tolerance_percent) {
  return ratio >= 0 && 100 * std::abs(ratio - 1) > tolerance_percent;
}

namespace {

/** Runs measured again because the machine computed off its calibrated speed, and the
 *  configurations whose kept run is still off (by key). */
nlohmann::json compute_speed_summary(const ValidationReport& report) {
  int remeasured = 0, recalibrated = 0;
  nlohmann::json still_off = nlohmann::json::array();
  for (const ConfigResult& r : report.results) {
    if (r.attempt_compute_speed_ratios.size() > 1) ++remeasured;
    if (r.compute_recalibrated) ++recalibrated;
    if (compute_speed_off(r.compute_speed_ratio, report.compute_speed_tolerance_percent)) still_off.push_back(r.key);
  }
  return {{"remeasured", remeasured}, {"recalibrated", recalibrated}, {"still_off", still_off}};
}

}  // namespace

nlohmann::json to_json(const ValidationReport& report) {
  nlohmann::json mape = nlohmann::json::object(), r_mae = nlohmann::json::object(), engines = nlohmann::json::object();
  for (const auto& [engine, s] : report.engines) {
    mape[engine] = s.mape_percent;
    r_mae[engine] = s.r_mae_points;
    engines[engine] = {{"mape_percent", s.mape_percent},
                       {"max_abs_error_percent", s.max_abs_error_percent},
                       {"r_mae_points", s.r_mae_points},
                       {"within_tolerance", s.within_tolerance},
                       {"ranking_groups_agreeing", s.ranking_groups_agreeing},
                       {"causes", s.causes}};
  }
  nlohmann::json rankings = nlohmann::json::array();
  for (const RankingGroup& g : report.rankings)
    rankings.push_back({{"group", g.label},
                        {"measured_order", g.measured_order},
                        {"predicted_order", g.predicted_order},
                        {"decided_pairs", g.decided_pairs},
                        {"agreeing_pairs", g.agreeing_pairs},
                        {"agrees", g.agrees}});
  nlohmann::json results = nlohmann::json::array();
  for (const ConfigResult& r : report.results) results.push_back(to_json(r));
  return {{"format", "cnnpar-validation-report"},
          {"grid", report.grid_name},
          {"grid_file", report.grid_file},
          {"description", report.description},
          {"configurations", report.configurations},
          {"finished", report.results.size()},
          {"tolerance", {{"iteration_percent", report.iteration_tolerance_percent},
                         {"overlap_points", report.overlap_tolerance_points},
                         {"compute_speed_percent", report.compute_speed_tolerance_percent}}},
          {"run_attempts", report.run_attempts},
          {"recalibrate_compute", report.recalibrate_compute},
          {"compute_speed_check", compute_speed_summary(report)},
          {"mape_percent", mape},
          {"r_mae_points", r_mae},
          {"engines", engines},
          {"mape_percent_by", report.mape_by},
          {"ranking_groups", report.rankings.size()},
          {"rankings", rankings},
          {"environment", report.environment},
          {"fit", report.fit.is_null() ? nlohmann::json::object() : report.fit},
          {"results", results}};
}

namespace {

std::string yes_no(bool value) { return value ? "yes" : "no"; }

std::string join(const std::vector<std::string>& items, const char* separator) {
  return fmt::format("{}", fmt::join(items, separator));
}

}  // namespace

std::string validation_markdown(const ValidationReport& report) {
  std::string md = fmt::format("# Validation: {}\n\n", report.grid_name);
  if (!report.description.empty()) md += report.description + "\n\n";
  md += fmt::format("Grid `{}`: {} of {} configurations measured. Each was predicted by the analytic and the SimGrid "
                    "engines from a calibrated platform and measured with `cnnpar-run`; errors are predicted against "
                    "measured median iteration time (docs/design.md, \"Validation\").\n\n",
                    report.grid_file, report.results.size(), report.configurations);
  md += "## Summary\n\n";
  md += fmt::format("| engine | MAPE | max error | within {:g} % | R mean abs. error | rankings as measured |\n",
                    report.iteration_tolerance_percent);
  md += "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [engine, s] : report.engines)
    md += fmt::format("| {} | {:.1f} % | {:.1f} % | {} of {} | {:.1f} points | {} of {} |\n", engine, s.mape_percent,
                      s.max_abs_error_percent, s.within_tolerance, report.results.size(), s.r_mae_points,
                      s.ranking_groups_agreeing, report.rankings.size());
  md += fmt::format("\nAcceptance: MAPE <= {:g} % per engine, R within {:g} points, every ranking as measured.\n\n",
                    report.iteration_tolerance_percent, report.overlap_tolerance_points);
  const nlohmann::json speed = compute_speed_summary(report);
  md += fmt::format(
      "Compute speed check: a real-compute run whose GEMMs that overlapped no communication took more than {:g} % "
      "more or less than their calibrated time was measured again{}, at most {} runs per configuration, keeping the "
      "run nearest the calibration (docs/design.md, \"Validation\"). {} configuration{} measured again ({} after "
      "calibrating compute again); {} still off{}.\n\n",
      report.compute_speed_tolerance_percent,
      report.recalibrate_compute ? "; when it was a configuration's first run, compute was first calibrated again and "
                                   "the configuration predicted again, and that run was not kept"
                                 : "",
      report.run_attempts, speed["remeasured"].get<int>(), speed["remeasured"].get<int>() == 1 ? " was" : "s were",
      speed["recalibrated"].get<int>(), speed["still_off"].size(),
      speed["still_off"].empty() ? "" : ": " + join(speed["still_off"].get<std::vector<std::string>>(), ", "));

  if (!report.mape_by.empty()) {
    md += "## Where the error is\n\nMAPE of iteration time by one dimension of the grid:\n\n";
    for (const auto& [dimension, values] : report.mape_by) {
      md += fmt::format("| {} |", dimension);
      for (const auto& [engine, s] : report.engines) md += fmt::format(" {} |", engine);
      md += "\n|---|";
      for (std::size_t i = 0; i < report.engines.size(); ++i) md += "---:|";
      md += "\n";
      for (const auto& [value, by_engine] : values) {
        md += fmt::format("| {} |", value);
        for (const auto& [engine, s] : report.engines) {
          const auto found = by_engine.find(engine);
          md += found == by_engine.end() ? " |" : fmt::format(" {:.1f} % |", found->second);
        }
        md += "\n";
      }
      md += "\n";
    }
  }

  md += "## Misses and their causes\n\n";
  bool any_miss = false;
  for (const ConfigResult& r : report.results)
    for (const auto& [engine, d] : r.diagnosis) {
      if (d.cause == MissCause::none) continue;
      any_miss = true;
      md += fmt::format("- **{}** ({}): {}. {}.\n", r.label, engine, to_string(d.cause), d.explanation);
    }
  if (!any_miss) md += fmt::format("None: every configuration is within {:g} %.\n", report.iteration_tolerance_percent);
  md += "\n";

  if (!report.rankings.empty()) {
    md += "## Strategy rankings\n\nFastest first. A pair counts when the measured interquartile ranges of the two "
          "strategies' iteration times do not overlap.\n\n";
    md += "| group | measured |";
    for (const auto& [engine, s] : report.engines) md += fmt::format(" {} |", engine);
    md += " decided pairs |";
    for (const auto& [engine, s] : report.engines) md += fmt::format(" {} agrees |", engine);
    md += "\n|---|---|";
    for (std::size_t i = 0; i < 2 * report.engines.size() + 1; ++i) md += "---|";
    md += "\n";
    for (const RankingGroup& g : report.rankings) {
      md += fmt::format("| {} | {} |", g.label, join(g.measured_order, " < "));
      for (const auto& [engine, s] : report.engines) md += fmt::format(" {} |", join(g.predicted_order.at(engine), " < "));
      md += fmt::format(" {} |", g.decided_pairs);
      for (const auto& [engine, s] : report.engines)
        md += fmt::format(" {} ({}/{}) |", yes_no(g.agrees.at(engine)), g.agreeing_pairs.at(engine), g.decided_pairs);
      md += "\n";
    }
    md += "\n";
  }

  md += report.fit_markdown;
  md += "## Every configuration\n\nIteration times in ms (measured: median [interquartile range] over the measured "
        "iterations); T_c, T_b and R of the measured run, then of each engine.\n\n";
  md += "| configuration | compute | load | compute speed (runs) | measured | ";
  for (const auto& [engine, s] : report.engines) md += fmt::format("{} | error | ", engine);
  md += "T_c meas | T_b meas | R meas |";
  for (const auto& [engine, s] : report.engines) md += fmt::format(" R {} |", engine);
  md += "\n|---|---|---:|---:|---:|";
  for (std::size_t i = 0; i < report.engines.size(); ++i) md += "---:|---:|";
  md += "---:|---:|---:|";
  for (std::size_t i = 0; i < report.engines.size(); ++i) md += "---:|";
  md += "\n";
  for (const ConfigResult& r : report.results) {
    md += fmt::format("| {} | {} | {} | {} | {:.2f} [{:.2f}, {:.2f}] |", r.label, r.compute,
                      r.load_average < 0 ? std::string("?") : fmt::format("{:.1f}", r.load_average),
                      r.compute_speed_ratio < 0 ? std::string("-")
                                                : fmt::format("{:.2f} ({}{})", r.compute_speed_ratio,
                                                              r.attempt_compute_speed_ratios.size(),
                                                              r.compute_recalibrated ? ", recalibrated" : ""),
                      1e3 * r.measured.iteration_s, 1e3 * r.measured.iteration_q25_s, 1e3 * r.measured.iteration_q75_s);
    for (const auto& [engine, s] : report.engines)
      md += fmt::format(" {:.2f} | {:+.1f} % |", 1e3 * r.predicted.at(engine).iteration_s, r.error_percent(engine));
    md += fmt::format(" {:.2f} | {:.2f} | {:.1f} |", 1e3 * r.measured.comm_s, 1e3 * r.measured.exposed_comm_s,
                      r.measured.overlap_ratio_percent);
    for (const auto& [engine, s] : report.engines) md += fmt::format(" {:.1f} |", r.predicted.at(engine).overlap_ratio_percent);
    md += "\n";
  }
  if (!report.environment.empty()) md += "\n## Environment\n\n```json\n" + report.environment.dump(2) + "\n```\n";
  return md;
}

std::string validation_csv(const ValidationReport& report) {
  std::string csv =
      "key,network,strategy,link,batch,ranks,compute,engine,measured_iteration_s,predicted_iteration_s,error_percent,"
      "measured_compute_s,predicted_compute_s,measured_comm_s,predicted_comm_s,measured_exposed_comm_s,"
      "predicted_exposed_comm_s,measured_overlap_ratio_percent,predicted_overlap_ratio_percent,cause,"
      "compute_speed_ratio,runs,compute_recalibrated\n";
  for (const ConfigResult& r : report.results)
    for (const auto& [engine, p] : r.predicted) {
      const auto d = r.diagnosis.find(engine);
      csv += fmt::format("{},{},{},{},{},{},{},{},{:.9g},{:.9g},{:.4f},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.4f},{:.4f},{},{:.4f},{},{}\n",
                         csv_field(r.key), csv_field(r.network), csv_field(r.strategy), csv_field(r.link), r.batch,
                         r.ranks, r.compute, engine, r.measured.iteration_s, p.iteration_s, r.error_percent(engine),
                         r.measured.compute_s, p.compute_s, r.measured.comm_s, p.comm_s, r.measured.exposed_comm_s,
                         p.exposed_comm_s, r.measured.overlap_ratio_percent, p.overlap_ratio_percent,
                         csv_field(to_string(d == r.diagnosis.end() ? MissCause::none : d->second.cause)),
                         r.compute_speed_ratio, r.attempt_compute_speed_ratios.size(),
                         r.compute_recalibrated ? "true" : "false");
    }
  return csv;
}

}  // namespace cnnpar
