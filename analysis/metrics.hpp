#pragma once
// Metrics computed from a Trace — the one implementation every back-end shares.
//
// Definitions (per rank r, measured iteration i = iterations >= warmup_iterations):
//  * iteration time: mark_i − mark_{i−1} on each rank (mark_{−1} = origin 0), max over
//    ranks; the reported value is the median over measured iterations;
//  * compute time: Σ (end − start) of the rank's compute ops that start in
//    [mark_{i−1}, mark_i);
//  * T_c = comm_end − comm_start per collective (Lee et al.'s communication time);
//  * T_b = max(0, wait_end − max(wait_start, comm_start)): the part of the wait during which
//    the collective was in progress ("measurable communication time"), so 0 <= T_b <= T_c
//    whenever the wait ends with the collective; the raw wait_end − wait_start is wait_s;
//    a collective belongs to the iteration whose [mark_{i−1}, mark_i) holds the start of its
//    wait — so an exchange posted in one iteration and waited for in the next (lee's delayed
//    fc updates) counts where its wait can cost time, and waits after the last mark (a
//    schedule's final drain) count nowhere. A Trace does not order a zero-length wait against
//    a mark at the same instant; such a wait counts in the later iteration (builders put the
//    updates between the last wait and the mark, so only drains meet that case);
//  * R = 100 · Σ(T_c − T_b) / Σ T_c over all ranks and measured iterations (Lee Eq. 11),
//    0 when Σ T_c = 0;
//  * per-iteration sums (compute, Σ T_c, Σ T_b, wait) are taken per rank; "max" and "mean"
//    are over ranks, then the median over measured iterations;
//  * load balance = mean / max compute over ranks (1 = perfectly balanced);
//    busy time of a rank = its compute per iteration, median over measured iterations, and
//    busy_min_max = min / max busy time over ranks (1 = balanced: the figure heterogeneous
//    nodes are judged by, as in Marques et al.);
//    synchronisation waiting = BPT-CNN Eq. 8: Σ_i Σ_j (max_j' t_j'(i) − t_j(i)) with t the
//    compute time, summed over measured iterations;
//  * communication volume: bytes a rank hands to its collectives per iteration (size
//    conventions of model/schedule.hpp), max over ranks.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/statistics.hpp"
#include "model/classed_trace.hpp"
#include "model/trace.hpp"

namespace cnnpar {

/** One collective on one rank in a measured iteration. */
struct CollectiveTiming {
  int rank = 0;
  int collective = -1;
  std::string label;
  CollectiveKind kind = CollectiveKind::allreduce;
  int iteration = 0;     ///< the iteration its wait falls in (see above)
  double bytes = 0;
  double comm_s = 0;     ///< T_c
  double exposed_s = 0;  ///< T_b
  double wait_s = 0;     ///< wait_end − wait_start
};

/** Compute seconds of one (layer, phase) per measured iteration. */
struct LayerPhaseTime {
  int layer = -1;
  std::string name;       ///< label up to its first '.', e.g. "conv1"
  Phase phase = Phase::forward;
  double mean_s = 0;      ///< mean over ranks
  double max_s = 0;       ///< max over ranks
};

struct TraceMetrics {
  std::string engine;
  int ranks = 0;
  int warmup_iterations = 0;
  std::vector<int> measured_iterations;
  std::vector<double> iteration_times_s;  ///< per measured iteration, max over ranks
  double iteration_s = 0;                 ///< median of iteration_times_s
  double compute_max_s = 0;               ///< compute seconds per iteration, max over ranks
  double compute_mean_s = 0;              ///< compute seconds per iteration, mean over ranks
  /** Compute seconds per iteration in ops other than GEMMs (im2col, col2im, pooling,
   *  element-wise, softmax, update), max over ranks. */
  double non_gemm_compute_s = 0;
  double comm_s = 0;                      ///< Σ T_c per iteration, max over ranks
  double exposed_comm_s = 0;              ///< Σ T_b per iteration, max over ranks
  double wait_s = 0;                      ///< Σ wait per iteration, max over ranks
  double total_comm_s = 0;                ///< Σ T_c over ranks and measured iterations
  double total_exposed_s = 0;             ///< Σ T_b over ranks and measured iterations
  double overlap_ratio_percent = 0;       ///< R, Lee Eq. 11
  double comm_bytes = 0;                  ///< bytes per iteration, max over ranks
  double load_balance = 1;                ///< mean / max compute over ranks (median over iterations)
  double sync_wait_s = 0;                 ///< BPT-CNN Eq. 8 over measured iterations (seconds)
  std::vector<double> busy_s;             ///< per rank: compute seconds per iteration (median over iterations)
  double busy_min_max = 1;                ///< min / max of busy_s (1 = balanced)
  std::vector<CollectiveTiming> collectives;  ///< measured iterations only
  std::vector<LayerPhaseTime> layers;         ///< sorted by layer, then phase
};

/** What compute_metrics fills beyond the scalar metrics. */
struct MetricsDetail {
  bool per_collective = true;  ///< TraceMetrics::collectives
  bool per_layer = true;       ///< TraceMetrics::layers
};

/** The ranks the trace's metadata names as parameter servers ("server_ranks"): their merges
 *  are no iterations, so every per-iteration metric is over the other ranks.
 *  @throws InputError for a list that is not of the trace's ranks, each at most once. */
std::vector<int> server_ranks(const Trace& trace);

/** @throws InputError (file "<trace>") if the trace has no measured iteration on every rank,
 *  or no rank that is not a server. */
TraceMetrics compute_metrics(const Trace& trace, const MetricsDetail& detail = {});
/** The same from a trace whose rank classes are not expanded: exactly compute_metrics of
 *  ClassedTrace::expand(), computed once per class. */
TraceMetrics compute_metrics(const ClassedTrace& trace, const MetricsDetail& detail = {});

/** T_b of one record (see above). */
double exposed_comm_s(const CollectiveRecord& record);

/** S(P) = T_iter(1) / T_iter(P); 0 if T_iter(P) is 0. */
double speedup(double iteration_1_s, double iteration_p_s);
/** S(P) / P. */
double efficiency(double speedup, int ranks);

// median(): base/statistics.hpp

/** Spread of the measured iteration times: 100 · (max − min) / median (0 with fewer than two). */
double iteration_spread_percent(const TraceMetrics& metrics);

nlohmann::json to_json(const TraceMetrics& metrics);

}  // namespace cnnpar
