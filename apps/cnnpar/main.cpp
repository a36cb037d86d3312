// cnnpar: predict, simulate, balance, trace, compare, report, testbed (and run/calibrate, fit when built).
// The only place that turns exceptions into exit codes: 0 ok, 1 failure, 2 bad input.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/cnnpar/commands.hpp"
#include "apps/common/strategy_flags.hpp"
#include "base/error.hpp"
#include "base/freed_memory.hpp"
#include "engines/registry.hpp"

int main(int argc, char** argv) {
  // Keep freed trace memory in the heap: a sweep allocates and frees large Traces one after the
  // other, and returning them to the kernel each time made page faults half the sweep's time.
  cnnpar::set_freed_memory(cnnpar::FreedMemory::kept);
  CLI::App app{"cnnpar: predict and measure how CNN training scales over nodes.\n"
               "With no sub-command: predict VGG-A on Cori Haswell with lee (k 9, f 2), batch 256, 1-128 nodes."};
  cnnpar::cli::set_one_line_failure_message(app, "cnnpar");  // before the sub-commands copy it
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("cnnpar ") + CNNPAR_VERSION);
  using Adder = cnnpar::cli::Runner (*)(CLI::App&);
  const std::vector<std::string> engines = cnnpar::engine_names();
  const bool has_simgrid = std::find(engines.begin(), engines.end(), "simgrid") != engines.end();
  std::vector<std::pair<const char*, Adder>> commands = {
      {"predict", cnnpar::cli::add_predict_command},
      {"simulate", cnnpar::cli::add_simulate_command},
      {"balance", cnnpar::cli::add_balance_command},
      {"trace", cnnpar::cli::add_trace_command},
      {"compare", cnnpar::cli::add_compare_command},
      {"report", cnnpar::cli::add_report_command},
      {"sweep", cnnpar::cli::add_sweep_command},
      {"advise", cnnpar::cli::add_advise_command},
      {"layers", cnnpar::cli::add_layers_command},
      {"list", cnnpar::cli::add_list_command},
#ifdef CNNPAR_HAVE_FIT
      {"fit", cnnpar::cli::add_fit_command},
#endif
#ifdef CNNPAR_HAVE_RUN_COMMANDS
      {"run", cnnpar::cli::add_run_command},
      {"calibrate", cnnpar::cli::add_calibrate_command},
      {"validate", cnnpar::cli::add_validate_command},
#endif
      {"testbed", cnnpar::cli::add_testbed_command}};
  if (!has_simgrid)
    std::erase_if(commands, [](const auto& command) { return std::strcmp(command.first, "simulate") == 0; });
  // A command named first is the only one built (each adds its tens of options: about half a
  // millisecond of every start); otherwise all are, for the help, the default and the errors.
  const char* first = argc > 1 ? argv[1] : "";
  const bool named = std::any_of(commands.begin(), commands.end(),
                                 [&](const auto& command) { return std::strcmp(command.first, first) == 0; });
  std::map<CLI::App*, cnnpar::cli::Runner> runners;
  for (const auto& [name, adder] : commands)
    if (!named || std::strcmp(name, first) == 0) {
      cnnpar::cli::Runner runner = adder(app);
      runners[app.get_subcommand(name)] = std::move(runner);
    }
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
