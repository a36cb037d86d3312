// `cnnpar-run --calibrate`: runs the measured parts (calibrate_compute.cpp,
// calibrate_network.cpp, calibrate_progress.cpp) and describes how the platform was made.
#include "real/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/output_files.hpp"
#include "model/schedule.hpp"
#include "real/calibrate_parts.hpp"
#include "real/kernels.hpp"
#include "real/mpi_wrap.hpp"

namespace cnnpar::real {

using calibration::calibrate_burst;
using calibration::calibrate_compute;
using calibration::calibrate_inner;
using calibration::calibrate_network;
using calibration::calibrate_progress;
using calibration::Exchange;
using calibration::kChainFromBytes;
using calibration::say;

std::vector<std::int64_t> calibration_batches(std::int64_t batch) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 1; b < batch; b *= 2) out.push_back(b);
  out.push_back(std::max<std::int64_t>(1, batch));
  return out;
}

namespace {

/** Rank 0's `platform` on every rank (the sleeping probes price ops with it). */
void share_platform(Platform& platform, MPI_Comm comm, int rank, double timeout_s) {
  std::string text = rank == 0 ? to_json(platform).dump() : std::string();
  unsigned long long length = text.size();
  mpi::bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm, timeout_s, "calibration (platform)");
  text.resize(std::size_t(length));
  mpi::bcast(text.data(), int(length), MPI_CHAR, 0, comm, timeout_s, "calibration (platform)");
  if (rank != 0) platform = parse_platform(nlohmann::json::parse(text), "<calibrated platform of rank 0>");
}

/** `source` of the calibrated platform: how each measured part was measured, and the base
 *  platform (its own `source`) for the parts kept from it. */
std::string describe_source(const Network& network, const Platform& base, const CalibrateOptions& o, int size,
                            const CalibrationResult& result) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string date = utc_timestamp();
  const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
  std::string text = fmt::format(
      "cnnpar calibrate on {} at {}, {} MPI ranks, {} comm progress, {} collectives, {} compute threads "
      "(OPENBLAS_NUM_THREADS={}); measured: {}",
      host, date, size, to_string(o.progress_mode), to_string(o.collectives), compute_threads(),
      threads ? threads : "default", to_string(result.measured).empty() ? "nothing" : to_string(result.measured));
  if (result.measured.compute) {
    const ComputeSummary& c = result.compute;
    text += fmt::format(
        "; compute (every rank at once, samples pooled over ranks): {} at per-rank batches {}..{} (global batch {}), "
        "GEMMs on {}, GEMM grid of {} points (median of {} repeats x {} ranks, {} outlying repeats), direct "
        "convolution grid of {} points, Winograd convolution grid of {} points; non-GEMM kernels "
        "t = {:.3g} s + bytes / {:.4g} B/s over {} ops ({} outlying)",
        network.name, c.batches.front(), c.batches.back(), o.batch, to_string(gemm_backend()), c.gemm_points,
        o.repeats, size, c.gemm_outliers, c.conv_points, c.winograd_points, c.memory.overhead_s, c.memory.bandwidth_Bps,
        c.memory_points, c.memory.outliers);
  }
  if (result.measured.network) {
    int outliers = 0, repeats = 0;
    std::vector<std::string> ends;
    for (const CollectiveCurve& curve : result.collectives) {
      for (const CollectivePoint& point : curve.points) {
        outliers += point.measured_s.outliers;
        repeats += point.measured_s.count;
      }
      if (!curve.stopped.empty()) ends.push_back(fmt::format("{} up to {:.0f} B", curve.kind, curve.points.back().bytes));
    }
    text += fmt::format(
        "; network: send, allreduce, allgather, reduce_scatter and bcast over {} ranks, {:.0f} B .. {:.0f} B{}, "
        "median of isolated repeats below {:.0f} B, mean of back-to-back repeats from it ({} of {} repeats "
        "outlying), {}",
        size, o.min_message_bytes, o.max_message_bytes,
        ends.empty() ? "" : fmt::format(" ({}: larger sizes predicted beyond {:g} s per transfer)", fmt::join(ends, ", "),
                                        o.max_transfer_s),
        kChainFromBytes, outliers, repeats,
        result.network_note.empty()
            ? std::string("robust latency/bandwidth fit, piecewise message factors, reduction rate")
            : "not fitted, the base platform's network kept: " + result.network_note);
  }
  if (result.measured.progress && !result.progress_note.empty()) {
    text += "; progress: not fitted, the base platform's comm_compute_slowdown, busy_bandwidth_fraction and "
            "comm_start_wait_max kept: " +
            result.progress_note;
  } else if (result.measured.progress) {
    const ProgressSummary& p = result.progress;
    text += fmt::format(
        "; progress: {} backward ops at per-rank batch {} ({} compute) and a {:.0f} B allreduce, median of {} "
        "probes: compute under communication {:+.1f} % ({} outlying), communication under compute at {:.3f} of its "
        "speed (alone {:.4g} s, under compute {:.4g} s; {} outlying), its start {:.4g} s after its post ({} outlying)",
        p.compute_ops, p.batch, o.sleep_compute ? "sleep" : "real", p.collective_bytes, p.slowdown.count,
        100 * p.slowdown.median, p.slowdown.outliers, p.fraction.median, p.collective_alone_s, p.collective_busy_s,
        p.fraction.outliers, p.start_wait.median, p.start_wait.outliers);
  }
  if (result.measured.inner) {
    const InnerSummary& i = result.inner;
    const auto& efficiency = result.platform.nodes.inner.conv_efficiency;
    text += fmt::format(
        "; inner (every rank at once): conv forward and weight gradient at per-rank batch {}, fraction of T cores' "
        "peak on T = 1..{} threads: gemm {:.3f}, dag {:.3f} (median of {} repeats x {} ranks); runs use {} on {} threads",
        i.batch, efficiency.at(InnerMode::gemm).size(), fmt::join(efficiency.at(InnerMode::gemm), " "),
        fmt::join(efficiency.at(InnerMode::dag), " "), o.repeats, size, to_string(result.platform.nodes.inner.mode),
        result.platform.nodes.inner.threads);
  }
  const CalibrationParts& m = result.measured;
  const CalibrationParts kept{!m.compute, !m.network, !m.progress};
  if (!to_string(kept).empty())
    text += fmt::format("; kept from the base platform {}: {} (base source: {})", base.name, to_string(kept),
                        base.source.empty() ? "none" : base.source);
  else
    text += "; base platform: " + base.name;
  return text;
}

}  // namespace

void check_calibration_network(const Network& network, const CalibrateOptions& o) {
  const bool has_conv = std::any_of(network.layers.begin(), network.layers.end(),
                                    [](const Layer& layer) { return layer.spec.kind == LayerKind::conv; });
  if (o.parts.inner && !has_conv)
    throw InputError(o.origin, "/network", network.name, "the inner calibration times conv layers; this network has none");
}

CalibrationResult calibrate(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm) {
  check_calibration_network(network, o);
  int rank = 0, size = 1;
  CNNPAR_MPI(MPI_Comm_rank(comm, &rank));
  CNNPAR_MPI(MPI_Comm_size(comm, &size));
  CalibrationResult result;
  result.platform = base;
  result.measured = o.parts;
  result.measured.network = o.parts.network && size >= 2;
  result.measured.progress = o.parts.progress && size >= 2;

  if (o.parts.compute) {
    result.platform.measured_op_s.clear();
    result.platform.measured_gemm_flops.clear();
    calibrate_compute(network, base, o, comm, rank, result.platform, result.compute);
  }
  if (size < 2) {
    if (o.parts.network || o.parts.progress) say(o, "network and progress not measured: one rank");
  } else {
    // The executor's communicators over the ranks (every measured group is the world).
    Schedule world;
    for (int r = 0; r < size; ++r) world.programs.push_back(Program{r, {}, {}});
    const Communicators comms(world, rank);
    const Exchange x{comms, o.collectives, result.platform, rank, tag_upper_bound(), o.timeout_s,
                     o.progress_mode == ProgressMode::thread ? o.poll_interval_s : 0.0};
    if (o.parts.network) {
      calibrate_network(o, x, comm, rank, size, result.platform, result.collectives, result.network_note);
      // A shaped link's bucket (the testbed's tbf): how fast its burst passes.
      if (result.platform.network.link_burst_bytes > 0)
        calibrate_burst(o, x, comm, rank, result.platform, result.network_note);
    }
    if (o.parts.progress) {
      if (o.parts.compute && o.sleep_compute) share_platform(result.platform, comm, rank, o.timeout_s);
      try {
        calibrate_progress(network, o, x, comm, size, result.platform, result.progress);
      } catch (const std::invalid_argument& error) {
        // Nothing to probe with, or no probe overlapped: the base platform's values stay.
        result.progress_note = error.what();
      }
    }
  }
  if (o.parts.inner) calibrate_inner(network, base, o, comm, rank, result.platform, result.inner);
  // The ranks measured are nodes of the platform (a 4-rank calibration predicts 4 nodes); a
  // platform of node kinds or per-node speeds states its count by them and stays as it is.
  if (result.platform.nodes.kinds.empty() && result.platform.nodes.speed_factors.empty() &&
      result.platform.nodes.count < size) {
    result.platform.nodes.count = size;
    result.platform.resolve_speed_factors();
  }
  if (rank == 0) {
    result.platform.name = base.name.ends_with("-calibrated") ? base.name : base.name + "-calibrated";
    result.platform.source = describe_source(network, base, o, size, result);
  }
  return result;
}

}  // namespace cnnpar::real
