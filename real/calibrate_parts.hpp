#pragma once
// The parts of `cnnpar-run --calibrate` (compute, network, progress; real/calibrate.hpp) and
// what more than one of them uses: the clock, the tight barrier, the one-rank timed schedule,
// the measured collectives and where they run.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <mpi.h>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "real/calibrate.hpp"
#include "real/calibration_fit.hpp"
#include "real/interpreter.hpp"
#include "real/mpi_wrap.hpp"
#include "workload/conv_paths.hpp"

namespace cnnpar::real {

class Dataset;
class Runtime;

namespace calibration {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline void say(const CalibrateOptions& o, const std::string& line) {
  if (o.progress) o.progress(line);
}

inline double median(std::vector<double> v) { return robust_summary(std::move(v)).median; }

/** Tests `request` without sleeping until it completes, yielding the core between tests as the
 *  interpreter's waits do: with more ranks than cores a spinning rank would hold the core its
 *  peer needs for a time slice (milliseconds per message). */
inline void spin_wait(mpi::Request& request, double timeout_s, const char* what) {
  mpi::wait_with_timeout(request, timeout_s, what, std::chrono::microseconds(0), [] { std::this_thread::yield(); });
}

/** Barrier that spins, so every rank leaves it at once. */
inline void tight_barrier(MPI_Comm comm, double timeout_s) {
  mpi::Request request;
  CNNPAR_MPI(MPI_Ibarrier(comm, request.out()));
  spin_wait(request, timeout_s, "calibration barrier");
}

// ---------------------------------------------------------------------------------------------
// Compute (calibrate_compute.cpp)

/** Timings of one run of the one-rank schedule at one per-rank batch. */
struct BatchTimings {
  std::map<std::string, std::pair<Op, std::vector<double>>> ops;  ///< by label: op, seconds per measured iteration
  std::vector<double> iteration_s;                              ///< mark to mark, measured iterations
  std::vector<double> outside_ops_s;                            ///< iteration minus its ops
};

/** The network's one-rank dp schedule at `batch` images as cnnpar-run builds it (same
 *  strategy defaults, conv layers on `conv`): one warm-up iteration (caches, allocations), one
 *  timed. */
Schedule one_rank_schedule(const Network& network, const Platform& base, std::int64_t batch, const CalibrateOptions& o,
                           const ConvPaths& conv = {});

/** Runs `schedule` (one rank) on `runtime` with the real kernels, timing every compute op of
 *  its measured iterations. */
BatchTimings run_timed(Runtime& runtime, const Schedule& schedule, const Dataset& data);

/** Every rank times the kernels at once (so ranks sharing a host contend as in a run); rank 0
 *  fits the pooled samples into `platform`. */
void calibrate_compute(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm,
                       int rank, Platform& platform, ComputeSummary& summary);

// ---------------------------------------------------------------------------------------------
// Inner (calibrate_inner.cpp)

/** Threads the inner part measures up to: the node's cores, at most this machine's. */
int inner_thread_limit(const Platform& platform);
/** Every rank times each inner mode on 1..inner_thread_limit threads at once; rank 0 writes
 *  platform.nodes.inner (the network has conv layers: check_calibration_network). @throws
 *  InputError for a measured rate above its share of the base platform's peak. */
void calibrate_inner(const Network& network, const Platform& base, const CalibrateOptions& o, MPI_Comm comm, int rank,
                     Platform& platform, InnerSummary& summary);

// ---------------------------------------------------------------------------------------------
// Network (calibrate_network.cpp)

/** Where a measured collective runs: the executor's communicators, in the calibration's
 *  collectives mode. */
struct Exchange {
  const Communicators& comms;
  CollectiveMode mode;
  const Platform& platform;  ///< p2p: the algorithm rule (resolve_algorithm), as in the run
  int rank;
  int tag_upper_bound;
  double timeout_s;
  /** Seconds between two tests of a request in flight: the poll interval with a communication
   *  thread (it sleeps that long between its progress calls, so in a run every step of a
   *  collective waits for the thread's next call), 0 when polling (a waiting rank tests
   *  without pause, yielding the core). */
  double test_interval_s;
};

// From this size on, a collective is timed in a chain of back-to-back repeats, as a run posts
// its gradients, and priced by the chain's mean: on a link whose transfers stall now and then
// (the testbed under bbr: chained 8 MiB allreduces at 100 Mbit/s 0.70 s at best, 0.85-0.93 s in
// some calls), barrier-separated repeats kept a median at the floor that runs do not.
constexpr double kChainFromBytes = 1024.0 * 1024;

/** The collective the engines would price for a measurement of `kind` at `bytes`. */
Collective measured_collective(CollectiveKind kind, double bytes, int size);

void calibrate_network(const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int rank, int size,
                       Platform& platform, std::vector<CollectiveCurve>& curves, std::string& network_note);

/** The rate a token bucket's bytes pass at (network.link_peak_bandwidth) on a link shaped with
 *  network.link_burst: ranks 0 and 1 idle until their buckets refill, then rank 0 sends
 *  kBurstProbeShare of the bucket and rank 1 answers with one float; the round trip less two
 *  latencies is the burst. The median over kBurstProbeRepeats; never below the link's
 *  bandwidth (a shaper slower than its path has no burst to speak of). Rank 0's fit. */
void calibrate_burst(const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int rank, Platform& platform,
                     std::string& note);

// ---------------------------------------------------------------------------------------------
// Progress (calibrate_progress.cpp)

/** The progress part (every rank at once): comm_compute_slowdown and
 *  network.busy_bandwidth_fraction of the calibration's progress mode, into `platform` on
 *  rank 0. Each repeat runs, through the executor's Interpreter, (1) one pass of the
 *  network's backward ops alone, (2) the probe allreduce alone, (3) a chain of probe
 *  allreduces outlasting about kSlowdownProbe_s of those ops: their time against (1) gives
 *  compute_slowdown, (4) one probe allreduce under kFractionCover times its time alone of
 *  those ops: its time against (2) gives busy_bandwidth_fraction, with the time any rank
 *  computed (ranks on a loaded machine drift apart; the engines slow a collective while any
 *  member computes); that allreduce's wait from its post to its start, with the passes
 *  holding the core, gives comm_start_wait_max. Times on the ranks' common clock. Throws
 *  std::invalid_argument when the network has nothing to probe with. */
void calibrate_progress(const Network& network, const CalibrateOptions& o, const Exchange& x, MPI_Comm comm, int size,
                        Platform& platform, ProgressSummary& summary);

}  // namespace calibration
}  // namespace cnnpar::real
