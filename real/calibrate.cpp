#include "real/calibrate.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/schedule.hpp"
#include "model/strategies/strategy.hpp"
#include "real/dataset.hpp"
#include "real/kernels.hpp"
#include "real/mpi_wrap.hpp"
#include "real/runtime.hpp"

namespace cnnpar::real {

LinkFit fit_link(const std::vector<std::pair<double, double>>& samples) {
  // Weighted least squares on relative error (weight 1/t^2), so 8-byte and 64-MiB messages
  // count alike: minimise sum ((a + b·n - t) / t)^2 over a (latency) and b (1/bandwidth).
  double s_w = 0, s_wn = 0, s_wnn = 0, s_wt = 0, s_wnt = 0;
  for (const auto& [n, t] : samples) {
    if (!(t > 0)) continue;
    const double w = 1.0 / (t * t);
    s_w += w;
    s_wn += w * n;
    s_wnn += w * n * n;
    s_wt += w * t;
    s_wnt += w * n * t;
  }
  const double det = s_w * s_wnn - s_wn * s_wn;
  if (!(det > 0) || samples.size() < 2) throw std::invalid_argument("link fit needs two distinct message sizes");
  double a = (s_wt * s_wnn - s_wn * s_wnt) / det;
  double b = (s_w * s_wnt - s_wn * s_wt) / det;
  if (a < 0) {  // refit the slope through the origin
    a = 0;
    b = s_wnt / s_wnn;
  }
  if (!(b > 0)) throw std::invalid_argument("link fit gave a non-positive time per byte");
  return LinkFit{a, 1.0 / b};
}

namespace {

double median(std::vector<double> v) {
  CNNPAR_ASSERT(!v.empty(), "median of nothing");
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** sgemm rate (FLOP/s) of `shape` with the transposes its phase uses in the runtime. */
double time_gemm_flops(const GemmShape& shape, Phase phase, int repeats, std::mt19937& rng) {
  const bool trans_a = phase == Phase::backward_data;    // W^T · E
  const bool trans_b = phase == Phase::backward_weight;  // E · C^T
  const std::int64_t m = shape.m, n = shape.n, k = shape.k;
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> a(std::size_t(m * k)), b(std::size_t(k * n)), c(std::size_t(m * n), 0.0f);
  for (float& x : a) x = uniform(rng);
  for (float& x : b) x = uniform(rng);
  const std::int64_t lda = trans_a ? m : k;  // row strides of the stored matrices
  const std::int64_t ldb = trans_b ? k : n;
  gemm(trans_a, trans_b, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n);  // warm-up
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const double start = now_s();
    gemm(trans_a, trans_b, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), n);
    seconds.push_back(now_s() - start);
  }
  // Noise on a shared machine only ever adds time: the fastest repeat is the best estimate
  // of what the kernel costs.
  return shape.flops() / std::max(*std::min_element(seconds.begin(), seconds.end()), 1e-9);
}

/** Seconds per compute op label (non-GEMM ops) of a one-rank schedule with real kernels. */
std::map<std::string, double> time_ops(const Network& network, const Platform& base, const CalibrateOptions& o,
                                       std::map<std::string, double>& gemm_flops) {
  StrategyOptions strategy;
  strategy.name = "dp";
  strategy.global_batch = o.batch;
  strategy.ranks = 1;
  strategy.iterations = o.repeats + 1;  // iteration 0 warms caches and allocations up
  strategy.warmup_iterations = 1;
  strategy.recompute_columns = true;  // times the `.im2col_w` ops too (forward labels are the same)
  strategy.origin = o.origin;
  const Schedule schedule = build_schedule(network, base, strategy);
  verify_or_throw(schedule, "<calibration schedule>");

  std::mt19937 rng(std::uint32_t(o.seed));
  std::map<std::string, std::pair<GemmShape, Phase>> shapes;
  for (const Op& op : schedule.programs[0].ops)
    if (op.kind == OpKind::compute && op.kernel == KernelClass::gemm) shapes.emplace(op.gemm.to_string(), std::pair{op.gemm, op.phase});
  for (const auto& [name, shape_phase] : shapes)
    gemm_flops[name] = time_gemm_flops(shape_phase.first, shape_phase.second, o.repeats, rng);

  SyntheticDataset data(network.input, network.classes(), 50000, o.seed);
  Runtime runtime(network, schedule, 0, o.seed);
  std::map<std::string, std::vector<double>> samples;
  int iteration = 0;
  bool begun = false;
  for (const Op& op : schedule.programs[0].ops) {
    switch (op.kind) {
      case OpKind::mark:
        ++iteration;
        begun = false;
        break;
      case OpKind::compute: {
        if (!begun && iteration < schedule.iterations) runtime.load_batch(iteration, data);
        begun = true;
        const double start = now_s();
        runtime.run_compute(op, iteration);
        const double seconds = now_s() - start;
        if (iteration >= schedule.warmup_iterations && op.kernel != KernelClass::gemm) samples[op.label].push_back(seconds);
        break;
      }
      case OpKind::post:  // one rank: a collective over {0} leaves the data as it is
        if (!begun && iteration < schedule.iterations) runtime.load_batch(iteration, data);
        begun = true;
        runtime.prepare(schedule.collectives[std::size_t(op.collective)]);
        break;
      case OpKind::wait:
        runtime.complete(schedule.collectives[std::size_t(op.collective)]);
        break;
    }
  }
  runtime.finish_schedule();
  std::map<std::string, double> out;
  for (auto& [label, seconds] : samples) out[label] = *std::min_element(seconds.begin(), seconds.end());
  return out;
}

constexpr int kTag = 7101;

/** Ping-pong between ranks 0 and 1: (bytes, one-way seconds) on rank 0. */
std::vector<std::pair<double, double>> ping_pong(MPI_Comm comm, int rank, const CalibrateOptions& o) {
  std::vector<std::pair<double, double>> out;
  std::vector<char> buffer(std::size_t(o.max_message_bytes));
  std::vector<double> sizes;
  for (double bytes = 8; bytes < o.max_message_bytes; bytes *= 4) sizes.push_back(bytes);
  sizes.push_back(o.max_message_bytes);
  const auto exchange = [&](int peer, int bytes, bool send_first) {
    mpi::Request request;
    if (send_first) {
      CNNPAR_MPI(MPI_Isend(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, request.out()));
      mpi::wait_with_timeout(request, o.timeout_s, "ping-pong", std::chrono::microseconds(0));
      CNNPAR_MPI(MPI_Irecv(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, request.out()));
      mpi::wait_with_timeout(request, o.timeout_s, "ping-pong", std::chrono::microseconds(0));
    } else {
      CNNPAR_MPI(MPI_Irecv(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, request.out()));
      mpi::wait_with_timeout(request, o.timeout_s, "ping-pong", std::chrono::microseconds(0));
      CNNPAR_MPI(MPI_Isend(buffer.data(), bytes, MPI_BYTE, peer, kTag, comm, request.out()));
      mpi::wait_with_timeout(request, o.timeout_s, "ping-pong", std::chrono::microseconds(0));
    }
  };
  for (double size : sizes) {
    const int bytes = int(size);
    const int rounds = size <= 65536 ? 50 : (size <= 4 * 1048576 ? 10 : 4);
    exchange(rank == 0 ? 1 : 0, bytes, rank == 0);  // warm-up (registration, eager/rendezvous set-up)
    std::vector<double> one_way;
    for (int i = 0; i < rounds; ++i) {
      const double start = MPI_Wtime();
      exchange(rank == 0 ? 1 : 0, bytes, rank == 0);
      one_way.push_back(0.5 * (MPI_Wtime() - start));
    }
    if (rank == 0) out.emplace_back(size, median(one_way));
  }
  return out;
}

std::vector<std::pair<double, double>> allreduce_times(MPI_Comm comm, const CalibrateOptions& o) {
  std::vector<std::pair<double, double>> out;
  for (double bytes = 8; bytes <= o.max_message_bytes; bytes *= 8) {
    const int count = std::max(1, int(bytes / 4));
    std::vector<float> data(std::size_t(count), 1.0f);
    std::vector<double> seconds;
    for (int i = 0; i < 4; ++i) {
      mpi::barrier(comm, o.timeout_s, "allreduce calibration");
      const double start = MPI_Wtime();
      mpi::Request request;
      CNNPAR_MPI(MPI_Iallreduce(MPI_IN_PLACE, data.data(), count, MPI_FLOAT, MPI_SUM, comm, request.out()));
      mpi::wait_with_timeout(request, o.timeout_s, "allreduce calibration", std::chrono::microseconds(0));
      if (i > 0) seconds.push_back(MPI_Wtime() - start);  // the first one sets up
    }
    double mine = median(seconds), slowest = 0;
    mpi::allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm, o.timeout_s, "allreduce calibration");
    out.emplace_back(double(count) * 4.0, slowest);
  }
  return out;
}

}  // namespace

CalibrationResult calibrate(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm) {
  int rank = 0, size = 1;
  CNNPAR_MPI(MPI_Comm_rank(comm, &rank));
  CNNPAR_MPI(MPI_Comm_size(comm, &size));
  CalibrationResult result;
  result.platform = base;

  if (rank == 0) {
    result.platform.measured_op_s = time_ops(network, base, o, result.platform.measured_gemm_flops);
  }
  // Other ranks idle here while rank 0 times kernels; the wait can be long on big networks.
  mpi::barrier(comm, std::max(o.timeout_s, 3600.0), "calibration (compute timing)");

  if (size >= 2) {
    if (rank <= 1) result.ping_pong = ping_pong(comm, rank, o);
    mpi::barrier(comm, o.timeout_s, "calibration (ping-pong)");
    if (rank == 0) {
      const LinkFit fit = fit_link(result.ping_pong);
      result.platform.network.latency_s = fit.latency_s;
      result.platform.network.overhead_s = 0;
      result.platform.network.bandwidth_Bps = fit.bandwidth_Bps;
    }
  }
  result.allreduce = allreduce_times(comm, o);

  if (rank == 0) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    const std::time_t now = std::time(nullptr);
    char date[32] = {};
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    const char* threads = std::getenv("OPENBLAS_NUM_THREADS");
    result.platform.name = base.name + "-calibrated";
    std::string allreduce_text;
    for (const auto& [bytes, seconds] : result.allreduce)
      allreduce_text += fmt::format("{}{:.0f} B {:.3g} s", allreduce_text.empty() ? "" : ", ", bytes, seconds);
    result.platform.source = fmt::format(
        "cnnpar calibrate on {} at {}: {} at local batch {}, GEMMs on {}, {} compute threads "
        "(OPENBLAS_NUM_THREADS={}), {} MPI ranks{}; "
        "allreduce over {} ranks: {}; base platform: {}",
        host, date, network.name, o.batch, to_string(gemm_backend()), compute_threads(), threads ? threads : "default", size,
        size >= 2 ? " (network from a ping-pong between ranks 0 and 1, weighted least-squares fit)" : " (network not measured)",
        size, allreduce_text, base.name);
  }
  return result;
}

}  // namespace cnnpar::real
