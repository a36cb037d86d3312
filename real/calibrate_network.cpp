// The network part of the calibration: collective curves (send as a ping-pong, allreduce,
// allgather, reduce_scatter, bcast) fitted into latency, bandwidth and message factors, and the
// burst probe of a shaped link.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/calibrate_parts.hpp"
#include "real/mpi_wrap.hpp"
#include "system/collective.hpp"
#include "system/collective_algorithm.hpp"

namespace cnnpar::real::calibration {
namespace {

constexpr int kPingTag = 7101;

/** Tests with `done` until it is true, `x.test_interval_s` apart (else yielding): how the run
 *  to be predicted drives a request in flight. */
template <class Done>
void drive(const Done& done, const Exchange& x, double start, const std::string& what) {
  while (!done()) {
    if (MPI_Wtime() - start > x.timeout_s)
      throw mpi::TimeoutError(fmt::format("rank {}: calibration {} did not complete within {:.0f} s", x.rank, what, x.timeout_s));
    if (x.test_interval_s > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(x.test_interval_s));
    } else {
      std::this_thread::yield();
    }
  }
}

// A message-factor piece spans the measured sizes its chord predicts within 3 %. At 10 % a
// 1 Gbit/s testbed link came out 8 % fast at 16 MiB (one piece from 32 KiB on, bent by the
// token bucket's head start), and a large gradient's allreduce is most of a dp iteration;
// small sizes then take more pieces, which costs nothing.
constexpr double kFactorTolerance = 0.03;
// A kind's size factors start where the transfer is at least this share of a collective's priced time.
constexpr double kKindFactorTransferShare = 0.5;
constexpr int kRounds = 3;
constexpr int kWarmUpCalls = 50;
// A chain lasts at least this long when the extrapolated transfer allows, within kMaxChainCalls.
constexpr double kChainTarget_s = 2;
constexpr int kMaxChainCalls = 20;

/** Repeats of one size: small messages are cheap and noisy, so they get more. */
int repeats_for(double bytes, int repeats) {
  if (bytes <= 64.0 * 1024) return std::max(repeats, 21);
  if (bytes <= 4.0 * 1024 * 1024) return std::max(repeats, 9);
  return std::max(repeats, 5);
}

/** This rank's buffers of `c` in `a` and `b` (CommBuffers conventions; zero counts off the
 *  group), the ones the executor would post: allreduce and bcast in place. */
CommBuffers buffers_for(const Collective& c, int rank, std::vector<float>& a, std::vector<float>& b) {
  const CollectiveCounts counts = collective_counts(c, rank);
  CNNPAR_ASSERT(std::size_t(counts.send) <= a.size() && std::size_t(counts.recv) <= b.size(),
                "calibration buffers hold the largest message");
  const bool in_place = c.kind == CollectiveKind::allreduce || c.kind == CollectiveKind::bcast;
  return CommBuffers{a.data(), in_place ? a.data() : b.data(), counts.send, counts.recv};
}

/** Seconds of a round trip between ranks 0 and 1 (called on those two only): rank 0 sends
 *  `out_count` floats from `send`, rank 1 receives them into `recv` and answers with
 *  `back_count` floats from `send`, each leg driven as the run drives a request. */
double ping_pong(const float* send, float* recv, int out_count, int back_count, const Exchange& x, const std::string& what) {
  const double start = MPI_Wtime();
  const int peer = 1 - x.rank;
  for (int leg = 0; leg < 2; ++leg) {
    const int count = leg == 0 ? out_count : back_count;
    mpi::Request request;
    if ((leg == 0) == (x.rank == 0))
      CNNPAR_MPI(MPI_Isend(send, count, MPI_FLOAT, peer, kPingTag, x.comms.point_to_point(), request.out()));
    else
      CNNPAR_MPI(MPI_Irecv(recv, count, MPI_FLOAT, peer, kPingTag, x.comms.point_to_point(), request.out()));
    drive([&] { return request.test(); }, x, start, what);
  }
  return MPI_Wtime() - start;
}

/** Seconds of one `c` on this rank, run as the executor runs it (RunningCollective, driven as
 *  the run's progress mode drives it); a `send` is a ping-pong between ranks 0 and 1, one way =
 *  half the round trip (ranks beyond them: 0). */
double run_one(const Collective& c, const CommBuffers& buffers, const Exchange& x) {
  const double start = MPI_Wtime();
  const std::string what = fmt::format("{} of {:.0f} B", to_string(c.kind), c.bytes);
  if (c.kind == CollectiveKind::send) {
    if (x.rank > 1) return 0;
    const int count = int(std::max(buffers.send_count, buffers.recv_count));
    return 0.5 * ping_pong(buffers.send, buffers.recv, count, count, x, what);
  }
  RunningCollective running(c, buffers, x.comms, x.rank, x.mode, &x.platform, x.tag_upper_bound);
  drive([&] { return running.test(); }, x, start, what);
  return MPI_Wtime() - start;
}

/** The critical member's steps of `c` (the ones both engines' pricing follows). */
CollectivePlan priced_plan(const Collective& c, const Platform& platform) {
  return plan_collective(c, resolve_algorithm(c, platform), critical_member(c));
}

/** Seconds the engines' step pricing gives `c` on `platform` (steps_time_s, with the kind's
 *  size factor and step overhead). */
double priced_s(const Collective& c, const Platform& platform) {
  return steps_time_s(priced_plan(c, platform), platform.network, step_pricing(c, platform.network));
}

// Draining a link's token bucket sends this many times its depth: tbf counts headers too.
constexpr double kDrainMargin = 1.1;
constexpr int kDrainTag = 7102;

/** Empties every node link's token bucket (network.link_burst): each rank sends `bytes` to the
 *  next in a ring and receives as many from the previous one, so the measurement that follows
 *  starts at the link's rate, as the engines' collective pricing assumes (they add the burst
 *  a run's idle links hold, system/link_bucket.hpp). Without it the barrier-separated repeats
 *  of mid sizes on a 1 Gbit/s testbed link came out 9-15 % faster than its rate, and pings
 *  of 128-512 KiB a third. */
void drain_buckets(const Exchange& x, int rank, int size, std::vector<float>& out, std::vector<float>& in) {
  const int count = int(out.size());
  const double start = MPI_Wtime();
  mpi::Request send, receive;
  CNNPAR_MPI(MPI_Irecv(in.data(), count, MPI_FLOAT, (rank + size - 1) % size, kDrainTag, x.comms.point_to_point(), receive.out()));
  CNNPAR_MPI(MPI_Isend(out.data(), count, MPI_FLOAT, (rank + 1) % size, kDrainTag, x.comms.point_to_point(), send.out()));
  drive([&] { return receive.test() && send.test(); }, x, start, "bucket drain");
}

// A burst probe sends this share of the bucket: with TCP/IP headers it still fits (tbf counts
// them: goodput is 0.956 of the rate).
constexpr double kBurstProbeShare = 0.75;
constexpr int kBurstProbeRepeats = 9;
// Between probes the link idles this many times the bucket's refill time, within the bounds
// (long enough to refill, shorter than TCP's idle restart of 200 ms where the rate allows).
constexpr double kBurstRefillMargin = 2;
constexpr double kMinBurstIdle_s = 0.02, kMaxBurstIdle_s = 1.0;

// MPICH's CVARs that replace its default selection of the nonblocking collectives the
// executor posts (docs/design.md, "Which algorithms MPICH runs").
constexpr const char* kSelectionCvars[] = {
    "MPIR_CVAR_IALLREDUCE_INTRA_ALGORITHM", "MPIR_CVAR_IALLGATHER_INTRA_ALGORITHM",
    "MPIR_CVAR_IREDUCE_SCATTER_BLOCK_INTRA_ALGORITHM", "MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE"};

/** Why the library's own collectives are not MPICH 4.0's default selection ("" when they are). */
std::string not_mpich_selection(const std::string& library_version) {
  if (!mpi::is_mpich_4_0(library_version)) return "the MPI library is not MPICH 4.0";
  for (const char* cvar : kSelectionCvars) {
    const char* value = std::getenv(cvar);
    if (value != nullptr && *value != '\0' && std::string(value) != "auto") return fmt::format("{}={}", cvar, value);
  }
  return "";
}

}  // namespace

Collective measured_collective(CollectiveKind kind, double bytes, int size) {
  Collective c;
  c.id = 0;
  c.kind = kind;
  c.bytes = bytes;
  if (kind == CollectiveKind::send) {
    c.group = {0, 1};
    c.root = 0;
  } else {
    for (int r = 0; r < size; ++r) c.group.push_back(r);
    if (kind == CollectiveKind::bcast) c.root = 0;
  }
  return c;
}

void calibrate_network(const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int rank, int size,
                       Platform& platform, std::vector<CollectiveCurve>& curves, std::string& network_note) {
  std::vector<double> sizes;
  for (double bytes = o.min_message_bytes; bytes < o.max_message_bytes; bytes *= 2) sizes.push_back(bytes);
  sizes.push_back(o.max_message_bytes);
  // Room for the largest message and a reduce_scatter's padding to P blocks.
  const std::size_t floats = std::size_t(o.max_message_bytes / 4) + 1 + std::size_t(size);
  std::vector<float> a(floats, 1.0f), b(floats, 0.0f);
  const std::size_t drain_floats = std::size_t(std::ceil(kDrainMargin * platform.network.link_burst_bytes / 4));
  std::vector<float> drain_out(drain_floats, 1.0f), drain_in(drain_floats, 0.0f);
  const auto barrier = [&] {
    tight_barrier(comm, o.timeout_s);
    if (drain_floats == 0) return;
    drain_buckets(x, rank, size, drain_out, drain_in);
    tight_barrier(comm, o.timeout_s);  // every rank has received its drain: no link still carries one
  };
  // The library's own collectives are priced as the algorithms it runs, where the engines know
  // them: MPICH 4.0's default selection. Otherwise the base platform's algorithms stay.
  if (x.mode == CollectiveMode::mpi) {
    const std::string other = not_mpich_selection(mpi::library_version());
    if (other.empty()) {
      for (const char* kind : {"allreduce", "allgather", "reduce_scatter"})
        platform.network.algorithms[kind] = Algorithm::mpich;
      say(o, "network: allreduce, allgather and reduce_scatter priced as MPICH 4.0 selects them (network.algorithms mpich)");
    } else {
      say(o, fmt::format("network: {}: the base platform's collective algorithms stay", other));
    }
  }
  const CollectiveKind kinds[] = {CollectiveKind::send, CollectiveKind::allreduce, CollectiveKind::allgather,
                                  CollectiveKind::reduce_scatter, CollectiveKind::bcast};
  for (CollectiveKind kind : kinds) {
    CollectiveCurve curve;
    curve.kind = to_string(kind);
    const double start = now_s();
    // Wake the transport up (connections, a rank that slept through the compute timing): the
    // first size measured came out 10 times slower than the next without this.
    {
      const Collective first = measured_collective(kind, sizes.front(), size);
      const CommBuffers buffers = buffers_for(first, rank, a, b);
      for (int i = 0; i < kWarmUpCalls; ++i) run_one(first, buffers, x);
    }
    std::vector<std::pair<double, double>> measured;  // (bytes, fit seconds) so far; equal on every rank
    for (double bytes : sizes) {
      // The gathered result is P contributions: keep it within the largest message.
      if (kind == CollectiveKind::allgather && bytes * size > o.max_message_bytes) break;
      if (kind == CollectiveKind::reduce_scatter && bytes < 4.0 * size) continue;
      // One transfer at this size as the smaller sizes predict it (0 = none measured yet).
      const double predicted_s = measured.empty() ? 0 : extrapolated_transfer_s(measured, bytes);
      if (!o.max_message_given && !measured.empty()) {
        if (predicted_s > o.max_transfer_s) {
          curve.stopped = fmt::format("{:.0f} B and beyond skipped: one transfer predicted {:.2f} s > {:g} s (give "
                                      "--max-message to measure them)",
                                      bytes, predicted_s, o.max_transfer_s);
          break;
        }
      }
      const Collective c = measured_collective(kind, bytes, size);
      const CommBuffers buffers = buffers_for(c, rank, a, b);
      run_one(c, buffers, x);  // warm-up: registration, protocol set-up
      const bool chained = bytes >= kChainFromBytes;
      const int repeats =
          chained ? chain_calls(predicted_s, repeats_for(bytes, o.repeats), kChainTarget_s, kMaxChainCalls)
                  : repeats_for(bytes, o.repeats);
      // On a loaded machine a rank descheduled for a time slice (milliseconds) can spoil most
      // repeats of a microsecond message: up to kRounds rounds, the calmest one (smallest
      // median) kept - noise only adds time. A chained size outlasts a time slice: one round.
      const int rounds = chained ? 1 : kRounds;
      RobustSummary best;
      std::vector<double> best_slowest;
      for (int round = 0; round < rounds; ++round) {
        std::vector<double> mine(static_cast<std::size_t>(repeats)), slowest(static_cast<std::size_t>(repeats));
        if (chained) barrier();
        for (int i = 0; i < repeats; ++i) {
          if (!chained) barrier();
          mine[std::size_t(i)] = run_one(c, buffers, x);
        }
        mpi::allreduce(mine.data(), slowest.data(), repeats, MPI_DOUBLE, MPI_MAX, comm, o.timeout_s,
                       "calibration (collective times)");
        const RobustSummary summary = robust_summary(slowest);
        if (round == 0 || summary.median < best.median) {
          best = summary;
          best_slowest = std::move(slowest);
        }
      }
      const double fit_s =
          chained ? std::accumulate(best_slowest.begin(), best_slowest.end(), 0.0) / double(best_slowest.size())
                  : best.median;
      curve.points.push_back(CollectivePoint{bytes, best, fit_s, chained, 0});
      measured.emplace_back(bytes, fit_s);
    }
    say(o, fmt::format("network: {:<14} {} sizes {:.0f} B .. {:.0f} B, {:.1f} s{}", curve.kind, curve.points.size(),
                       curve.points.front().bytes, curve.points.back().bytes, now_s() - start,
                       curve.stopped.empty() ? "" : "; " + curve.stopped));
    curves.push_back(std::move(curve));
  }
  if (rank != 0) return;

  // Each measurement as the steps the engines price: k steps of (mean) size s take T/k each.
  // The kinds that reduce (allreduce, reduce_scatter) also add what they receive: they are
  // left out of the link fit and give the reduction rate below. So are plans whose steps differ
  // in size (MPICH's recursive-doubling allgather: s, 2s, 4s, ...): their mean step falls
  // between the other kinds' sizes, and chords through such points zig-zag between kinds
  // (a 4-rank calibration's latency factors alternated 0.001 and 1.3-11.6 from 1.5 KiB to
  // 48 KiB). Their own size factors (below) price them.
  struct Priced {
    const CollectivePoint* point;
    double step_bytes;     ///< mean over the steps of the larger message
    double steps;
    double reduce_bytes;   ///< received bytes of the reducing steps
  };
  std::vector<Priced> priced;
  std::vector<StepSample> steps;
  std::map<double, std::vector<double>> per_size;
  for (const CollectiveCurve& curve : curves)
    for (const CollectivePoint& point : curve.points) {
      const Collective c = measured_collective(collective_kind_from_string(curve.kind), point.bytes, size);
      const CollectivePlan plan = priced_plan(c, platform);
      if (plan.steps.empty()) continue;
      Priced p{&point, 0, double(plan.steps.size()), 0};
      bool uniform = true;
      for (const CollectiveStep& step : plan.steps) {
        p.step_bytes += step_message_bytes(step) / p.steps;
        if (step.reduce) p.reduce_bytes += step.receive_bytes;
        uniform = uniform && step_message_bytes(step) == step_message_bytes(plan.steps.front());
      }
      priced.push_back(p);
      if (p.reduce_bytes > 0 || !uniform) continue;
      const double per_step_s = point.fit_s / p.steps;
      steps.push_back(StepSample{p.step_bytes, per_step_s});
      per_size[p.step_bytes].push_back(per_step_s);
    }
  // Latency and bandwidth from the per-size medians over the kinds (robust to one odd kind).
  std::vector<std::pair<double, double>> link;
  for (const auto& [bytes, seconds] : per_size) link.emplace_back(bytes, median(seconds));
  try {
    const LinkFit fit = fit_link(link);
    platform.network.latency_s = fit.latency_s;
    platform.network.overhead_s = 0;
    platform.network.bandwidth_Bps = fit.bandwidth_Bps;
    platform.network.message_factors = fit_message_factors(steps, fit.latency_s, fit.bandwidth_Bps, kFactorTolerance);
    // Reduction rate: the Theil–Sen slope of what a reducing collective takes beyond its
    // messages against the bytes it reduces, over sizes where the arithmetic outweighs the
    // noise (>= kSmallMessageBytes reduced).
    std::vector<std::pair<double, double>> excess;
    for (const Priced& p : priced)
      if (p.reduce_bytes >= kSmallMessageBytes)
        excess.emplace_back(p.reduce_bytes,
                            p.point->fit_s - p.steps * platform.network.message_time_s(p.step_bytes));
    platform.network.reduction_rate_Bps = 0;
    if (excess.size() >= 2) {
      const Line line = theil_sen(excess);
      if (line.slope > 0) platform.network.reduction_rate_Bps = 1.0 / line.slope;
    }
    // What the one link model leaves per kind (at 10 Gbit/s on 4 ranks it priced allgather
    // 21-32 % fast and send 6-20 % slow; MPICH's allgather of 1-16 KiB on 4 ranks at 1 Gbit/s
    // took 1.13 ms where its messages were priced 0.38-0.65): each kind's own size factors
    // and step overheads.
    std::map<std::string, std::vector<KindSizeFactor>> kind_factors;
    for (const CollectiveCurve& curve : curves) {
      std::vector<KindSample> samples;
      for (const CollectivePoint& point : curve.points) {
        const Collective c = measured_collective(collective_kind_from_string(curve.kind), point.bytes, size);
        const CollectivePlan plan = priced_plan(c, platform);
        KindSample sample{.bytes = point.bytes,
                          .measured_s = point.fit_s,
                          .priced_s = steps_time_s(plan, platform.network),
                          .steps = int(plan.steps.size())};
        for (const CollectiveStep& step : plan.steps)
          sample.transfer_s += platform.network.transfer_time_s(step_message_bytes(step));
        samples.push_back(sample);
      }
      std::vector<KindSizeFactor> points = fit_kind_size_factors(samples, kKindFactorTransferShare);
      if (!points.empty()) kind_factors[curve.kind] = std::move(points);
    }
    platform.network.kind_size_factors = std::move(kind_factors);
  } catch (const std::invalid_argument& error) {
    // Curves too flat or too noisy to fit (a tiny --max-message on a loaded machine): the
    // base platform's network stays, and the report says why.
    network_note = error.what();
  }
  for (CollectiveCurve& curve : curves)
    for (CollectivePoint& point : curve.points)
      point.modelled_s = priced_s(measured_collective(collective_kind_from_string(curve.kind), point.bytes, size), platform);
}

void calibrate_burst(const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int rank, Platform& platform,
                     std::string& note) {
  NetworkSpec& net = platform.network;
  double idle_s = std::clamp(kBurstRefillMargin * net.link_burst_bytes / net.bandwidth_Bps, kMinBurstIdle_s, kMaxBurstIdle_s);
  mpi::bcast(&idle_s, 1, MPI_DOUBLE, 0, comm, o.timeout_s, "calibration (burst idle)");  // rank 0 has the fit
  const int count = std::max(1, int(kBurstProbeShare * net.link_burst_bytes / 4));
  std::vector<float> message(std::size_t(count), 1.0f);
  std::vector<double> round_trips;
  const double start = now_s();
  for (int i = 0; i < kBurstProbeRepeats; ++i) {
    tight_barrier(comm, o.timeout_s);
    std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
    if (rank > 1) continue;
    round_trips.push_back(ping_pong(message.data(), message.data(), count, 1, x, "burst probe"));
  }
  if (rank != 0) return;
  const double burst_s = median(round_trips) - 2 * net.message_time_s(0);
  const double burst_bytes = 4.0 * count;
  if (!(burst_s > 0)) {
    note = fmt::format("burst probe: {:.0f} B took {:.1f} us, within two latencies: link_peak_bandwidth left at {}",
                       burst_bytes, 1e6 * median(round_trips), net.link_peak_bandwidth_Bps);
    return;
  }
  net.link_peak_bandwidth_Bps = std::max(burst_bytes / burst_s, net.bandwidth_Bps);
  say(o, fmt::format("network: burst          {:.0f} B after {:.0f} ms idle: {:.3f} ms, {:.1f} MB/s (link {:.1f} MB/s), {:.1f} s",
                     burst_bytes, 1e3 * idle_s, 1e3 * median(round_trips), 1e-6 * burst_bytes / burst_s,
                     1e-6 * net.bandwidth_Bps, now_s() - start));
}

}  // namespace cnnpar::real::calibration
