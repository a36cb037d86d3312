#include "apps/common/strategy_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::cli {

void StrategyFlags::add(CLI::App& app, const std::string& default_strategy, bool recompute_columns) {
  strategy_ = default_strategy;
  std::vector<std::string> names;
  for (const StrategySpec& spec : strategy_registry()) names.push_back(spec.name);
  strategy_option_ =
      app.add_option("--strategy", strategy_, fmt::format("{}", fmt::join(names, " | ")))->capture_default_str();
  // Every command that takes strategy flags shows the same help: formatted once.
  static const std::vector<std::string> helps = [] {
    std::vector<std::string> formatted;
    for (const SharedOption& shared : all_strategy_options()) {
      const OptionSpec& o = shared.spec;
      std::string help = o.help;
      if (!o.choices.empty()) help += fmt::format(" [{}]", fmt::join(o.choices, " | "));
      help += fmt::format(" ({}default {}; {})", o.unit.empty() ? "" : o.unit + ", ",
                          o.default_text.empty() ? "none" : o.default_text, fmt::join(shared.strategies, ", "));
      formatted.push_back(std::move(help));
    }
    return formatted;
  }();
  const std::vector<SharedOption>& all = all_strategy_options();
  for (std::size_t i = 0; i < all.size(); ++i) {
    const OptionSpec& o = all[i].spec;
    std::string& text = text_[o.key];
    const char* type_name = o.type == OptionType::integer ? "INT"
                            : o.type == OptionType::bytes ? "SIZE"
                            : o.type == OptionType::choice ? "CHOICE"
                                                           : "TEXT";
    options_.emplace_back(&all[i], app.add_option(o.flag(), text, helps[i])->type_name(type_name));
  }
  columns_ = columns_name(recompute_columns);
  columns_option_ = app.add_option("--columns", columns_,
                                   "conv im2col columns: kept from forward for the weight gradient (Lee) | "
                                   "recomputed (one shared buffer, an im2col op before each weight gradient)")
                        ->capture_default_str();
  conv_ = kDefaultConvPaths.text();
  conv_option_ = flags::conv(app, conv_);
}

ConvPaths StrategyFlags::conv() const { return parse_conv_paths(conv_, "command line", "--conv"); }

void StrategyFlags::set_conv(const ConvPaths& paths) { conv_ = paths.text(); }

bool StrategyFlags::recompute_columns() const { return parse_columns(columns_, "command line", "/columns"); }

void StrategyFlags::set_recompute_columns(bool recompute) { columns_ = columns_name(recompute); }

bool StrategyFlags::given(const std::string& key) const {
  for (const auto& [shared, option] : options_)
    if (shared->spec.key == key) return option->count() > 0;
  return false;
}

nlohmann::json StrategyFlags::values() const {
  const StrategySpec& spec = strategy_spec(strategy_, "command line");
  nlohmann::json values = nlohmann::json::object();
  for (const auto& [shared, option] : options_) {
    if (option->count() == 0) continue;
    const std::string& text = text_.at(shared->spec.key);
    const OptionSpec* own = spec.option(shared->spec.key);
    if (own == nullptr) {
      std::vector<std::string> flags;
      for (const OptionSpec& o : spec.options) flags.push_back(o.flag());
      throw InputError("command line", "/" + shared->spec.key, text,
                       fmt::format("strategy {} takes no {} (its options: {})", spec.name, shared->spec.flag(),
                                   flags.empty() ? "none" : fmt::format("{}", fmt::join(flags, ", "))));
    }
    values[own->key] = own->parse(text, "command line", "/" + own->key);
  }
  return values;
}

void set_one_line_failure_message(CLI::App& app, const std::string& program) {
  app.failure_message([program](const CLI::App*, const CLI::Error& e) {
    return program + ": command line: " + e.what() + " (--help lists the options)\n";
  });
}

}  // namespace cnnpar::cli
