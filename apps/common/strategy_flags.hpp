#pragma once
// Command-line flags of the strategies, generated from the registry's option schemas, shared
// by every `cnnpar` sub-command and by `cnnpar-run` so that a flag has one name, one unit
// syntax and one meaning everywhere.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "workload/registry.hpp"

namespace cnnpar::cli {

class StrategyFlags {
 public:
  /** Adds --strategy (default `default_strategy`), one flag per registered option key, its
   *  --help line stating unit, default and the strategies that take it, --columns
   *  (StrategyOptions::recompute_columns, default `recompute_columns`) and --conv
   *  (StrategyOptions::conv, default kDefaultConvPaths: auto). */
  void add(CLI::App& app, const std::string& default_strategy, bool recompute_columns = false);

  const std::string& strategy() const { return strategy_; }
  /** Sets the strategy when --strategy was not given (e.g. from a run-spec). */
  void set_strategy(const std::string& name) { strategy_ = name; }
  /** The strategy options given on the command line, typed by the chosen strategy's schema.
   *  @throws InputError("command line", "/KEY", value, reason) for a flag the chosen strategy
   *  does not take or a value that does not parse or is out of range. */
  nlohmann::json values() const;
  /** True when the flag of option `key` was given. */
  bool given(const std::string& key) const;
  /** --columns. @throws InputError("command line", "/columns", value, reason). */
  bool recompute_columns() const;
  /** Sets --columns when it was not given (e.g. from a run-spec). */
  void set_recompute_columns(bool recompute);
  bool columns_given() const { return columns_option_ != nullptr && columns_option_->count() > 0; }
  /** --conv. @throws InputError("command line", "--conv", value, reason). */
  ConvPaths conv() const;
  /** Sets --conv when it was not given (e.g. from a run-spec). */
  void set_conv(const ConvPaths& paths);
  bool conv_given() const { return conv_option_ != nullptr && conv_option_->count() > 0; }

 private:
  std::string strategy_;
  CLI::Option* strategy_option_ = nullptr;
  std::string columns_;
  CLI::Option* columns_option_ = nullptr;
  std::string conv_;
  CLI::Option* conv_option_ = nullptr;
  std::vector<std::pair<const SharedOption*, CLI::Option*>> options_;  // into all_strategy_options()
  std::map<std::string, std::string> text_;  // by key; std::map keeps the bound strings in place
};

/** Makes a command line that does not parse print one line, "PROGRAM: command line: REASON
 *  (--help lists the options)", like every other bad input. Call before adding sub-commands
 *  (they copy it). Shared by cnnpar and cnnpar-run. */
void set_one_line_failure_message(CLI::App& app, const std::string& program);

}  // namespace cnnpar::cli
