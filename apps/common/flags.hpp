#pragma once
// The flags that several commands share (`cnnpar` sub-commands and `cnnpar-run`): each is added
// by one function here, so it has one name, one argument syntax and one help text everywhere.
// Only its default may differ between commands (shown by --help as "=VALUE"): the prediction
// commands describe a cluster (VGG-A on Cori), the measuring ones this machine.
// tests/cli/help_consistency.py checks every command's --help against this rule.
#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace cnnpar::cli::flags {

CLI::Option* network(CLI::App& app, std::string& name_or_path);
CLI::Option* platform(CLI::App& app, std::string& name_or_path);
/** Global mini-batch N: images per iteration over all nodes. */
CLI::Option* batch(CLI::App& app, std::int64_t& images);
CLI::Option* iterations(CLI::App& app, int& iterations);
CLI::Option* warmup(CLI::App& app, int& iterations);
CLI::Option* uneven_batch(CLI::App& app, bool& allowed);
/** --set PATH=VALUE, repeatable (workload/overrides.hpp). */
CLI::Option* set_values(CLI::App& app, std::vector<std::string>& texts);
/** Node count P (one MPI rank per node). `text` takes the list syntax of parse_node_list;
 *  commands of one configuration refuse a list with parse_one_node_count. */
CLI::Option* nodes(CLI::App& app, std::string& text);
/** One node count from --nodes text. @throws InputError("command line", "--nodes", text, reason). */
int parse_one_node_count(const std::string& text);

CLI::Option* engine(CLI::App& app, std::string& name);
CLI::Option* network_model(CLI::App& app, std::string& name);
CLI::Option* platform_xml(CLI::App& app, std::string& path);

CLI::Option* json_out(CLI::App& app, std::string& path, const std::string& what);
CLI::Option* csv_out(CLI::App& app, std::string& path, const std::string& what);
CLI::Option* quiet(CLI::App& app, bool& quiet);
/** Progress on stderr: shown on a terminal anyway; the flag forces it into a pipe or a log. */
CLI::Option* progress(CLI::App& app, bool& forced);
/** The per-layer breakdown (analysis/layer_breakdown.hpp): --per-layer prints it (and adds it
 *  to --json), --layers-csv writes it. */
CLI::Option* per_layer(CLI::App& app, bool& print);
CLI::Option* layers_csv(CLI::App& app, std::string& path);

// The MPI executor's settings (cnnpar run, cnnpar calibrate, cnnpar-run).
CLI::Option* seed(CLI::App& app, std::string& text);
CLI::Option* learning_rate(CLI::App& app, double& rate);
CLI::Option* momentum(CLI::App& app, double& momentum);
CLI::Option* weight_decay(CLI::App& app, double& decay);
CLI::Option* dataset(CLI::App& app, std::string& text);
CLI::Option* compute(CLI::App& app, std::string& mode);
/** How collectives progress while ranks compute: poll | thread. */
CLI::Option* comm_progress(CLI::App& app, std::string& mode);
CLI::Option* collectives(CLI::App& app, std::string& mode);
CLI::Option* poll_interval_us(CLI::App& app, double& interval_us);
CLI::Option* timeout_s(CLI::App& app, double& timeout_s);
CLI::Option* threads(CLI::App& app, int& threads);
CLI::Option* gemm(CLI::App& app, std::string& backend);
CLI::Option* concurrency(CLI::App& app, int& collectives);
CLI::Option* trace_out(CLI::App& app, std::string& path);
CLI::Option* weights_out(CLI::App& app, std::string& path);
CLI::Option* checkpoint(CLI::App& app, std::string& directory);
CLI::Option* checkpoint_every(CLI::App& app, int& iterations);
CLI::Option* resume(CLI::App& app, bool& resume);
CLI::Option* repeats(CLI::App& app, int& repeats);
CLI::Option* max_message(CLI::App& app, double& bytes);
CLI::Option* op_seconds(CLI::App& app, bool& op_seconds);
/** --calibrate-parts compute,network,progress (workload/run_spec.hpp parse_calibration_parts). */
CLI::Option* calibrate_parts(CLI::App& app, std::string& parts);
/** --conv im2col|direct|winograd|auto|LAYER[:PATH],... (workload/conv_paths.hpp): how each
 *  conv layer runs; one help text for the strategy flags and `cnnpar calibrate`. */
CLI::Option* conv(CLI::App& app, std::string& paths);
/** --inner gemm|dag (model/inner_mode.hpp): how a rank runs its conv layers. */
CLI::Option* inner(CLI::App& app, std::string& mode);
/** --slowdown RANK:FACTOR, repeatable (workload/run_spec.hpp add_slowdown parses each). */
CLI::Option* slowdown(CLI::App& app, std::vector<std::string>& texts);

// Launching cnnpar-run (cnnpar run, cnnpar calibrate).
CLI::Option* mpiexec(CLI::App& app, std::string& command);
CLI::Option* hostfile(CLI::App& app, std::string& path);
/** --testbed NAME: launch through that testbed's mpiexec (launch/launcher.hpp testbed_launcher). */
CLI::Option* testbed(CLI::App& app, std::string& name);

}  // namespace cnnpar::cli::flags
