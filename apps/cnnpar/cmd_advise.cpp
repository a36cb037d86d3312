// `cnnpar advise`: which layers should be model-parallel, for one network, platform, batch and
// node count. The rule (Intel's criterion, with its numbers), a search over per_layer
// assignments on the analytic engine, and a SimGrid re-check of the best few beside dp, lee and
// hybrid. The winner is written as a file that --strategy per_layer --assign FILE reads.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "experiments/advise.hpp"
#include "analysis/metrics.hpp"
#include "apps/cnnpar/commands.hpp"
#include "apps/cnnpar/common.hpp"
#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "workload/overrides.hpp"
#include "model/scenarios.hpp"
#include "workload/strategies/per_layer.hpp"
#include "workload/strategy.hpp"
#include "base/units.hpp"
#include "sim/analytic/analytic_engine.hpp"
#ifdef CNNPAR_HAVE_SIMGRID
#include "sim/simgrid/simgrid_engine.hpp"
#endif

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

/** One re-checked candidate: an assignment or a baseline strategy. */
struct Candidate {
  std::string label;
  StrategyOptions options;
  double analytic_s = 0;
  double simgrid_s = 0;  ///< 0 when not re-checked
  const strategies::LayerAssignment* assignment = nullptr;
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
  StrategyOptions base;
  base.name = "per_layer";
  base.global_batch = o.batch;
  base.ranks = nodes;
  base.iterations = o.iterations;
  base.warmup_iterations = o.warmup;
  base.origin = "command line";
  apply_strategy_overrides(base, sets, "command line", "--set");
  validate_strategy_options(network, base);  // the batch over the nodes, the iterations

  const std::vector<RuleRow> rule = advise_rule(network, platform, o.batch, nodes);
  const strategies::LayerAssignment by_rule = rule_assignment(network, rule);
  strategies::LayerAssignment all_data;
  all_data.kinds.assign(network.layers.size(), PartitionKind::data);
  const std::vector<strategies::LayerAssignment> starts = {all_data, strategies::hybrid_assignment(network, nodes), by_rule};

  Progress progress("searching", o.progress, o.quiet);
  const AssignmentScorer score = engine_scorer(network, platform, base, [] { return make_analytic_engine(); });
  const std::size_t space = assignment_space(network);
  // Progress (with an ETA) for the exhaustive search only: the heuristic's length is unknown.
  const SearchResult search = search_assignments(network, score, starts, std::size_t(o.keep), [&](std::size_t scored) {
    if (space <= kExhaustiveLimit) progress.update(int(scored), int(space));
  });
  progress.finish();
  if (search.best.empty())
    throw InputError("command line", "--nodes", o.nodes, "no assignment of this network can be built on so many nodes");

  // Candidates: the best few, then the baselines (each with its registry defaults).
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < search.best.size() && int(i) < std::max(o.recheck, 1); ++i) {
    Candidate c;
    c.label = fmt::format("#{}", i + 1);
    c.options = base;
    c.options.values["assign"] = search.best[i].text;
    c.analytic_s = search.best[i].iteration_s;
    c.assignment = &search.best[i].assignment;
    candidates.push_back(c);
  }
  const std::size_t first_baseline = candidates.size();
  for (const char* name : {"dp", "lee", "hybrid"}) {
    Candidate c;
    c.label = name;
    c.options = base;
    c.options.name = name;
    c.options.values = nlohmann::json::object();
    try {
      validate_strategy_options(network, c.options);
      c.analytic_s = compute_metrics(make_analytic_engine()->run(build_schedule(network, platform, c.options), platform),
                                     MetricsDetail{false, false})
                         .iteration_s;
    } catch (const InputError&) {
      continue;  // e.g. lee's default k beyond a small network's layers
    }
    candidates.push_back(c);
  }
  bool rechecked = false;
#ifdef CNNPAR_HAVE_SIMGRID
  if (o.recheck > 0) {
    std::vector<Schedule> schedules;
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (i < std::size_t(o.recheck) || i >= first_baseline) schedules.push_back(build_schedule(network, platform, candidates[i].options));
    std::vector<std::pair<const Schedule*, const Platform*>> jobs;
    for (const Schedule& s : schedules) jobs.emplace_back(&s, &platform);
    Progress sim_progress("re-checking with SimGrid", o.progress, o.quiet);
    const std::vector<Trace> traces =
        simulate_many(jobs, SimgridOptions{}, [&](int done, int total) { sim_progress.update(done, total); });
    sim_progress.finish();
    std::size_t t = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (i < std::size_t(o.recheck) || i >= first_baseline)
        candidates[i].simgrid_s = compute_metrics(traces[t++], MetricsDetail{false, false}).iteration_s;
    rechecked = true;
  }
#endif
  // The winner: the fastest re-checked assignment on SimGrid (links shared, the closer model),
  // else the analytic search's first.
  std::size_t winner = 0;
  if (rechecked)
    for (std::size_t i = 1; i < first_baseline && i < std::size_t(o.recheck); ++i)
      if (candidates[i].simgrid_s < candidates[winner].simgrid_s) winner = i;
  const auto baseline = [&](const char* name, bool simgrid) {
    for (std::size_t i = first_baseline; i < candidates.size(); ++i)
      if (candidates[i].label == name) return simgrid ? candidates[i].simgrid_s : candidates[i].analytic_s;
    return 0.0;
  };
  const auto gain = [](double reference_s, double s) { return reference_s > 0 && s > 0 ? reference_s / s : 0.0; };

  const nlohmann::json file = assignment_file(network, *candidates[winner].assignment);
  nlohmann::json advice = {
      {"network", network.name},
      {"platform", platform.name},
      {"batch", o.batch},
      {"nodes", nodes},
      {"set", to_json(sets)},
      {"search",
       {{"method", search.exhaustive ? "exhaustive" : "steepest descent, 1- and 2-layer moves, from all-data, hybrid and the rule"},
        {"space", search.space},
        {"scored", search.scored},
        {"infeasible", search.infeasible},
        {"seconds", search.seconds}}},
      {"winner", {{"label", candidates[winner].label}, {"assign", candidates[winner].options.values["assign"]}, {"file", o.out}}}};
  nlohmann::json rule_json = nlohmann::json::array();
  for (const RuleRow& r : rule)
    rule_json.push_back({{"layer", r.name}, {"data_side", r.data_side}, {"model_side", r.model_side}, {"choice", to_string(r.choice)}});
  advice["rule"] = rule_json;
  nlohmann::json ranked = nlohmann::json::array();
  for (const ScoredAssignment& s : search.best)
    ranked.push_back({{"assign", s.text}, {"iteration_s", s.iteration_s}, {"exposed_comm_s", s.exposed_comm_s},
                      {"overlap_ratio_percent", s.overlap_ratio_percent}});
  advice["ranked"] = ranked;
  nlohmann::json checked = nlohmann::json::array();
  for (const Candidate& c : candidates) {
    nlohmann::json entry = {{"label", c.label}, {"strategy", c.options.name}, {"analytic_s", c.analytic_s},
                            {"gain_vs_dp_analytic", gain(baseline("dp", false), c.analytic_s)},
                            {"gain_vs_lee_analytic", gain(baseline("lee", false), c.analytic_s)}};
    if (c.options.name == "per_layer") entry["assign"] = c.options.values["assign"];
    if (c.simgrid_s > 0) {
      entry["simgrid_s"] = c.simgrid_s;
      entry["gain_vs_dp_simgrid"] = gain(baseline("dp", true), c.simgrid_s);
      entry["gain_vs_lee_simgrid"] = gain(baseline("lee", true), c.simgrid_s);
    }
    checked.push_back(entry);
  }
  advice["recheck"] = checked;

  OutputTransaction outputs;
  outputs.file(o.out, file.dump(2) + "\n");
  if (!o.json_out.empty()) outputs.file(o.json_out, advice.dump(2) + "\n");
  outputs.commit();
  if (o.quiet || o.json_out == "-" || o.out == "-") return 0;

  std::printf("%s on %s, batch %lld, %d nodes\n\n", network.name.c_str(), platform.name.c_str(),
              static_cast<long long>(o.batch), nodes);
  std::printf("The rule (Intel's note): model parallelism iff 3·in_w·in_h·MB < ofm·kw·kh, MB = %lld\n",
              static_cast<long long>(o.batch));
  std::printf("%-10s %16s %12s  %s\n", "layer", "3·in_w·in_h·MB", "ofm·kw·kh", "choice");
  for (const RuleRow& r : rule)
    std::printf("%-10s %16.0f %12.0f  %s\n", r.name.c_str(), r.data_side, r.model_side, to_string(r.choice));
  std::printf("\nThe search (analytic engine): %s over %zu assignments; %zu scored (%zu infeasible) in %s\n",
              search.exhaustive ? "exhaustive" : "steepest descent with 1- and 2-layer moves from all-data, hybrid and the rule",
              search.space, search.scored, search.infeasible, format_seconds(search.seconds).c_str());
  for (std::size_t i = 0; i < search.best.size(); ++i)
    std::printf("%3zu. %12s  R %5.1f %%  %s\n", i + 1, format_seconds(search.best[i].iteration_s).c_str(),
                search.best[i].overlap_ratio_percent, search.best[i].text.c_str());
  std::printf("\n%-8s %12s %12s %14s %14s\n", "", "analytic", rechecked ? "SimGrid" : "(no SimGrid)", "gain vs dp",
              "gain vs lee");
  for (const Candidate& c : candidates) {
    const bool sim = c.simgrid_s > 0;
    std::printf("%-8s %12s %12s %14s %14s\n", c.label.c_str(), format_seconds(c.analytic_s).c_str(),
                sim ? format_seconds(c.simgrid_s).c_str() : "-",
                (fmt::format("{:.2f}x", gain(baseline("dp", false), c.analytic_s)) +
                 (sim ? fmt::format(" / {:.2f}x", gain(baseline("dp", true), c.simgrid_s)) : ""))
                    .c_str(),
                (fmt::format("{:.2f}x", gain(baseline("lee", false), c.analytic_s)) +
                 (sim ? fmt::format(" / {:.2f}x", gain(baseline("lee", true), c.simgrid_s)) : ""))
                    .c_str());
  }
  std::printf("(gains: analytic / SimGrid)\n\nwinner %s, written to %s:\n  %s\nnext: cnnpar predict --strategy per_layer "
              "--assign %s --nodes %d   (or cnnpar run ... to measure it)\n",
              candidates[winner].label.c_str(), o.out.c_str(), candidates[winner].options.values["assign"].get<std::string>().c_str(),
              o.out.c_str(), nodes);
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
