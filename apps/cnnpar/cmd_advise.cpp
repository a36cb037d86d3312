// `cnnpar advise`: which layers should be model-parallel, for one network, platform, batch and
// node count. The rule (Intel's criterion, with its numbers), a search over per_layer
// assignments on the analytic engine, and a SimGrid re-check of the best few beside dp, lee and
// hybrid. The winner is written as a file that --strategy per_layer --assign FILE reads.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "analysis/metrics.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/units.hpp"
#include "experiments/advice.hpp"
#include "model/scenarios.hpp"
#include "workload/overrides.hpp"
#include "workload/strategies/per_layer.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::cli {

namespace {

struct AdviseOptions {
  std::string network = kDefaultNetwork;
  std::string platform = kDefaultPlatform;
  std::int64_t batch = 256;
  int iterations = 3;
  int warmup = 1;
  std::vector<std::string> sets;
  std::string nodes = "64";
  int keep = 10;    ///< assignments listed
  int recheck = 3;  ///< of them re-checked with SimGrid
  std::string out = "assign.json";
  std::string json_out;
  bool quiet = false;
  bool progress = false;
};

int run_advise(const AdviseOptions& o) {
  check_output_path(o.out, "--out");
  check_output_path(o.json_out, "--json");
  if (o.out.empty()) throw InputError("command line", "--out", "", "the assignment needs a file");
  const int nodes = flags::parse_one_node_count(o.nodes);
  if (o.keep < 1) throw InputError("command line", "--keep", std::to_string(o.keep), "must be >= 1");
  if (o.recheck < 0 || o.recheck > o.keep)
    throw InputError("command line", "--recheck", std::to_string(o.recheck), fmt::format("must be in [0, --keep = {}]", o.keep));
  const Network network = load_network(o.network);
  std::vector<Override> sets;
  for (const std::string& text : o.sets) sets.push_back(parse_override(text, "command line", "--set"));
  const ScenarioDocument document = load_scenario("platforms", o.platform);
  const Platform platform = platform_with_overrides(document.json, document.origin, sets, "command line", "--set");
  if (nodes > platform.nodes.count)
    throw InputError("command line", "--nodes", o.nodes,
                     fmt::format("{} nodes asked for, but platform {} has {}", nodes, platform.name, platform.nodes.count));
  bool has_parameters = false;
  for (const Layer& layer : network.layers) has_parameters = has_parameters || layer.has_parameters();
  if (!has_parameters)
    throw InputError("command line", "--network", o.network, "the network has no conv or fc layer to assign");
  StrategyOptions base = strategies::assignment_options(StrategyOptions{}, "");
  base.global_batch = o.batch;
  base.ranks = nodes;
  base.iterations = o.iterations;
  base.warmup_iterations = o.warmup;
  base.origin = "command line";
  apply_strategy_overrides(base, sets, "command line", "--set");
  validate_strategy_options(network, base);  // the batch over the nodes, the iterations

  Progress search_progress("searching", o.progress, o.quiet);
  Progress recheck_progress("re-checking with SimGrid", o.progress, o.quiet);
  const AdviseRequest request{
      .network = &network,
      .platform = &platform,
      .base = base,
      .keep = o.keep,
      .recheck = o.recheck,
      .search_progress = [&](int done, int total) { search_progress.update(done, total); },
      .recheck_progress =
          [&](int done, int total) {
            search_progress.finish();
            recheck_progress.update(done, total);
          },
  };
  const Advice advice = advise(request);
  search_progress.finish();
  recheck_progress.finish();
  const AdviseCandidate& winner = advice.candidates[advice.winner];

  OutputTransaction outputs;
  outputs.file(o.out, assignment_file(network, *winner.assignment).dump(2) + "\n");
  if (!o.json_out.empty()) outputs.file(o.json_out, advice_json(advice, request, to_json(sets), o.out).dump(2) + "\n");
  outputs.commit();
  if (o.quiet || o.json_out == "-" || o.out == "-") return 0;

  fmt::print("{} on {}, batch {}, {} nodes\n\n", network.name, platform.name, o.batch, nodes);
  fmt::print("The rule (Intel's note): model parallelism iff 3·in_w·in_h·MB < ofm·kw·kh, MB = {}\n", o.batch);
  // Literal: its spacing counts each '·' as two columns (its bytes), where fmt's widths count characters.
  fmt::print("layer      3·in_w·in_h·MB  ofm·kw·kh  choice\n");
  for (const RuleRow& r : advice.rule)
    fmt::print("{:<10} {:>16.0f} {:>12.0f}  {}\n", r.name, r.data_side, r.model_side, to_string(r.choice));
  const SearchResult& search = advice.search;
  fmt::print("\nThe search (analytic engine): {} over {} assignments; {} scored ({} infeasible) in {}\n",
             search.exhaustive ? "exhaustive" : "steepest descent with 1- and 2-layer moves from all-data, hybrid and the rule",
             search.space, search.scored, search.infeasible, format_seconds(search.seconds));
  for (std::size_t i = 0; i < search.best.size(); ++i)
    fmt::print("{:>3}. {:>12}  R {:>5.1f} %  {}\n", i + 1, format_seconds(search.best[i].iteration_s),
               search.best[i].overlap_ratio_percent, search.best[i].text);
  std::string head = fmt::format("\n{:<8} {:>12} {:>12}", "", "analytic", advice.rechecked ? "SimGrid" : "(no SimGrid)");
  for (const std::string& reference : advice.gain_references) head += fmt::format(" {:>14}", "gain vs " + reference);
  fmt::print("{}\n", head);
  for (const AdviseCandidate& c : advice.candidates) {
    const bool sim = c.simgrid_s > 0;
    std::string line = fmt::format("{:<8} {:>12} {:>12}", c.label, format_seconds(c.analytic_s),
                                   sim ? format_seconds(c.simgrid_s) : "-");
    for (const std::string& reference : advice.gain_references)
      line += fmt::format(" {:>14}", fmt::format("{:.2f}x", advice.gain(c, reference, false)) +
                                         (sim ? fmt::format(" / {:.2f}x", advice.gain(c, reference, true)) : ""));
    fmt::print("{}\n", line);
  }
  fmt::print("(gains: analytic / SimGrid)\n\nwinner {}, written to {}:\n  {}\nnext: cnnpar predict --strategy {} "
             "--assign {} --nodes {}   (or cnnpar run ... to measure it)\n",
             winner.label, o.out, winner.options.values.at("assign").get<std::string>(), winner.options.name, o.out, nodes);
  return 0;
}

}  // namespace

Runner add_advise_command(CLI::App& app) {
  auto o = std::make_shared<AdviseOptions>();
  CLI::App* sub = app.add_subcommand("advise", "which layers should be data- or model-parallel: the rule, a search over "
                                               "per_layer assignments and a SimGrid re-check; writes the winner");
  flags::network(*sub, o->network);
  flags::platform(*sub, o->platform);
  flags::batch(*sub, o->batch);
  flags::iterations(*sub, o->iterations);
  flags::warmup(*sub, o->warmup);
  flags::set_values(*sub, o->sets);
  flags::nodes(*sub, o->nodes)->capture_default_str();
  sub->add_option("--keep", o->keep, "assignments to list")->capture_default_str();
  sub->add_option("--recheck", o->recheck, "of them, how many to re-check with SimGrid (0 = none)")->capture_default_str();
  sub->add_option("--out,-o", o->out, "write the winning assignment here (--strategy per_layer --assign FILE reads it)")
      ->capture_default_str();
  flags::json_out(*sub, o->json_out, "the advice (rule, search, ranking, re-check)");
  flags::quiet(*sub, o->quiet);
  flags::progress(*sub, o->progress);
  return [o] { return run_advise(*o); };
}

}  // namespace cnnpar::cli
