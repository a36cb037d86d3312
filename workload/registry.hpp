#pragma once
// The strategy registry: each strategy is one registered unit with
// its name, its option schema (type, default, range, unit, help), a network-dependent
// validate and its builder. The CLI flags and their --help, study files, Schedule::options
// and the run-spec that `cnnpar run` hands to `cnnpar-run` all come from the schema.
//
// Adding a strategy: its builder (a StrategySpec returned by a function beside it), its test,
// and one line in the table of registry.cpp.
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "workload/strategy.hpp"

namespace cnnpar {

enum class OptionType {
  integer,  ///< a whole number within [min, max]
  bytes,    ///< a size: a number of bytes or a unit string ("25MiB"), within [min, max]
  choice,   ///< one of `choices`
  text,     ///< free text (checked by the strategy's validate)
};

struct OptionSpec {
  std::string key;            ///< JSON key; the CLI flag is "--" + key with '_' → '-'
  OptionType type = OptionType::integer;
  std::string default_text;   ///< the default as written on the command line
  double min = 0;             ///< integer, bytes: least value
  double max = 0;             ///< integer, bytes: largest value; network-dependent limits go to validate
  std::vector<std::string> choices;
  std::string unit;           ///< what the number counts ("counted layers", "bytes", ...)
  std::string help;

  std::string flag() const;   ///< "--bucket-bytes"
  /** The typed JSON value of `text` (a flag's argument).
   *  @throws InputError(file, path, text, reason) when it does not parse or is out of range. */
  nlohmann::json parse(const std::string& text, const std::string& file, const std::string& path) const;
  /** The same for a JSON value (study files, run-specs): numbers or strings. */
  nlohmann::json parse_value(const nlohmann::json& value, const std::string& file, const std::string& path) const;
  nlohmann::json default_value() const;
};

struct StrategySpec {
  std::string name;
  std::string summary;  ///< one line: what it schedules, after which paper
  std::vector<OptionSpec> options;
  /** Checks that depend on the network (e.g. k within its counted layers).
   *  @throws InputError (file = options.origin, path "/KEY"). May be null. */
  void (*validate)(const Network& network, const StrategyOptions& options) = nullptr;
  Schedule (*build)(const Network& network, const Platform& platform, const StrategyOptions& options) = nullptr;
  /** Least rank count the strategy runs on; above 1 (separate worker groups), its speedup
   *  baseline is one rank of plain dp (single_rank_baseline). */
  int min_ranks = 1;
  /** True when every rank takes N/P images (data parallelism): N must then be at least P and
   *  divisible by it (or --uneven-batch). False for strategies that split the batch their own
   *  way (veeriah over its K conv workers) or not at all (conv_split); their validate checks. */
  bool splits_batch_over_ranks = true;
  /** The options of this strategy's one-rank run (the speedup baseline), when some option is
   *  sized by the rank count (conv_split's per-rank shares); null = the same options. */
  void (*to_one_rank)(StrategyOptions& options) = nullptr;

  const OptionSpec* option(const std::string& key) const;
};

/** Every registered strategy, in registration order. */
const std::vector<StrategySpec>& strategy_registry();
/** @throws InputError(origin, "/strategy", name) listing the registered names. */
const StrategySpec& strategy_spec(const std::string& name, const std::string& origin = "command line");

/** One entry per option key over all strategies (a key such as `k` that several strategies
 *  take appears once), with the names of the strategies that take it. */
struct SharedOption {
  OptionSpec spec;
  std::vector<std::string> strategies;
};
std::vector<SharedOption> all_strategy_options();

class JsonNode;
/** The strategy of a JSON object {"strategy": NAME, OPTION: VALUE, ...} (a study's series, a
 *  validation grid's strategies): sets options.name and options.values; every key that is not
 *  in `own_keys` (the enclosing object's other fields) must be an option of that strategy.
 *  @throws InputError naming the file, the JSON path and the value (an unknown strategy, an
 *  option it does not take, a value its schema refuses). */
void parse_strategy_object(const JsonNode& node, std::span<const std::string_view> own_keys, StrategyOptions& options);

}  // namespace cnnpar
