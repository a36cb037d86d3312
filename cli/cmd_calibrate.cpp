// `cnnpar calibrate`: runs `mpiexec -n P cnnpar-run --calibrate` and checks and summarises the
// platform JSON it writes (docs/formats.md "calibration").
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/mpi_launch.hpp"
#include "model/child_process.hpp"
#include "model/error.hpp"
#include "model/run_spec.hpp"
#include "model/platform.hpp"
#include "model/scenarios.hpp"

namespace cnnpar::cli {

namespace {

struct CalibrateOptions {
  std::string network;
  std::string platform = "local";
  int ranks = 2;
  std::int64_t batch = 64;
  int repeats = 3;
  std::string out;
  double timeout_s = 60;
  std::string mpiexec = "mpiexec";
  std::vector<std::string> mpiexec_args;
  std::string gemm = kDefaultGemmBackend;
  int threads = 0;  // 0 = OPENBLAS_NUM_THREADS, else the cores per rank
};

int calibrate(const CalibrateOptions& o) {
  load_network(o.network);  // report bad input before starting MPI
  load_platform(o.platform);
  if (o.ranks < 1) throw InputError("command line", "/ranks", std::to_string(o.ranks), "must be >= 1");
  check_gemm_backend_name(o.gemm, "command line", "/gemm");
  check_run_number(RunNumber::threads, o.threads, "command line", "/threads");
  if (o.threads > 0) ::setenv("OPENBLAS_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  const std::vector<std::string> args = {"--gemm", o.gemm,"--calibrate",  "--network",  o.network, "--platform", o.platform,
                                         "--batch",      std::to_string(o.batch), "--repeats", std::to_string(o.repeats),
                                         "--timeout-s",  fmt::format("{}", o.timeout_s), "--out", o.out};
  const auto command = mpi_launch::command(o.mpiexec, o.mpiexec_args, o.ranks, mpi_launch::find_executor(), args);
  const std::string blas_threads = mpi_launch::default_blas_threads(o.ranks);
  std::string shown = "OPENBLAS_NUM_THREADS=" + blas_threads;
  for (const auto& part : command) shown += (shown.empty() ? "" : " ") + part;
  std::printf("cnnpar calibrate: %s\n", shown.c_str());
  const int status = run_child(command);
  if (status != 0) {
    std::fprintf(stderr, "cnnpar calibrate: cnnpar-run exited with status %d\n", status);
    return status == 2 ? 2 : 1;
  }
  const Platform platform = load_platform(o.out);  // the file must parse as a platform
  std::printf("%-28s %14s\n", "GEMM shape", "GFLOP/s");
  for (const auto& [shape, rate] : platform.measured_gemm_flops) std::printf("%-28s %14.2f\n", shape.c_str(), rate / 1e9);
  std::vector<std::pair<std::string, double>> ops(platform.measured_op_s.begin(), platform.measured_op_s.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::printf("%-28s %14s\n", "op (slowest first)", "ms");
  for (std::size_t i = 0; i < std::min<std::size_t>(ops.size(), 10); ++i)
    std::printf("%-28s %14.4f\n", ops[i].first.c_str(), ops[i].second * 1e3);
  std::printf("network: latency %.3f us, bandwidth %.3f GB/s%s\n", platform.network.latency_s * 1e6,
              platform.network.bandwidth_Bps / 1e9, o.ranks >= 2 ? " (measured)" : " (from the base platform)");
  std::printf("wrote %s\n", o.out.c_str());
  return 0;
}

}  // namespace

Runner add_calibrate_command(CLI::App& app) {
  auto options = std::make_shared<CalibrateOptions>();
  CalibrateOptions& o = *options;
  CLI::App* sub = app.add_subcommand("calibrate", "measure GEMM rates, op times and MPI latency/bandwidth; write a platform JSON");
  sub->add_option("--network", o.network, "network whose ops and GEMM shapes are timed")->required();
  sub->add_option("--platform", o.platform, "base platform the measurements are written into")->capture_default_str();
  sub->add_option("--ranks,-n", o.ranks, "MPI ranks (>= 2 measures the network)")->capture_default_str();
  sub->add_option("--batch", o.batch, "images per rank the ops are timed at")->capture_default_str();
  sub->add_option("--repeats", o.repeats, "timed repetitions per op (fastest kept)")->capture_default_str();
  sub->add_option("--out", o.out, "platform JSON to write")->required();
  sub->add_option("--timeout-s", o.timeout_s, "abort a stalled job after this many seconds")->capture_default_str();
  sub->add_option("--mpiexec", o.mpiexec, "MPI launcher")->capture_default_str();
  sub->add_option("--mpiexec-arg", o.mpiexec_args, "extra launcher argument (repeatable)");
  sub->add_option("--gemm", o.gemm, "GEMM back-end measured: openblas | onednn (use the one the runs will use)")
      ->capture_default_str();
  sub->add_option("--threads", o.threads, "compute threads per rank (default: OPENBLAS_NUM_THREADS, else cores / ranks)");
  return [options] { return calibrate(*options); };
}

}  // namespace cnnpar::cli
