#pragma once
// Sub-commands of `cnnpar`. Each add_*_command registers its options on `app` and returns
// the function main() calls when that sub-command was chosen. Runners return the exit
// status; they throw InputError for bad input (main maps it to status 2).
#include <functional>

#include <CLI/CLI.hpp>

namespace cnnpar::cli {

using Runner = std::function<int()>;

Runner add_predict_command(CLI::App& app);    ///< predict (and simulate = predict --engine simgrid)
Runner add_simulate_command(CLI::App& app);
Runner add_balance_command(CLI::App& app);
Runner add_trace_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_report_command(CLI::App& app);
Runner add_sweep_command(CLI::App& app);
Runner add_advise_command(CLI::App& app);     ///< the per-layer advisor: rule, search, SimGrid re-check      ///< axes × node counts, one CSV row each (resumable)
Runner add_layers_command(CLI::App& app);     ///< a network's layers, shapes, parameters and MACs
Runner add_list_command(CLI::App& app);       ///< networks, platforms, strategies, studies     ///< studies -> reports/ (CSV, Markdown, SVG)
Runner add_fit_command(CLI::App& app);        ///< platform parameters fitted to observations (GSL)
Runner add_run_command(CLI::App& app);        ///< launches cnnpar-run under mpiexec (real/ helper)
Runner add_calibrate_command(CLI::App& app);  ///< launches cnnpar-run calibration (real/ helper)
Runner add_validate_command(CLI::App& app);   ///< calibrate, predict, run and report a validation grid
Runner add_testbed_command(CLI::App& app);    ///< create, destroy, status, run: a shaped namespace cluster (testbed/)

}  // namespace cnnpar::cli
