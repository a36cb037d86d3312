#include "workload/strategy.hpp"

#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/limits.hpp"
#include "workload/conv_choice.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

nlohmann::json to_json(const StrategyOptions& options) {
  nlohmann::json j = {{"strategy", options.name},
                      {"batch", options.global_batch},
                      {"ranks", options.ranks},
                      {"iterations", options.iterations},
                      {"warmup", options.warmup_iterations}};
  for (const OptionSpec& o : strategy_spec(options.name, options.origin).options) j[o.key] = options.value(o.key);
  if (options.uneven_batch) j["uneven_batch"] = true;
  if (options.recompute_columns) j["columns"] = columns_name(true);
  if (nlohmann::json conv = options.conv.json(); !conv.is_null()) j["conv"] = std::move(conv);
  return j;
}

StrategyOptions strategy_options_from_json(const nlohmann::json& json, const std::string& origin) {
  const auto at = [&](const char* key) -> const nlohmann::json& {
    if (!json.is_object() || !json.contains(key))
      throw InputError(origin, fmt::format("/{}", key), "(missing)", "the strategy options lack this key");
    return json.at(key);
  };
  StrategyOptions options;
  options.origin = origin;
  options.name = at("strategy").get<std::string>();
  options.global_batch = at("batch").get<std::int64_t>();
  options.ranks = at("ranks").get<int>();
  options.iterations = at("iterations").get<int>();
  options.warmup_iterations = at("warmup").get<int>();
  options.uneven_batch = json.value("uneven_batch", false);
  options.recompute_columns = json.value("columns", "") == columns_name(true);
  if (json.contains("conv") && !json.at("conv").is_null()) options.conv = conv_paths_from_json(json.at("conv"), origin, "/conv");
  for (const OptionSpec& o : strategy_spec(options.name, origin).options)
    if (json.contains(o.key)) options.values[o.key] = json.at(o.key);
  return options;
}

void validate_strategy_options(const Network& network, const StrategyOptions& options) {
  const std::string& origin = options.origin;
  const auto fail = [&](const char* path, const std::string& value, const std::string& reason) {
    throw InputError(origin, path, value, reason);
  };
  const StrategySpec& spec = strategy_spec(options.name, origin);
  validate_conv_paths(options.conv, network, origin);
  if (options.ranks < 1 || options.ranks > limits::kMaxRanks)
    fail("/nodes", std::to_string(options.ranks), fmt::format("the number of ranks must be in [1, {}]", limits::kMaxRanks));
  if (options.global_batch < 1 || options.global_batch > limits::kMaxBatch)
    fail("/batch", std::to_string(options.global_batch), fmt::format("the batch must be in [1, {}]", limits::kMaxBatch));
  if (spec.splits_batch_over_ranks && options.global_batch < options.ranks)
    fail("/batch", fmt::format("{} over {} ranks", options.global_batch, options.ranks),
         "every rank needs at least one image: the batch must be at least the number of ranks");
  if (spec.splits_batch_over_ranks && options.global_batch % options.ranks != 0 && !options.uneven_batch)
    fail("/batch", fmt::format("{} over {} ranks", options.global_batch, options.ranks),
         "the global batch must be divisible by the number of ranks (or allow an uneven split: --uneven-batch)");
  if (options.iterations < 1 || options.iterations > limits::kMaxIterations)
    fail("/iterations", std::to_string(options.iterations), fmt::format("iterations must be in [1, {}]", limits::kMaxIterations));
  if (options.warmup_iterations < 0 || options.warmup_iterations >= options.iterations)
    fail("/warmup", std::to_string(options.warmup_iterations),
         fmt::format("warm-up iterations must be in [0, iterations) = [0, {})", options.iterations));
  if (network.layers.empty()) fail("/network", network.name, "the network has no layers");
  if (const int l = network.first_graph_layer(); l >= 0 && !spec.graphs) {
    std::vector<std::string> takers;
    for (const StrategySpec& other : strategy_registry())
      if (other.graphs) takers.push_back(other.name);
    fail("/strategy", spec.name,
         fmt::format("strategy {} schedules chains of conv, pool, relu, lrn, dropout, fc and softmax layers; network {} "
                     "has {} ({}); strategies for graph networks: {}",
                     spec.name, network.name, network.graph_feature(l), network.layers[std::size_t(l)].spec.name,
                     fmt::join(takers, ", ")));
  }
  const double estimated_ops = double(options.ranks) * double(options.iterations) * double(network.layers.size()) *
                               limits::kOpsPerLayerIteration;
  if (estimated_ops > limits::kMaxScheduleOps)
    fail("/iterations", fmt::format("{} iterations on {} ranks", options.iterations, options.ranks),
         fmt::format("{} ranks x {} iterations x {} layers is about {:.3g} ops, more than the {:.3g} a schedule may "
                     "hold; use fewer iterations (a few give the steady state)",
                     options.ranks, options.iterations, network.layers.size(), estimated_ops, limits::kMaxScheduleOps));
  if (!options.values.is_object()) fail("/", options.values.dump(), "strategy options must be a JSON object");
  for (const auto& [key, value] : options.values.items()) {
    const OptionSpec* option = spec.option(key);
    if (option == nullptr) {
      std::vector<std::string> known;
      for (const OptionSpec& o : spec.options) known.push_back(o.key);
      throw InputError(origin, "/" + key, value.is_string() ? value.get<std::string>() : value.dump(),
                       fmt::format("strategy {} has no option {} (its options: {})", spec.name, key,
                                   known.empty() ? "none" : fmt::format("{}", fmt::join(known, ", "))));
    }
    option->parse_value(value, origin, "/" + key);  // type and range
  }
  if (spec.validate != nullptr) spec.validate(network, options);
}

const char* columns_name(bool recompute_columns) { return recompute_columns ? "recomputed" : "kept"; }

bool parse_columns(const std::string& text, const std::string& file, const std::string& path) {
  if (text == "kept") return false;
  if (text == "recomputed") return true;
  throw InputError(file, path, text, "expected kept (Lee: im2col columns kept for the weight gradient) or recomputed");
}

void add_column_recompute(Schedule& schedule) {
  const std::string forward_suffix = ".im2col";  // emit.cpp's label of a conv's forward im2col
  std::vector<bool> rewritten(schedule.programs.size(), false);
  for (std::size_t r = 0; r < schedule.programs.size(); ++r) {
    if (rewritten[r]) continue;  // shared the list of a program rewritten before
    const OpList before = schedule.programs[r].ops;
    std::vector<Op> ops;
    ops.reserve(before.size() + before.size() / 8);
    std::map<std::pair<int, std::int64_t>, const Op*> forward_im2col;  // (layer, batch) -> op
    for (const Op& op : before)
      if (op.kind == OpKind::compute && op.kernel == KernelClass::im2col && op.phase == Phase::forward)
        forward_im2col.emplace(std::make_pair(op.layer, op.batch), &op);
    for (const Op& op : before) {
      if (op.kind == OpKind::compute && op.phase == Phase::backward_weight && op.kernel == KernelClass::gemm) {
        const auto it = forward_im2col.find({op.layer, op.batch});
        if (it != forward_im2col.end()) {
          Op again = *it->second;
          const std::string& label = again.label;
          CNNPAR_ASSERT(label.ends_with(forward_suffix), "a forward im2col op labelled " + label);
          again.label = label.substr(0, label.size() - forward_suffix.size()) + ".im2col_w";
          again.phase = Phase::backward_weight;
          ops.push_back(std::move(again));
        }
      }
      ops.push_back(op);
    }
    // Every program that shared the old list shares the new one.
    const OpList after(std::move(ops));
    for (std::size_t q = r; q < schedule.programs.size(); ++q)
      if (schedule.programs[q].ops.same_storage(before)) {
        schedule.programs[q].ops = after;
        rewritten[q] = true;
      }
  }
}

Schedule build_schedule(const Network& network, const Platform& platform, const StrategyOptions& options) {
  validate_strategy_options(network, options);
  if (options.conv.mode == ConvPaths::Mode::automatic) {
    // The im2col schedule prices the choice and, rewritten for it, is the result (built once).
    StrategyOptions resolved = options;
    resolved.conv = {};
    Schedule schedule = build_schedule(network, platform, resolved);
    resolved.conv = conv_paths_priced_faster(network, platform, schedule);
    if (resolved.conv.any_direct()) {
      use_direct_convolutions(schedule, network, resolved.conv);
      schedule.options["conv"] = resolved.conv.json();  // as to_json(resolved) records it
    }
    return schedule;
  }
  Schedule schedule = strategy_spec(options.name, options.origin).build(network, platform, options);
  if (options.recompute_columns) add_column_recompute(schedule);  // to_json(options) records both
  if (options.conv.any_direct()) use_direct_convolutions(schedule, network, options.conv);
  return schedule;
}

std::string schedule_platform_key(const Platform& platform) {
  nlohmann::json document = to_json(platform);
  nlohmann::json& network = document["network"];
  nlohmann::json read = nlohmann::json::object();
  for (const char* key : {"algorithms", "element_bytes"})
    if (network.contains(key)) read[key] = std::move(network[key]);
  network = std::move(read);
  return document.dump();
}

StrategyOptions single_rank_baseline(const StrategyOptions& options) {
  const StrategySpec& spec = strategy_spec(options.name, options.origin);
  StrategyOptions baseline = spec.one_rank_baseline != nullptr ? spec.one_rank_baseline(options) : options;
  baseline.ranks = 1;
  return baseline;
}

}  // namespace cnnpar
