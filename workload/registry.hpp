#pragma once
// The strategy registry: each strategy is one registered unit with
// its name, its option schema (type, default, range, unit, help), a network-dependent
// validate and its builder. The CLI flags and their --help, study files, Schedule::options
// and the run-spec that `cnnpar run` hands to `cnnpar-run` all come from the schema.
//
// Adding a strategy: its builder file workload/strategies/NAME.cpp (NAME_strategy() returns its
// StrategySpec), its line CNNPAR_STRATEGY(NAME) in workload/strategies/registered.def (the build
// takes the source from it), and its test.
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

/** How analysis/components.hpp splits a trace of a strategy into the times its paper reports. */
enum class ComponentSplit {
  none,
  worker_groups,     ///< Veeriah & Modi, Tables 1-5: K conv workers on ranks 0..K-1, fc workers K..2K-1
  master_workers,    ///< Marques et al., Figs. 2 and 4: rank 0 the master, the conv layers split by kernels
  parameter_server,  ///< BPT-CNN, Sec. 3.3 and 5.4: synchronisation wait, balance, traffic, staleness
};

/** What the executor times on every rank before it builds a schedule that probes the ranks. */
enum class RankProbe {
  none,
  conv_forward,   ///< one forward convolution of every conv layer (Marques et al.'s probe)
  training_step,  ///< one training step (forward, backward, update), per sample (BPT-CNN's t̄_j)
};

struct StrategySpec {
  std::string name;
  std::string summary;  ///< one line: what it schedules, after which paper
  std::vector<OptionSpec> options;
  /** Checks that depend on the network (e.g. k within its counted layers).
   *  @throws InputError (file = options.origin, path "/KEY"). May be null. */
  void (*validate)(const Network& network, const StrategyOptions& options) = nullptr;
  Schedule (*build)(const Network& network, const Platform& platform, const StrategyOptions& options) = nullptr;
  /** Least rank count the strategy runs on (2 for separate worker groups). */
  int min_ranks = 1;
  /** True when every rank takes N/P images (data parallelism): N must then be at least P and
   *  divisible by it (or --uneven-batch). False for strategies that split the batch their own
   *  way (veeriah over its K conv workers) or not at all (conv_split); their validate checks. */
  bool splits_batch_over_ranks = true;
  /** True when the builder takes network DAGs with batchnorm, add and concat layers (the
   *  data-parallel ones run the whole graph on each rank; per_layer and hybrid move tensors
   *  between partitions along chain links only and refuse other assignments themselves).
   *  False: chains of the original kinds only; validate_strategy_options refuses other
   *  networks naming their first graph layer. */
  bool graphs = false;
  /** The options of the one-rank run that a speedup S(P) = T(1) / T(P) divides by (ranks are
   *  set to 1 after it); null = this strategy with the same options. */
  StrategyOptions (*one_rank_baseline)(const StrategyOptions& options) = nullptr;
  /** Options resolved when the executor runs: true when `options` ask every rank to be timed
   *  before the schedule is built (conv_split's `--shares probe`). The executor then times
   *  `probe` on each rank (real/probe.hpp) and calls resolve_probe with the seconds in rank
   *  order; the engines resolve the same options from modelled times. */
  bool (*probes_ranks)(const StrategyOptions& options) = nullptr;
  void (*resolve_probe)(StrategyOptions& options, const std::vector<double>& probe_s) = nullptr;
  RankProbe probe = RankProbe::none;
  ComponentSplit components = ComponentSplit::none;
  /** `cnnpar advise` re-checks the baselines beside the best assignments of its search, and
   *  gives every candidate's gain against each gain reference. */
  bool advise_baseline = false;
  bool advise_gain_reference = false;

  const OptionSpec* option(const std::string& key) const;
};

/** Plain data parallelism (dp) with the batch, ranks and iterations of `like` and its own
 *  defaults: the speedup baseline of strategies that need several ranks, and the one-rank
 *  schedule whose ops calibration times. */
StrategyOptions plain_data_parallel(const StrategyOptions& like);

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
const std::vector<SharedOption>& all_strategy_options();

class JsonNode;
/** The strategy of a JSON object {"strategy": NAME, OPTION: VALUE, ...} (a study's series, a
 *  validation grid's strategies): sets options.name and options.values; every key that is not
 *  in `own_keys` (the enclosing object's other fields) must be an option of that strategy.
 *  @throws InputError naming the file, the JSON path and the value (an unknown strategy, an
 *  option it does not take, a value its schema refuses). */
void parse_strategy_object(const JsonNode& node, std::span<const std::string_view> own_keys, StrategyOptions& options);

}  // namespace cnnpar
