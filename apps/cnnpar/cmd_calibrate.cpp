// `cnnpar calibrate`: runs `mpiexec -n P cnnpar-run --calibrate` and checks and summarises the
// platform JSON it writes (docs/formats.md "calibration").
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "apps/cnnpar/commands.hpp"
#include "apps/common/flags.hpp"
#include "base/child_process.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"
#include "base/units.hpp"
#include "launch/launcher.hpp"
#include "model/platform.hpp"
#include "model/scenarios.hpp"
#include "workload/conv_paths.hpp"
#include "workload/executor_network.hpp"
#include "workload/run_spec.hpp"

namespace cnnpar::cli {

namespace {

struct CalibrateOptions {
  std::string network;
  std::string platform = "local";
  std::string nodes = launch::default_rank_count();  // the allocation's nodes inside Slurm
  std::int64_t batch = 128;
  int repeats = 3;
  std::string out;
  double timeout_s = 60;
  std::string mpiexec = "mpiexec";
  bool mpiexec_given = false;  // --mpiexec on the command line (refused with --testbed)
  std::string hostfile;
  std::string testbed;
  std::string gemm = kDefaultGemmBackend;
  int threads = 0;  // 0 = OPENBLAS_NUM_THREADS, else the cores per rank
  double max_message_bytes = 256.0 * 1024 * 1024;
  bool max_message_given = false;
  bool op_seconds = false;
  std::string parts = kAllCalibrationParts;
  std::string inner = "gemm";  // the runs' inner mode, which nodes.inner prices
  std::string conv = kDefaultConvPaths.text();  // the runs' conv paths: anything but im2col also times direct ones
  // How the runs to be predicted execute: the network and progress parts measure that mode.
  std::string comm_progress = "poll";
  std::string collectives = "mpi";
  std::string compute = "real";
  double poll_interval_us = kDefaultPollIntervalUs;
};

int calibrate(const CalibrateOptions& o) {
  // Report bad input before starting MPI, including what the executor cannot train.
  const Network network = load_network(o.network);
  if (o.compute == "real") check_executor_network(network, load_scenario("networks", o.network).origin);
  load_platform(o.platform);
  const int nodes = flags::parse_one_node_count(o.nodes);
  check_output_path(o.out, "--out");
  // --batch is the global batch, as in `cnnpar run`: rank 0 measures every per-rank batch
  // from 1 to it, so any node count at that batch (or a smaller one) is covered.
  if (o.batch < 1) throw InputError("command line", "--batch", std::to_string(o.batch), "the global batch must be >= 1");
  if (!(o.max_message_bytes >= 1024 && o.max_message_bytes <= 2.0 * 1024 * 1024 * 1024))
    throw InputError("command line", "--max-message", fmt::format("{}", o.max_message_bytes),
                     "the largest message must be 1 KiB .. 2 GiB");
  check_run_number(RunNumber::timeout_s, o.timeout_s, "command line", "/timeout-s");
  check_run_number(RunNumber::repeats, o.repeats, "command line", "/repeats");
  check_gemm_backend_name(o.gemm, "command line", "/gemm");
  check_run_number(RunNumber::threads, o.threads, "command line", "/threads");
  check_run_number(RunNumber::poll_interval_us, o.poll_interval_us, "command line", "/poll-interval-us");
  const CalibrationParts parts = parse_calibration_parts(o.parts, "command line", "--calibrate-parts");
  parse_inner_mode(o.inner, "command line", "--inner");
  parse_conv_paths(o.conv, "command line", "--conv");
  if (o.comm_progress != "poll" && o.comm_progress != "thread")
    throw InputError("command line", "--comm-progress", o.comm_progress, "expected poll or thread");
  if (o.collectives != "mpi" && o.collectives != "p2p")
    throw InputError("command line", "--collectives", o.collectives, "expected mpi or p2p");
  if (o.compute != "real" && o.compute != "sleep")
    throw InputError("command line", "--compute", o.compute, "expected real or sleep");
  const launch::ExecutorLaunch where{.ranks = nodes,
                                    .mpiexec = o.mpiexec,
                                    .mpiexec_given = o.mpiexec_given,
                                    .hostfile = o.hostfile,
                                    .testbed = o.testbed,
                                    .threads = o.threads};
  const std::vector<std::string> launcher = launch::launcher_words(where);
  std::vector<std::string> args = {"--gemm", o.gemm,"--calibrate",  "--network",  o.network, "--platform", o.platform,
                                         "--batch",      std::to_string(o.batch), "--repeats", std::to_string(o.repeats),
                                         "--timeout-s",  fmt::format("{}", o.timeout_s), "--out", o.out,
                                         "--calibrate-parts", to_string(parts), "--comm-progress", o.comm_progress,
                                         "--collectives", o.collectives, "--compute", o.compute,
                                         "--poll-interval-us", fmt::format("{}", o.poll_interval_us), "--inner", o.inner,
                                         "--conv", o.conv};
  // Only a size the user asked for is measured however long it takes (else a 2 s bound).
  if (o.max_message_given) {
    args.push_back("--max-message");
    args.push_back(fmt::format("{}", o.max_message_bytes));
  }
  if (o.op_seconds) args.push_back("--op-seconds");
  const int status = launch::run_executor(where, launcher, args, "cnnpar calibrate", false);
  if (status != 0) {
    fmt::print(stderr, "cnnpar calibrate: cnnpar-run exited with status {}\n", status);
    return status == 2 ? 2 : 1;
  }
  const Platform platform = load_platform(o.out);  // the file must parse as a platform
  fmt::print("measured {} in {} progress with {} collectives; the rest is {}'s\n", to_string(parts), o.comm_progress,
             o.collectives, o.platform);
  fmt::print("compute{}: {} GEMM grid points, memory bandwidth {:.3f} GB/s, call overhead {:.2f} us, "
             "iteration overhead {:.3f} ms + {:.1f} us per image{}\n",
             parts.compute ? "" : " (from the base platform)", platform.measured_gemm_flops.size(),
             platform.nodes.memory_bandwidth_Bps / 1e9, platform.nodes.call_overhead_s * 1e6,
             platform.iteration_overhead_s * 1e3, platform.input_per_image_s * 1e6,
             platform.measured_op_s.empty() ? "" : fmt::format(", {} per-op overrides", platform.measured_op_s.size()));
  fmt::print("network: latency {:.3f} us, bandwidth {:.3f} GB/s, reduction rate {:.3f} GB/s, {} message-factor pieces, "
             "size factors for {} collective kinds{}{}\n",
             platform.network.latency_s * 1e6, platform.network.bandwidth_Bps / 1e9,
             platform.network.reduction_rate_Bps / 1e9, platform.network.message_factors.size(),
             platform.network.kind_size_factors.size(),
             platform.network.link_burst_bytes > 0
                 ? fmt::format("; token bucket {} bursting at {:.3f} GB/s", format_bytes(platform.network.link_burst_bytes),
                               platform.network.link_peak_bandwidth_Bps / 1e9)
                 : "",
             nodes >= 2 && parts.network ? " (measured)" : " (from the base platform)");
  fmt::print("progress: comm_compute_slowdown {:.3f}, network.busy_bandwidth_fraction {:.3f}, "
             "comm_start_wait_max {:.3f} ms{}\n",
             platform.comm_compute_slowdown, platform.network.busy_bandwidth_fraction,
             platform.comm_start_wait_max_s * 1e3, nodes >= 2 && parts.progress ? " (measured)" : " (from the base platform)");
  if (const InnerThreads& inner = platform.nodes.inner; inner.threads > 0) {
    std::string table;
    for (const auto& [mode, fractions] : inner.conv_efficiency)
      table += fmt::format(", {} {:.3f}", to_string(mode), fmt::join(fractions, " "));
    fmt::print("inner: runs use {} on {} threads; conv efficiency on 1, 2, ... threads{}{}\n", to_string(inner.mode),
               inner.threads, table, parts.inner ? " (measured)" : " (from the base platform)");
  }
  fmt::print("wrote {}\n", o.out);
  return 0;
}

}  // namespace

Runner add_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CalibrateOptions& o = *options;
  CLI::App* sub = app.add_subcommand("calibrate", "measure a GEMM grid, memory bandwidth and collective curves; write a platform JSON");
  flags::network(*sub, o.network)->required();
  flags::platform(*sub, o.platform);
  flags::nodes(*sub, o.nodes);
  flags::batch(*sub, o.batch);
  flags::repeats(*sub, o.repeats);
  sub->add_option("--out", o.out, "write the calibrated platform JSON here")->required();
  flags::timeout_s(*sub, o.timeout_s);
  CLI::Option* mpiexec = flags::mpiexec(*sub, o.mpiexec);
  flags::hostfile(*sub, o.hostfile);
  flags::testbed(*sub, o.testbed);
  flags::gemm(*sub, o.gemm);
  flags::threads(*sub, o.threads);
  CLI::Option* max_message = flags::max_message(*sub, o.max_message_bytes);
  flags::op_seconds(*sub, o.op_seconds);
  flags::calibrate_parts(*sub, o.parts);
  flags::inner(*sub, o.inner);
  flags::conv(*sub, o.conv);
  flags::comm_progress(*sub, o.comm_progress);
  flags::collectives(*sub, o.collectives);
  flags::compute(*sub, o.compute);
  flags::poll_interval_us(*sub, o.poll_interval_us);
  return [options, mpiexec, max_message] {
    options->mpiexec_given = mpiexec->count() > 0;
    options->max_message_given = max_message->count() > 0;
    return calibrate(*options);
  };
}

}  // namespace cnnpar::cli
