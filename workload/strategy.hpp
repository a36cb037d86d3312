#pragma once
// Strategy builders: (network, platform, global batch N, P, options) -> Schedule. Which
// strategies exist and which options each takes is the registry's (registry.hpp).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "workload/conv_paths.hpp"

namespace cnnpar {

/** The strategy a command runs when none is given: plain data parallelism on the commands that
 *  measure this machine (run, calibrate, cnnpar-run), Lee et al.'s (k 9, f 2; their Fig. 6) on
 *  those that predict a cluster (predict, simulate, trace, sweep, report). */
inline constexpr const char* kMeasuredDefaultStrategy = "dp";
inline constexpr const char* kPredictedDefaultStrategy = "lee";

struct StrategyOptions {
  std::string name = kMeasuredDefaultStrategy;  ///< a registered strategy (strategy_names())
  std::int64_t global_batch = 256; ///< N: images per iteration over all ranks
  int ranks = 1;                   ///< P
  int iterations = 2;              ///< total iterations, warm-up included
  int warmup_iterations = 1;       ///< leading iterations excluded from metrics
  /** Allow N not divisible by P: ranks 0..N%P-1 take ceil(N/P) images, the others floor(N/P);
   *  lee's allgathers are then sized for the larger share. Off: N % P != 0 is bad input. */
  bool uneven_batch = false;
  /** Lee et al. keep each conv layer's im2col columns from forward for the weight gradient
   *  "if memory space is sufficiently large" (false, the default). True: the columns share one
   *  buffer and every conv layer's backward_weight starts with an explicit `<layer>.im2col_w`
   *  op that recomputes them, so predictions and measurements still pair op by op. */
  bool recompute_columns = false;
  /** The conv layers run as direct convolutions (oneDNN's in the executor; workload/conv_paths.hpp).
   *  JSON "conv": "direct", "auto" or a list of layers; absent = im2col. */
  ConvPaths conv;
  std::string origin = "<options>"; ///< where the options came from (file or "command line")
  /** The strategy's own options by schema key ("k", "bucket_bytes", ...), typed as the schema
   *  says; a key not given takes the schema's default. */
  nlohmann::json values = nlohmann::json::object();

  /** The value of option `key`, or its default. Asserts that the strategy has the option. */
  nlohmann::json value(const std::string& key) const;
  std::int64_t integer(const std::string& key) const;
  double number(const std::string& key) const;  ///< integer and bytes options
  std::string text(const std::string& key) const;
  StrategyOptions& set(const std::string& key, nlohmann::json value);
};

/** Names of the registered strategies, in registration order. */
std::vector<std::string> strategy_names();

/** Checks the options against the strategy's schema and the network, without building.
 *  @throws InputError (file = options.origin, path = "/batch", "/k", ...) naming the value:
 *  an unknown strategy or option, a value of the wrong type or out of range, N not divisible
 *  by P, k or f beyond the network's layers. */
void validate_strategy_options(const Network& network, const StrategyOptions& options);

/** cnnpar-run's (and `cnnpar run`'s) default for StrategyOptions::recompute_columns: one
 *  shared im2col buffer. The prediction commands default to Lee's kept columns. */
inline constexpr bool kExecutorRecomputesColumns = true;

/** "kept" | "recomputed" (StrategyOptions::recompute_columns). */
const char* columns_name(bool recompute_columns);
/** @throws InputError(file, path, text, reason) for another text. */
bool parse_columns(const std::string& text, const std::string& file, const std::string& path);

/** Inserts a `<layer>.im2col_w` op (phase backward_weight, the forward im2col's bytes) before
 *  every conv layer's backward_weight GEMM of every program; identical programs stay shared. */
void add_column_recompute(Schedule& schedule);

/** Builds the Schedule of `options.name` after validate_strategy_options (then
 *  add_column_recompute when options.recompute_columns, use_direct_convolutions for
 *  options.conv, `auto` resolved by conv_paths_priced_faster; Schedule::options records the
 *  resolved paths). */
Schedule build_schedule(const Network& network, const Platform& platform, const StrategyOptions& options);

/** What of `platform` a schedule builder reads, as text: all of it but the network's link model
 *  (rates, latencies, topology, factors, shaping); the network's collective algorithms and
 *  element bytes stay. Platforms with equal keys give every strategy the same schedule, so a
 *  sweep over link rates builds each schedule once. */
std::string schedule_platform_key(const Platform& platform);

/** The options of the P = 1 run that a speedup S(P) = T(1) / T(P) divides by: the same
 *  strategy on one rank, or what the strategy registers as its baseline (one rank of plain dp
 *  for veeriah's separate worker groups; uniform shares for conv_split's per-rank list). */
StrategyOptions single_rank_baseline(const StrategyOptions& options);

/** JSON form of the options with every schema default filled in (Schedule::options, Trace
 *  metadata, run-specs). */
nlohmann::json to_json(const StrategyOptions& options);
/** The options to_json wrote (Schedule::options, a trace's metadata "options"): the keys it
 *  writes, the strategy's own ones by its schema; other keys (a strategy's resolved_* notes)
 *  are ignored. @throws InputError(origin, ...) for a missing key or an unknown strategy. */
StrategyOptions strategy_options_from_json(const nlohmann::json& json, const std::string& origin);

}  // namespace cnnpar
