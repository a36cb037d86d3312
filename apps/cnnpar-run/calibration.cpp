// --calibrate: the checks of its options, the calibration on every rank, and rank 0's report
// of the fit against the measurements.
#include "apps/cnnpar-run/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "apps/cnnpar-run/backends.hpp"
#include "apps/cnnpar-run/failure.hpp"
#include "apps/cnnpar-run/setup.hpp"
#include "base/error.hpp"
#include "base/output_files.hpp"
#include "model/scenarios.hpp"
#include "real/calibrate.hpp"
#include "real/kernels_conv_direct.hpp"
#include "real/mpi_wrap.hpp"
#include "real/probe.hpp"

namespace cnnpar::executor {

namespace {

void print_compute_calibration(const ComputeSummary& c, const Platform& p);
void print_network_calibration(const CalibrationResult& result);
void print_progress_calibration(const CalibrationResult& result);

/** The calibration's report on rank 0: the compute fit, per collective and size the measured
 *  time against what the fitted platform's step pricing gives, and the progress mechanisms. */
void print_calibration(const CalibrationResult& result) {
  const ComputeSummary& c = result.compute;
  const Platform& p = result.platform;
  const CalibrationParts& m = result.measured;
  fmt::print("cnnpar-run: measured {}; kept from the base platform: {}\n", to_string(m),
             to_string(CalibrationParts{!m.compute, !m.network, !m.progress}));
  if (m.compute) print_compute_calibration(c, p);
  if (m.network) print_network_calibration(result);
  if (m.progress) print_progress_calibration(result);
  if (m.inner) {
    const InnerThreads& inner = p.nodes.inner;
    for (const auto& [mode, fractions] : inner.conv_efficiency) {
      const std::vector<double>& seconds = result.inner.seconds.at(to_string(mode));
      for (std::size_t t = 0; t < fractions.size(); ++t)
        fmt::print("cnnpar-run: inner {} on {} threads: conv forward + weight gradient {:.4f} s per iteration at per-rank "
                   "batch {}, {:.3f} of {} cores' peak\n",
                   to_string(mode), t + 1, seconds[t], result.inner.batch, fractions[t], t + 1);
    }
  }
}

void print_compute_calibration(const ComputeSummary& c, const Platform& p) {
  fmt::print("cnnpar-run: GEMM grid: {} points (per-rank batches {}..{}), {} outlying repeats\n", c.gemm_points,
             c.batches.front(), c.batches.back(), c.gemm_outliers);
  if (c.conv_points > 0) fmt::print("cnnpar-run: direct convolution grid: {} points\n", c.conv_points);
  if (c.winograd_points > 0) fmt::print("cnnpar-run: Winograd convolution grid: {} points\n", c.winograd_points);
  fmt::print("cnnpar-run: non-GEMM kernels: memory bandwidth {:.3f} GB/s, call overhead {:.2f} us ({} ops: {} outlying "
             "repeats, {} ops beyond 3 MADs of the fit); iteration overhead {:.3f} ms + {:.1f} us per image\n",
             p.nodes.memory_bandwidth_Bps / 1e9, p.nodes.call_overhead_s * 1e6, c.memory_points, c.op_outliers,
             c.memory.outliers, p.iteration_overhead_s * 1e3, p.input_per_image_s * 1e6);
  if (!p.nodes.kernel_memory_bandwidth_Bps.empty()) {
    std::vector<std::string> classes;
    for (const auto& [kernel, bandwidth_Bps] : p.nodes.kernel_memory_bandwidth_Bps)
      classes.push_back(fmt::format("{} {:.3f}", to_string(kernel), bandwidth_Bps / 1e9));
    fmt::print("cnnpar-run: memory bandwidth by kernel class (GB/s): {}\n", fmt::join(classes, ", "));
  }
  if (c.measured_iteration_s > 0)
    fmt::print("cnnpar-run: iteration at per-rank batch {}: measured {:.4f} s, modelled {:.4f} s ({:+.1f} %)\n",
               c.batches.back(), c.measured_iteration_s, c.modelled_iteration_s,
               100.0 * (c.modelled_iteration_s / c.measured_iteration_s - 1));
  for (const auto& [kernel, seconds] : c.per_class_s)
    fmt::print("  {:<8} measured {:.4f} s, modelled {:.4f} s ({:+.1f} %)\n", kernel, seconds.first, seconds.second,
               100.0 * (seconds.second / seconds.first - 1));
}

void print_network_calibration(const CalibrationResult& result) {
  const Platform& p = result.platform;
  if (!result.network_note.empty())
    fmt::print("cnnpar-run: network NOT fitted ({}): the base platform's is kept\n", result.network_note);
  fmt::print("cnnpar-run: network: latency {:.3f} us, bandwidth {:.3f} GB/s, reduction rate {:.3f} GB/s, {} "
             "message-factor pieces\n",
             p.network.latency_s * 1e6, p.network.bandwidth_Bps / 1e9, p.network.reduction_rate_Bps / 1e9,
             p.network.message_factors.size());
  for (const MessageFactor& f : p.network.message_factors)
    fmt::print("  from {:>12.0f} B: latency x {:.3f}, bandwidth x {:.3f}\n", f.from_bytes, f.latency_factor, f.bandwidth_factor);
  for (const auto& [kind, points] : p.network.kind_size_factors) {
    fmt::print("  {} steps priced as messages of", kind);
    for (const KindSizeFactor& point : points)
      if (point.step_overhead_s > 0)
        fmt::print(" {:.0f} B: x {:.3f} + {:.1f} us a step;", point.bytes, point.factor, point.step_overhead_s * 1e6);
      else
        fmt::print(" {:.0f} B: x {:.3f};", point.bytes, point.factor);
    fmt::print(" their size\n");
  }
  fmt::print("{:<15} {:>12} {:>12} {:>12} {:>8} {:>9}\n", "collective", "bytes", "measured s", "modelled s", "error %", "outliers");
  // measured s: the median of isolated repeats, or (*) the mean of a chain of back-to-back ones
  for (const CollectiveCurve& curve : result.collectives) {
    double worst = 0;
    for (const CollectivePoint& point : curve.points) {
      const double error = 100.0 * (point.modelled_s / point.fit_s - 1);
      worst = std::max(worst, std::abs(error));
      fmt::print("{:<15} {:>12.0f} {:>11.4g}{} {:>12.4g} {:>+8.1f} {:>5}/{:<3}\n", curve.kind, point.bytes, point.fit_s,
                 point.chained ? '*' : ' ', point.modelled_s, error, point.measured_s.outliers, point.measured_s.count);
    }
    fmt::print("{:<15} worst |error| {:.1f} %{}{}\n", curve.kind, worst, curve.stopped.empty() ? "" : "; ", curve.stopped);
  }
}

void print_progress_calibration(const CalibrationResult& result) {
  const ProgressSummary& s = result.progress;
  const Platform& p = result.platform;
  if (!result.progress_note.empty()) {
    fmt::print("cnnpar-run: progress NOT fitted ({}): the base platform's values are kept\n", result.progress_note);
    return;
  }
  fmt::print("cnnpar-run: progress: {} backward ops at per-rank batch {} (one pass {:.4f} s alone), a {:.0f} B "
             "allreduce ({:.4f} s alone)\n",
             s.compute_ops, s.batch, s.pass_alone_s, s.collective_bytes, s.collective_alone_s);
  fmt::print("cnnpar-run:   comm_compute_slowdown {:.3f}: compute under a chain of {} allreduces {:+.1f} % (median of "
             "{} rank-repeats, {} outlying)\n",
             p.comm_compute_slowdown, s.chain, 100 * s.slowdown.median, s.slowdown.count, s.slowdown.outliers);
  fmt::print("cnnpar-run:   network.busy_bandwidth_fraction {:.3f}: the allreduce under {} passes of compute took "
             "{:.4f} s (median of {} rank-repeats, {} outlying{})\n",
             p.network.busy_bandwidth_fraction, s.passes, s.collective_busy_s, s.fraction.count, s.fraction.outliers,
             s.fraction.median != p.network.busy_bandwidth_fraction
                 ? fmt::format("; measured {:.3f}, clamped to [{}, 1]", s.fraction.median, kMinBusyFraction)
                 : "");
  fmt::print("cnnpar-run:   comm_start_wait_max {:.6f} s: the allreduce posted before those passes waited that long "
             "for the progress thread (median of {} rank-repeats, {} outlying)\n",
             p.comm_start_wait_max_s, s.start_wait.count, s.start_wait.outliers);
}

}  // namespace

int run_calibration(const Options& o, int rank, int size, bool max_message_given) {
  std::exception_ptr error;
  Network network;
  Platform base;
  CalibrateOptions options;
  try {
    configure_compute(o);
    if (o.out.empty()) throw InputError("command line", "/out", "", "--calibrate needs --out PLATFORM.json");
    if (rank == 0) check_output_path(o.out, "/out");
    network = load_network(o.network);
    base = load_platform(o.platform);
    if (!(o.max_message_bytes >= 1024 && o.max_message_bytes <= 2.0 * 1024 * 1024 * 1024))
      throw InputError("command line", "/max-message", fmt::format("{}", o.max_message_bytes),
                       "the largest message must be 1 KiB .. 2 GiB");
    options.parts = parse_calibration_parts(o.calibrate_parts, "command line", "/calibrate-parts");
    const ExecutionModes modes = parse_execution_modes(o);
    options.progress_mode = modes.progress;
    options.collectives = modes.collectives;
    options.sleep_compute = modes.sleep_compute;
    options.inner_mode = parse_inner_mode(o.inner, "command line", "/inner");
    // --conv other than im2col: the runs to be predicted may run conv layers direct; time them so
    // too. auto (the default) times them where this build can run them.
    const ConvPaths conv = o.strategy.conv();
    options.direct_convolutions = conv.any_direct() ||
                                  (conv.mode == ConvPaths::Mode::automatic && real::direct_convolution_available());
    if (conv.any_direct() && !real::direct_convolution_available())
      throw InputError("command line", "--conv", conv.text(),
                       "this build has no oneDNN (configure with -DCNNPAR_ONEDNN=ON; libdnnl-dev): use --conv im2col");
    // Winograd where this CPU runs it (oneDNN 2.x: AVX-512) and the network has a layer it takes.
    const ConvPaths all_winograd{.mode = ConvPaths::Mode::winograd};
    const bool winograd_layers = std::any_of(network.layers.begin(), network.layers.end(),
                                             [](const Layer& layer) { return winograd_shape(layer.spec); });
    const bool winograd_here = options.direct_convolutions && winograd_layers &&
                               real::winograd_layer_without_kernel(network, all_winograd).empty();
    if (conv.any_winograd() && !winograd_here)
      throw InputError("command line", "--conv", conv.text(),
                       fmt::format("this CPU has no oneDNN Winograd kernel for network {} (oneDNN 2.x runs them "
                                   "with AVX-512 only, on 3x3 stride-1 layers): use --conv direct or auto",
                                   network.name));
    options.winograd_convolutions = winograd_here;
    options.platform_file = o.platform;
    check_calibration_network(network, options);  // before any rank measures
  } catch (...) {
    error = std::current_exception();
  }
  if (const int status = agree_on_failure(error, rank, size, o.timeout_s); status != 0) return status;
  options.batch = o.batch;  // global, as everywhere: the compute grid covers per-rank batches 1 .. batch
  options.seed = o.seed;
  options.repeats = std::max(1, o.repeats);
  options.timeout_s = o.timeout_s;
  options.max_message_bytes = o.max_message_bytes;
  options.max_message_given = max_message_given;
  options.op_seconds = o.op_seconds;
  options.poll_interval_s = o.poll_interval_us * 1e-6;
  options.gemm_tile_columns = executor_tile_columns(o, options.progress_mode);
  options.inner_threads = compute_threads();  // set by configure_compute from --threads
  if (rank == 0 && !o.quiet)
    options.progress = [](const std::string& line) {
      fmt::print("cnnpar-run: calibrate: {}\n", line);
      std::fflush(stdout);
    };
  set_freed_memory(freed_memory_once_set_up(size));
  CalibrationResult result = calibrate(network, base, options, MPI_COMM_WORLD);
  if (rank == 0) {
    write_file_atomic(o.out, to_json(result.platform).dump(2) + "\n");
    print_calibration(result);
    fmt::print("cnnpar-run: wrote {} ({} GEMM grid points{})\n", o.out, result.platform.measured_gemm_flops.size(),
               result.platform.measured_op_s.empty() ? "" : fmt::format(", {} op times", result.platform.measured_op_s.size()));
  }
  mpi::barrier(MPI_COMM_WORLD, o.timeout_s, "final barrier");
  return 0;
}

}  // namespace cnnpar::executor
