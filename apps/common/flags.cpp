#include "apps/common/flags.hpp"

#include <charconv>

#include "base/error.hpp"
#include "base/limits.hpp"
#include "workload/run_spec.hpp"

namespace cnnpar::cli::flags {

CLI::Option* network(CLI::App& app, std::string& name_or_path) {
  return app.add_option("--network", name_or_path, "network name (scenarios/networks, `cnnpar list networks`) or JSON path")
      ->capture_default_str();
}

CLI::Option* platform(CLI::App& app, std::string& name_or_path) {
  return app
      .add_option("--platform", name_or_path,
                  "platform name (scenarios/platforms, `cnnpar list platforms`) or JSON path: the cluster predicted, "
                  "and the op times of sleep compute")
      ->capture_default_str();
}

CLI::Option* batch(CLI::App& app, std::int64_t& images) {
  return app.add_option("--batch", images, "global mini-batch N: images per iteration over all nodes (each takes N/P)")
      ->capture_default_str();
}

CLI::Option* iterations(CLI::App& app, int& iterations) {
  return app.add_option("--iterations", iterations, "iterations, warm-up included")->capture_default_str();
}

CLI::Option* warmup(CLI::App& app, int& iterations) {
  return app.add_option("--warmup", iterations, "leading iterations excluded from the metrics")->capture_default_str();
}

CLI::Option* uneven_batch(CLI::App& app, bool& allowed) {
  return app.add_flag("--uneven-batch", allowed,
                      "allow a batch that the node count does not divide (ranks take ceil or floor of N/P images)");
}

CLI::Option* nodes(CLI::App& app, std::string& text) {
  return app
      .add_option("--nodes,-n", text,
                  "node count P, one MPI rank per node; predict and simulate take a list: \"1-128\" doubles (1, 2, 4, "
                  "..., 128), \"1-128:1\" is every count, \"1,3,5\"")
      ->type_name("NODES")
      ->capture_default_str();
}

int parse_one_node_count(const std::string& text) {
  int count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw InputError("command line", "--nodes", text,
                     "expected one node count here (lists like \"1-128\" are for predict and simulate)");
  if (count < 1 || count > limits::kMaxRanks)
    throw InputError("command line", "--nodes", text, "must be an integer in [1, " + std::to_string(limits::kMaxRanks) + "]");
  return count;
}

CLI::Option* engine(CLI::App& app, std::string& name) {
  return app.add_option("--engine", name, "analytic | simgrid")->capture_default_str();
}

CLI::Option* network_model(CLI::App& app, std::string& name) {
  return app.add_option("--network-model", name, "SimGrid network model (engine simgrid): CM02 | LV08")
      ->capture_default_str();
}

CLI::Option* platform_xml(CLI::App& app, std::string& path) {
  return app.add_option("--platform-xml", path,
                        "SimGrid XML platform used instead of the platform's network (engine simgrid; its hosts take the "
                        "ranks in declaration order, compute times still come from --platform)");
}

CLI::Option* json_out(CLI::App& app, std::string& path, const std::string& what) {
  return app.add_option("--json", path, "write " + what + " as JSON here (- = standard output)");
}

CLI::Option* csv_out(CLI::App& app, std::string& path, const std::string& what) {
  return app.add_option("--csv", path, "write " + what + " as CSV here (- = standard output)");
}

CLI::Option* quiet(CLI::App& app, bool& quiet) {
  return app.add_flag("--quiet,-q", quiet, "print nothing on success");
}

CLI::Option* progress(CLI::App& app, bool& forced) {
  return app.add_flag("--progress", forced, "show progress on stderr even when it is not a terminal");
}

CLI::Option* slowdown(CLI::App& app, std::vector<std::string>& texts) {
  return app.add_option("--slowdown", texts,
                        "make rank RANK compute FACTOR times as slowly (RANK:FACTOR, FACTOR in [1, 100]; repeatable): a "
                        "heterogeneous node for real; the prediction slows that node down alike")
      ->type_name("RANK:FACTOR")
      ->allow_extra_args(false);
}

CLI::Option* set_values(CLI::App& app, std::vector<std::string>& texts) {
  return app.add_option("--set", texts,
                        "override a platform value in the platform JSON's own path and units (network.bandwidth=1Gbps, "
                        "nodes.efficiency.gemm=0.45) or a strategy option (k=9); repeatable")
      ->type_name("PATH=VALUE")
      ->allow_extra_args(false);
}

CLI::Option* per_layer(CLI::App& app, bool& print) {
  return app.add_flag("--per-layer", print,
                      "print compute, communication, exposed communication and bytes per layer (predict: at the "
                      "largest node count; also in --json)");
}

CLI::Option* layers_csv(CLI::App& app, std::string& path) {
  return app.add_option("--layers-csv", path,
                        "write the per-layer breakdown, a row per layer and phase, as CSV here (- = standard output)");
}

CLI::Option* seed(CLI::App& app, std::string& text) {
  return app.add_option("--seed", text, "seed of the weights, the synthetic data and dropout")
      ->type_name("UINT")
      ->capture_default_str();
}

CLI::Option* learning_rate(CLI::App& app, double& rate) {
  return app.add_option("--lr", rate, "SGD learning rate")->capture_default_str();
}

CLI::Option* momentum(CLI::App& app, double& momentum) {
  return app.add_option("--momentum", momentum, "SGD momentum, in [0, 1)")->capture_default_str();
}

CLI::Option* weight_decay(CLI::App& app, double& decay) {
  return app.add_option("--weight-decay", decay, "SGD weight decay (weights only, not biases)")->capture_default_str();
}

CLI::Option* dataset(CLI::App& app, std::string& text) {
  return app.add_option("--dataset", text, "synthetic | cifar10:PATH (file or directory) | mnist:DIR")
      ->capture_default_str();
}

CLI::Option* compute(CLI::App& app, std::string& mode) {
  return app.add_option("--compute", mode, "real (kernels) | sleep (each op sleeps its modelled time on --platform)")
      ->capture_default_str();
}

CLI::Option* comm_progress(CLI::App& app, std::string& mode) {
  return app
      .add_option("--comm-progress", mode,
                  "how collectives progress during compute: poll (MPI_Test between ops and GEMM tiles) | thread (a "
                  "communication thread, Lee et al.)")
      ->capture_default_str();
}

CLI::Option* collectives(CLI::App& app, std::string& mode) {
  return app
      .add_option("--collectives", mode,
                  "mpi (the MPI library's MPI_I* collectives) | p2p (the steps the engines price, as MPI_Isend/Irecv)")
      ->capture_default_str();
}

CLI::Option* poll_interval_us(CLI::App& app, double& interval_us) {
  return app.add_option("--poll-interval-us", interval_us, "least time between polls inside an op (microseconds)")
      ->capture_default_str();
}

CLI::Option* timeout_s(CLI::App& app, double& timeout_s) {
  return app.add_option("--timeout-s", timeout_s, "abort when a wait sees no completion for this long (seconds)")
      ->capture_default_str();
}

CLI::Option* threads(CLI::App& app, int& threads) {
  return app.add_option("--threads", threads,
                        "compute threads per rank: GEMMs, im2col/col2im, pooling, element-wise ops, SGD (0 = "
                        "OPENBLAS_NUM_THREADS; unset, cnnpar run and calibrate use cores / ranks, cnnpar-run 1)")
      ->capture_default_str();
}

CLI::Option* gemm(CLI::App& app, std::string& backend) {
  return app.add_option("--gemm", backend, "GEMM back-end of cnnpar-run: openblas | onednn (built with CNNPAR_ONEDNN)")
      ->capture_default_str();
}

CLI::Option* concurrency(CLI::App& app, int& collectives) {
  return app.add_option("--concurrency", collectives, "collectives run at once (0 = the platform's collective_concurrency)")
      ->capture_default_str();
}

CLI::Option* trace_out(CLI::App& app, std::string& path) {
  return app.add_option("--trace", path, "write the measured Trace JSON here");
}

CLI::Option* weights_out(CLI::App& app, std::string& path) {
  return app.add_option("--weights-out", path, "write the final weights here (flat FP32, the network's layer order)");
}

CLI::Option* checkpoint(CLI::App& app, std::string& directory) {
  return app.add_option("--checkpoint", directory,
                        "directory for checkpoint.bin (written at the end, and every --checkpoint-every iterations)");
}

CLI::Option* checkpoint_every(CLI::App& app, int& iterations) {
  return app.add_option("--checkpoint-every", iterations,
                        "also write the checkpoint after every N global iterations (0 = only at the end)")
      ->capture_default_str();
}

CLI::Option* resume(CLI::App& app, bool& resume) {
  return app.add_flag("--resume", resume,
                      "continue from <checkpoint>/checkpoint.bin up to --iterations in total (same batch, strategy, "
                      "nodes, seed, data, SGD settings)");
}

CLI::Option* repeats(CLI::App& app, int& repeats) {
  return app.add_option("--repeats", repeats,
                        "calibration: timed repetitions (passes over the batches; the median is kept)")
      ->capture_default_str();
}

CLI::Option* max_message(CLI::App& app, double& bytes) {
  return app.add_option("--max-message", bytes,
                        "calibration: largest collective size measured, bytes (sizes double from 1 KiB)")
      ->capture_default_str();
}

CLI::Option* op_seconds(CLI::App& app, bool& op_seconds) {
  return app.add_flag("--op-seconds", op_seconds,
                      "calibration: also store per-op seconds at the global batch (calibration.op_seconds, an "
                      "explicit override that wins over the GEMM grid and the roofline whatever the batch)");
}

CLI::Option* calibrate_parts(CLI::App& app, std::string& parts) {
  return app
      .add_option("--calibrate-parts", parts,
                  "calibration: what to measure, a comma list of compute (GEMM grid, memory, overheads), network "
                  "(collective curves), progress (comm_compute_slowdown, busy_bandwidth_fraction in the "
                  "--comm-progress mode) and inner (not by default: the conv layers in each --inner mode on 1..cores "
                  "threads, nodes.inner); the rest keeps the --platform's values")
      ->capture_default_str();
}

CLI::Option* conv(CLI::App& app, std::string& paths) {
  return app
      .add_option("--conv", paths,
                  "conv layers: im2col (im2col + GEMM, col2im) | direct (oneDNN's direct convolutions in the executor, "
                  "priced as kernel class conv) | winograd (oneDNN's Winograd F(4x4,3x3) for 3x3 stride-1 layers, "
                  "kernel class winograd; needs AVX-512; the other layers direct) | LAYER[:direct|winograd],... (those "
                  "layers; a bare name is direct) | auto (each layer's fastest path: by the platform's "
                  "calibration.conv_flops and winograd_flops where it has them, else im2col in a prediction and timed "
                  "at start-up in a real run); calibrate: anything but im2col also times every conv layer as a direct "
                  "convolution (calibration.conv_flops) and, where the CPU runs them, as a Winograd one "
                  "(calibration.winograd_flops)")
      ->capture_default_str();
}

CLI::Option* inner(CLI::App& app, std::string& mode) {
  return app
      .add_option("--inner", mode,
                  "conv forward and weight gradient: gemm (im2col + one GEMM on the --threads threads) | dag (BPT-CNN's "
                  "inner-layer tasks over output areas, a oneTBB task graph on --threads threads)")
      ->capture_default_str();
}

CLI::Option* mpiexec(CLI::App& app, std::string& command) {
  return app
      .add_option("--mpiexec", command,
                  "launcher command, split like a shell (quotes, backslashes; no expansion), e.g. \"srun --mpi=pmi2\" "
                  "or \"mpiexec -f hosts\"; `-n P cnnpar-run ...` is appended")
      ->capture_default_str();
}

CLI::Option* hostfile(CLI::App& app, std::string& path) {
  return app.add_option("--hostfile", path, "MPICH host file (lines host:slots), passed to mpiexec as -f FILE");
}

CLI::Option* testbed(CLI::App& app, std::string& name) {
  return app.add_option("--testbed", name,
                        "run the ranks on this testbed's nodes, one per node, over its shaped links (`cnnpar testbed "
                        "create`; root), instead of --mpiexec and --hostfile");
}

}  // namespace cnnpar::cli::flags
