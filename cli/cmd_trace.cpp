// `cnnpar trace`: one configuration replayed by an engine; writes its Trace JSON and,
// optionally, a Chrome trace (chrome://tracing, Perfetto).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "analysis/chrome_trace.hpp"
#include "analysis/metrics.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "model/error.hpp"
#include "model/strategies/strategy.hpp"
#include "model/trace.hpp"
#include "model/units.hpp"
#include "sim/analytic/analytic_engine.hpp"
#ifdef CNNPAR_HAVE_SIMGRID
#include "sim/simgrid/simgrid_engine.hpp"
#endif

namespace cnnpar::cli {

namespace {

struct TraceOptions {
  ScenarioOptions scenario;
  int nodes = 8;
  std::string engine = "analytic";
  std::string out = "trace.json";
  std::string chrome_out;
  bool quiet = false;
};

int run_trace(const TraceOptions& o) {
  check_output_path(o.out, "--out");
  check_output_path(o.chrome_out, "--chrome");
  if (o.engine != "analytic" && o.engine != "simgrid")
    throw InputError("command line", "--engine", o.engine, "expected analytic or simgrid");
  LoadedScenario s = load_scenario_options(o.scenario);
  s.strategy.ranks = o.nodes;
  const Schedule schedule = build_schedule(s.network, s.platform, s.strategy);
  Trace trace;
  if (o.engine == "analytic") {
    trace = make_analytic_engine()->run(schedule, s.platform);
  } else {
#ifdef CNNPAR_HAVE_SIMGRID
    trace = make_simgrid_engine()->run(schedule, s.platform);
#else
    throw InputError("command line", "--engine", o.engine,
                     "this cnnpar was built without SimGrid (configure with CNNPAR_WITH_SIMGRID=ON)");
#endif
  }
  const TraceMetrics m = compute_metrics(trace);
  OutputTransaction outputs;
  outputs.file(o.out, to_json(trace).dump() + "\n");
  if (!o.chrome_out.empty()) outputs.file(o.chrome_out, to_chrome_trace(trace).dump() + "\n");
  outputs.commit();
  if (!o.quiet)
    std::printf("%s, %d nodes (%s): iteration %s, compute %s, comm %s, exposed %s, R %.1f%%\ntrace: %s%s%s\n",
                s.strategy.name.c_str(), o.nodes, trace.engine.c_str(), format_seconds(m.iteration_s).c_str(),
                format_seconds(m.compute_max_s).c_str(), format_seconds(m.comm_s).c_str(),
                format_seconds(m.exposed_comm_s).c_str(), m.overlap_ratio_percent, o.out.c_str(),
                o.chrome_out.empty() ? "" : ", chrome trace: ", o.chrome_out.c_str());
  return 0;
}

}  // namespace

Runner add_trace_command(CLI::App& app) {
  auto o = std::make_shared<TraceOptions>();
  CLI::App* sub = app.add_subcommand("trace", "replay one configuration and write its Trace (and a Chrome trace)");
  add_scenario_options(*sub, o->scenario);
  sub->add_option("--nodes", o->nodes, "node count P")->capture_default_str();
  sub->add_option("--engine", o->engine, "analytic | simgrid")->capture_default_str();
  sub->add_option("--out,-o", o->out, "Trace JSON output")->capture_default_str();
  sub->add_option("--chrome", o->chrome_out, "also write a Chrome trace-event JSON here");
  sub->add_flag("--quiet,-q", o->quiet, "print nothing on success");
  return [o] { return run_trace(*o); };
}

}  // namespace cnnpar::cli
