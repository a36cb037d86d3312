#include "workload/run_spec.hpp"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "model/inner_mode.hpp"
#include "base/json_node.hpp"
#include "base/text.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

void check_run_number(RunNumber which, double value, const std::string& file, const std::string& path) {
  const bool finite = std::isfinite(value);
  const bool integer = finite && std::floor(value) == value && std::abs(value) < 9.0e15;
  const char* reason = nullptr;
  switch (which) {
    case RunNumber::learning_rate:
      if (!(finite && value > 0)) reason = "must be a finite number > 0";
      break;
    case RunNumber::momentum:
      if (!(finite && value >= 0 && value < 1)) reason = "must be a number in [0, 1)";
      break;
    case RunNumber::weight_decay:
      if (!(finite && value >= 0)) reason = "must be a finite number >= 0";
      break;
    case RunNumber::timeout_s:
      if (!(finite && value > 0)) reason = "must be a finite number of seconds > 0";
      break;
    case RunNumber::poll_interval_us:
      if (!(finite && value >= 0)) reason = "must be a finite number of microseconds >= 0";
      break;
    case RunNumber::concurrency:
      if (!(integer && value >= 0 && value <= INT_MAX)) reason = "must be an integer >= 0 (0 = the platform's)";
      break;
    case RunNumber::checkpoint_every:
      if (!(integer && value >= 0 && value <= INT_MAX))
        reason = "must be an integer number of iterations >= 0 (0 = only at the end)";
      break;
    case RunNumber::gemm_tile_columns:
      if (!(integer && value >= 0)) reason = "must be an integer number of columns >= 0 (0 = no split)";
      break;
    case RunNumber::repeats:
      if (!(integer && value >= 1 && value <= INT_MAX)) reason = "must be an integer >= 1";
      break;
    case RunNumber::threads:
      if (!(integer && value >= 0 && value <= 1024))
        reason = "must be an integer in [0, 1024] (0 = OPENBLAS_NUM_THREADS, else 1)";
      break;
  }
  if (reason != nullptr) throw InputError(file, path, fmt::format("{}", value), reason);
}

void check_run_numbers(const RunNumbers& n, const std::string& file) {
  check_run_number(RunNumber::learning_rate, n.learning_rate, file, "/lr");
  check_run_number(RunNumber::momentum, n.momentum, file, "/momentum");
  check_run_number(RunNumber::weight_decay, n.weight_decay, file, "/weight-decay");
  check_run_number(RunNumber::timeout_s, n.timeout_s, file, "/timeout-s");
  check_run_number(RunNumber::poll_interval_us, n.poll_interval_us, file, "/poll-interval-us");
  check_run_number(RunNumber::concurrency, n.concurrency, file, "/concurrency");
  check_run_number(RunNumber::checkpoint_every, n.checkpoint_every, file, "/checkpoint-every");
  check_run_number(RunNumber::threads, n.threads, file, "/threads");
}

void check_gemm_backend_name(const std::string& text, const std::string& file, const std::string& path) {
  if (text != "openblas" && text != "onednn") throw InputError(file, path, text, "expected openblas or onednn");
}

CalibrationParts parse_calibration_parts(const std::string& text, const std::string& file, const std::string& path) {
  CalibrationParts parts{false, false, false};
  for (const std::string& part : split(text, ',')) {
    bool* flag = part == "compute" ? &parts.compute : part == "network" ? &parts.network
                                                    : part == "progress" ? &parts.progress
                                                    : part == "inner"    ? &parts.inner : nullptr;
    if (!flag) throw InputError(file, path, text, "expected a comma list of compute, network, progress and inner");
    if (*flag) throw InputError(file, path, text, "'" + part + "' is listed twice");
    *flag = true;
  }
  return parts;
}

std::string to_string(const CalibrationParts& parts) {
  std::vector<std::string> names;
  for (const auto& [set, name] : {std::pair{parts.compute, "compute"}, std::pair{parts.network, "network"},
                                  std::pair{parts.progress, "progress"}, std::pair{parts.inner, "inner"}})
    if (set) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ","));
}

std::uint64_t parse_seed(const std::string& text, const std::string& file, const std::string& path) {
  const bool digits = !text.empty() && text.size() <= 20 &&
                      text.find_first_not_of("0123456789") == std::string::npos;
  errno = 0;
  const unsigned long long value = digits ? std::strtoull(text.c_str(), nullptr, 10) : 0;
  if (!digits || errno == ERANGE) throw InputError(file, path, text, "must be an integer in [0, 2^64 - 1]");
  return std::uint64_t(value);
}

nlohmann::json to_json(const RunSpec& spec) {
  nlohmann::json options = nlohmann::json::object();
  for (const auto& [key, value] : spec.strategy.values.items()) options[key] = value;
  nlohmann::json j = {{"format", "cnnpar-run-spec"},
                      {"network", spec.network},
                      {"platform", spec.platform},
                      {"strategy", spec.strategy.name},
                      {"options", options},
                      {"batch", spec.strategy.global_batch},
                      {"iterations", spec.strategy.iterations},
                      {"warmup", spec.strategy.warmup_iterations},
                      {"seed", spec.seed},
                      {"dataset", spec.dataset},
                      {"compute", spec.compute},
                      {"comm_progress", spec.comm_progress},
                      {"progress", spec.progress},
                      {"collectives", spec.collectives},
                      {"timeout_s", spec.timeout_s},
                      {"concurrency", spec.collective_concurrency},
                      {"trace", spec.trace},
                      {"weights_out", spec.weights_out},
                      {"checkpoint", spec.checkpoint},
                      {"checkpoint_every", spec.checkpoint_every},
                      {"resume", spec.resume},
                      {"threads", spec.threads},
                      {"gemm", spec.gemm},
                      {"inner", spec.inner},
                      {"columns", columns_name(spec.strategy.recompute_columns)},
                      {"conv", spec.strategy.conv.text()}};
  if (!spec.slowdown.empty()) j["slowdown"] = slowdowns_to_json(spec.slowdown);
  if (spec.learning_rate) j["lr"] = *spec.learning_rate;
  if (spec.momentum) j["momentum"] = *spec.momentum;
  if (spec.weight_decay) j["weight_decay"] = *spec.weight_decay;
  if (spec.poll_interval_us) j["poll_interval_us"] = *spec.poll_interval_us;
  return j;
}

void add_slowdown(Slowdowns& slowdowns, const std::string& text, const std::string& file, const std::string& path) {
  const std::size_t colon = text.find(':');
  const auto fail = [&](const std::string& reason) { throw InputError(file, path, text, reason); };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size())
    fail("expected RANK:FACTOR, e.g. 1:2 (rank 1 computes twice as slowly)");
  const std::string rank_text = text.substr(0, colon), factor_text = text.substr(colon + 1);
  if (rank_text.find_first_not_of("0123456789") != std::string::npos || rank_text.size() > 9)
    fail("the rank must be a whole number >= 0");
  double factor = 0;
  std::size_t used = 0;
  try {
    factor = std::stod(factor_text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != factor_text.size() || !(factor >= 1 && factor <= kMaxSlowdown))
    fail(fmt::format("the factor must be a number in [1, {:g}] (a factor below 1 would need a faster machine)",
                     kMaxSlowdown));
  const int rank = std::stoi(rank_text);
  if (!slowdowns.emplace(rank, factor).second) fail(fmt::format("rank {} is slowed down twice", rank));
}

void check_slowdown_ranks(const Slowdowns& slowdowns, int ranks, const std::string& file, const std::string& path) {
  for (const auto& [rank, factor] : slowdowns)
    if (rank >= ranks)
      throw InputError(file, path, fmt::format("{}:{:g}", rank, factor),
                       fmt::format("there is no rank {}: the run has {} ranks (0 to {})", rank, ranks, ranks - 1));
}

nlohmann::json slowdowns_to_json(const Slowdowns& slowdowns) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [rank, factor] : slowdowns) out[std::to_string(rank)] = factor;
  return out;
}

RunSpec run_spec_from_json(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  root.check_keys({"format", "network", "platform", "strategy", "options", "batch", "iterations", "warmup", "seed",
                   "lr", "momentum", "weight_decay", "dataset", "compute", "comm_progress", "progress", "collectives", "poll_interval_us",
                   "timeout_s", "concurrency", "trace", "weights_out", "checkpoint", "checkpoint_every",
                   "resume", "threads", "gemm", "inner", "columns", "conv", "slowdown"});
  if (root.string_or("format", "cnnpar-run-spec") != "cnnpar-run-spec")
    root.at("format").fail("expected \"cnnpar-run-spec\"");
  RunSpec spec;
  spec.network = root.at("network").as_string();
  spec.platform = root.string_or("platform", spec.platform);
  StrategyOptions& s = spec.strategy;
  s.origin = file;
  s.name = root.at("strategy").as_string();
  const StrategySpec& strategy = [&]() -> const StrategySpec& {
    try {
      return strategy_spec(s.name, file);
    } catch (const InputError& error) {
      root.at("strategy").fail(error.what());
    }
  }();
  if (root.has("options"))
    for (const std::string& key : root.at("options").keys()) {
      const JsonNode value = root.at("options").at(key);
      const OptionSpec* option = strategy.option(key);
      if (option == nullptr) value.fail("strategy " + s.name + " has no option " + key);
      s.values[key] = option->parse_value(value.raw(), file, value.path());
    }
  s.global_batch = root.at("batch").as_positive_int();
  const auto bounded_int = [&](const char* key, std::int64_t fallback, std::int64_t least) {
    if (!root.has(key)) return fallback;
    const JsonNode node = root.at(key);
    const std::int64_t value = node.as_int();
    if (value < least || value > INT_MAX) node.fail(fmt::format("must be an integer in [{}, {}]", least, INT_MAX));
    return value;
  };
  root.at("iterations");  // required: throws naming the path when absent
  s.iterations = int(bounded_int("iterations", 0, 1));
  s.warmup_iterations = int(bounded_int("warmup", 1, 0));
  spec.seed = root.has("seed") ? root.at("seed").as_uint64() : 1;
  // The numbers with a range: the same check as cnnpar-run's and `cnnpar run`'s flags.
  const auto number = [&](const char* key, RunNumber which) {
    const JsonNode node = root.at(key);
    const double value = node.as_number();
    check_run_number(which, value, file, node.path());
    return value;
  };
  if (root.has("lr")) spec.learning_rate = number("lr", RunNumber::learning_rate);
  if (root.has("momentum")) spec.momentum = number("momentum", RunNumber::momentum);
  if (root.has("weight_decay")) spec.weight_decay = number("weight_decay", RunNumber::weight_decay);
  spec.dataset = root.string_or("dataset", spec.dataset);
  spec.compute = root.string_or("compute", spec.compute);
  spec.comm_progress = root.string_or("comm_progress", spec.comm_progress);
  spec.progress = root.bool_or("progress", spec.progress);
  spec.collectives = root.string_or("collectives", spec.collectives);
  if (root.has("poll_interval_us")) spec.poll_interval_us = number("poll_interval_us", RunNumber::poll_interval_us);
  if (root.has("timeout_s")) spec.timeout_s = number("timeout_s", RunNumber::timeout_s);
  if (root.has("concurrency")) spec.collective_concurrency = std::int64_t(number("concurrency", RunNumber::concurrency));
  spec.trace = root.string_or("trace", "");
  spec.weights_out = root.string_or("weights_out", "");
  spec.checkpoint = root.string_or("checkpoint", "");
  if (root.has("checkpoint_every"))
    spec.checkpoint_every = std::int64_t(number("checkpoint_every", RunNumber::checkpoint_every));
  spec.resume = root.bool_or("resume", false);
  if (root.has("threads")) spec.threads = std::int64_t(number("threads", RunNumber::threads));
  if (root.has("gemm")) {
    const JsonNode node = root.at("gemm");
    spec.gemm = node.as_string();
    check_gemm_backend_name(spec.gemm, file, node.path());
  }
  if (root.has("inner")) {
    const JsonNode node = root.at("inner");
    spec.inner = node.as_string();
    parse_inner_mode(spec.inner, file, node.path());
  }
  if (root.has("slowdown")) {
    const JsonNode slowdown = root.at("slowdown");
    for (const std::string& key : slowdown.keys()) {
      const JsonNode factor = slowdown.at(key);
      add_slowdown(spec.slowdown, key + ":" + fmt::format("{}", factor.as_number()), file, factor.path());
    }
  }
  s.recompute_columns = kExecutorRecomputesColumns;
  if (root.has("columns")) {
    const JsonNode node = root.at("columns");
    s.recompute_columns = parse_columns(node.as_string(), file, node.path());
  }
  s.conv = kDefaultConvPaths;
  if (root.has("conv")) {
    const JsonNode node = root.at("conv");
    s.conv = parse_conv_paths(node.as_string(), file, node.path());
  }
  return spec;
}

}  // namespace cnnpar
