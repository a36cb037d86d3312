// cnnpar: predict, simulate, balance, trace, compare, report, testbed (and run/calibrate, fit when built).
// The only place that turns exceptions into exit codes: 0 ok, 1 failure, 2 bad input.
#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/cnnpar/commands.hpp"
#include "apps/common/strategy_flags.hpp"
#include "base/error.hpp"
#include "engines/registry.hpp"

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // Keep freed trace memory in the heap: a sweep allocates and frees large Traces one after the
  // other, and returning them to the kernel each time made page faults half the sweep's time.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
  CLI::App app{"cnnpar: predict and measure how CNN training scales over nodes.\n"
               "With no sub-command: predict VGG-A on Cori Haswell with lee (k 9, f 2), batch 256, 1-128 nodes."};
  cnnpar::cli::set_one_line_failure_message(app, "cnnpar");  // before the sub-commands copy it
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("cnnpar ") + CNNPAR_VERSION);
  std::map<CLI::App*, cnnpar::cli::Runner> runners;
  const auto add = [&](cnnpar::cli::Runner runner, const char* name) {
    runners[app.get_subcommand(name)] = std::move(runner);
  };
  add(cnnpar::cli::add_predict_command(app), "predict");
  const std::vector<std::string> engines = cnnpar::engine_names();
  if (std::find(engines.begin(), engines.end(), "simgrid") != engines.end())
    add(cnnpar::cli::add_simulate_command(app), "simulate");
  add(cnnpar::cli::add_balance_command(app), "balance");
  add(cnnpar::cli::add_trace_command(app), "trace");
  add(cnnpar::cli::add_compare_command(app), "compare");
  add(cnnpar::cli::add_report_command(app), "report");
  add(cnnpar::cli::add_sweep_command(app), "sweep");
  add(cnnpar::cli::add_advise_command(app), "advise");
  add(cnnpar::cli::add_layers_command(app), "layers");
  add(cnnpar::cli::add_list_command(app), "list");
#ifdef CNNPAR_HAVE_FIT
  add(cnnpar::cli::add_fit_command(app), "fit");
#endif
#ifdef CNNPAR_HAVE_RUN_COMMANDS
  add(cnnpar::cli::add_run_command(app), "run");
  add(cnnpar::cli::add_calibrate_command(app), "calibrate");
  add(cnnpar::cli::add_validate_command(app), "validate");
#endif
  add(cnnpar::cli::add_testbed_command(app), "testbed");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;  // a command line that does not parse is bad input
  }
  try {
    for (const auto& [sub, runner] : runners)
      if (sub->parsed()) return runner();
    // No sub-command: the embedded default scenario (predict's defaults).
    return runners.at(app.get_subcommand("predict"))();
  } catch (const cnnpar::InterruptedError& e) {
    fmt::print(stderr, "cnnpar: {}\n", e.what());
    return 128 + e.signal();
  } catch (const cnnpar::InputError& e) {
    fmt::print(stderr, "cnnpar: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnnpar: error: {}\n", e.what());
    return 1;
  }
}
