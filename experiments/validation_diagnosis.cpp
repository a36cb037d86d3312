// The diagnosis of a miss: the iteration error split into compute and exposed communication,
// refined by the ops and collectives behind it; and the compute speed check of a measured run.
#include "experiments/validation_diagnosis.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace cnnpar {

namespace {

// Message sizes per step that separate the communication causes (diagnose).
constexpr double kLatencyBoundBytes = 64.0 * 1024;
constexpr double kBandwidthBoundBytes = 1024.0 * 1024;
// A collective "overlapped compute" when its rank computed during at least this fraction of
// its measured T_c; a compute op "overlapped communication" likewise.
constexpr double kOverlapFraction = 0.25;

}  // namespace

const char* to_string(MissCause cause) {
  switch (cause) {
    case MissCause::none: return "none";
    case MissCause::compute: return "compute";
    case MissCause::effective_bandwidth: return "effective bandwidth";
    case MissCause::latency: return "latency";
    case MissCause::progress: return "progress";
    case MissCause::tcp_behaviour: return "TCP behaviour";
    case MissCause::contention: return "contention";
  }
  return "none";
}

namespace {

/** Seconds of [begin, end] covered by the union of `spans` (sorted by start). */
double covered_s(double begin, double end, const std::vector<std::pair<double, double>>& spans) {
  double covered = 0, reach = begin;
  for (const auto& [start, stop] : spans) {
    if (stop <= reach) continue;
    if (start >= end) break;
    const double from = std::max(start, reach), to = std::min(stop, end);
    if (to > from) covered += to - from;
    reach = std::max(reach, to);
  }
  return covered;
}

/** The measured iterations' window [first mark before, last mark] of a rank. */
std::pair<double, double> measured_window(const RankTrace& rank, int warmup) {
  double begin = 0, end = 0;
  for (const MarkRecord& mark : rank.marks) {
    if (mark.iteration == warmup - 1) begin = mark.time_s;
    end = std::max(end, mark.time_s);
  }
  return {begin, end};
}

/** Bytes one step of a collective moves, roughly: ring-like allreduce and reduce_scatter move
 *  a P-th of the vector per step; the other kinds move their contribution. For sorting
 *  collectives into latency-, TCP- and bandwidth-bound sizes only. */
double step_bytes(const CollectiveRecord& record, int ranks) {
  const bool split = record.kind == CollectiveKind::allreduce || record.kind == CollectiveKind::reduce_scatter;
  return split ? record.bytes / std::max(1, ranks) : record.bytes;
}

/** When the last member of each collective started it (its communication engine began), by id. */
std::map<int, double> last_starts(const Trace& trace) {
  std::map<int, double> latest;
  for (const RankTrace& rank : trace.ranks)
    for (const CollectiveRecord& c : rank.collectives) {
      const auto [it, inserted] = latest.try_emplace(c.collective, c.comm_start_s);
      if (!inserted) it->second = std::max(it->second, c.comm_start_s);
    }
  return latest;
}

struct Deviation {
  double predicted_s = 0;
  double measured_s = 0;
  int count = 0;
  double bytes = 0;  ///< step bytes, summed
  double error_s() const { return predicted_s - measured_s; }
  double relative() const { return measured_s > 0 ? predicted_s / measured_s - 1 : 0; }
};

/** In-flight spans [comm_start, comm_end] of the collectives of rank `only_rank` (-1: of every
 *  rank), sorted by start. */
std::vector<std::pair<double, double>> comm_spans(const Trace& trace, int only_rank) {
  std::vector<std::pair<double, double>> spans;
  for (std::size_t r = 0; r < trace.ranks.size(); ++r)
    if (only_rank < 0 || int(r) == only_rank)
      for (const CollectiveRecord& c : trace.ranks[r].collectives) spans.emplace_back(c.comm_start_s, c.comm_end_s);
  std::sort(spans.begin(), spans.end());
  return spans;
}

/** Adds the compute ops of `m`'s measured iterations (only GEMMs when `gemm_only`), against the
 *  same ops of `p`, to `overlapped` when `busy` spans cover more than kOverlapFraction of them,
 *  else to `alone`. */
void split_ops(const RankTrace& m, const RankTrace& p, int warmup, const std::vector<std::pair<double, double>>& busy,
               bool gemm_only, Deviation& alone, Deviation& overlapped) {
  const auto [begin, end] = measured_window(m, warmup);
  std::map<int, const ComputeRecord*> predicted_ops;
  for (const ComputeRecord& op : p.compute) predicted_ops[op.op] = &op;
  for (const ComputeRecord& op : m.compute) {
    if (op.start_s < begin || op.start_s >= end || (gemm_only && op.kernel != KernelClass::gemm)) continue;
    const auto found = predicted_ops.find(op.op);
    if (found == predicted_ops.end()) continue;
    const double duration = op.end_s - op.start_s;
    Deviation& d = covered_s(op.start_s, op.end_s, busy) > kOverlapFraction * duration ? overlapped : alone;
    d.measured_s += duration;
    d.predicted_s += found->second->end_s - found->second->start_s;
    ++d.count;
  }
}

std::string percent(double relative) { return fmt::format("{:+.1f} %", 100 * relative); }
std::string ms(double seconds) { return fmt::format("{:.2f} ms", 1e3 * seconds); }

}  // namespace

Diagnosis diagnose(const Trace& predicted, const TraceMetrics& pm, const Trace& measured, const TraceMetrics& mm,
                   double tolerance_percent) {
  Diagnosis out;
  if (!(mm.iteration_s > 0)) return out;
  const double error = pm.iteration_s / mm.iteration_s - 1;
  if (std::abs(100 * error) <= tolerance_percent) {
    out.explanation = fmt::format("iteration {} of the measured, within {:g} %", percent(error), tolerance_percent);
    return out;
  }
  const double compute_error_s = pm.compute_max_s - mm.compute_max_s;
  const double exposed_error_s = pm.exposed_comm_s - mm.exposed_comm_s;
  const double iteration_error_s = pm.iteration_s - mm.iteration_s;
  const double other_error_s = iteration_error_s - compute_error_s - exposed_error_s;
  const int ranks = int(measured.ranks.size());
  const int warmup = measured.warmup_iterations;
  const std::string head = fmt::format("iteration {} ({} predicted, {} measured)", percent(error), ms(pm.iteration_s),
                                       ms(mm.iteration_s));

  // Waits beyond compute and exposed communication: ranks that drift apart.
  if (std::abs(other_error_s) > std::max(std::abs(compute_error_s), std::abs(exposed_error_s))) {
    out.cause = MissCause::contention;
    out.explanation = fmt::format(
        "{}: {} of it is neither compute ({}) nor exposed communication ({}) but ranks waiting for each other, "
        "as ranks that share the machine's cores drift apart",
        head, ms(other_error_s), ms(compute_error_s), ms(exposed_error_s));
    return out;
  }

  if (std::abs(compute_error_s) >= std::abs(exposed_error_s)) {
    // Compute: ops alone against ops that ran while the rank's communication progressed.
    Deviation alone, overlapped;
    for (std::size_t r = 0; r < measured.ranks.size() && r < predicted.ranks.size(); ++r)
      split_ops(measured.ranks[r], predicted.ranks[r], warmup, comm_spans(measured, int(r)), false, alone, overlapped);
    const bool progress = std::abs(overlapped.error_s()) > std::abs(alone.error_s());
    out.cause = progress ? MissCause::progress : MissCause::compute;
    out.explanation = fmt::format(
        "{}: compute {} per iteration (predicted {}, measured {}); ops that ran while communication progressed "
        "{} ({} ops), ops alone {} ({} ops){}",
        head, ms(compute_error_s), ms(pm.compute_max_s), ms(mm.compute_max_s), percent(overlapped.relative()),
        overlapped.count, percent(alone.relative()), alone.count,
        progress ? ": the cost of communication to compute (comm_compute_slowdown) is off" : "");
    return out;
  }

  // Communication: every collective of the measured iterations, predicted against measured. A
  // collective's T_c on a rank includes waiting for its last member to start it (rank skew);
  // its transfer is timed from that start, in both traces (their clocks are common to the ranks).
  const std::map<int, double> measured_last_start = last_starts(measured);
  const std::map<int, double> predicted_last_start = last_starts(predicted);
  Deviation during_compute, idle;
  Deviation small, middle, large;
  Deviation skew;  ///< waiting for the last member to start: its start − the rank's own
  for (std::size_t r = 0; r < measured.ranks.size() && r < predicted.ranks.size(); ++r) {
    const RankTrace& m = measured.ranks[r];
    const RankTrace& p = predicted.ranks[r];
    const auto [begin, end] = measured_window(m, warmup);
    std::vector<std::pair<double, double>> busy;
    for (const ComputeRecord& op : m.compute) busy.emplace_back(op.start_s, op.end_s);
    std::sort(busy.begin(), busy.end());
    std::map<int, const CollectiveRecord*> predicted_collectives;
    for (const CollectiveRecord& c : p.collectives) predicted_collectives[c.collective] = &c;
    for (const CollectiveRecord& c : m.collectives) {
      if (c.wait_start_s < begin || c.wait_start_s >= end) continue;
      const auto found = predicted_collectives.find(c.collective);
      if (found == predicted_collectives.end()) continue;
      const double measured_s = std::max(0.0, c.comm_end_s - measured_last_start.at(c.collective));
      const double predicted_s =
          std::max(0.0, found->second->comm_end_s - predicted_last_start.at(found->second->collective));
      skew.measured_s += measured_last_start.at(c.collective) - c.comm_start_s;
      skew.predicted_s += predicted_last_start.at(c.collective) - found->second->comm_start_s;
      ++skew.count;
      const bool with_compute = covered_s(c.comm_start_s, c.comm_end_s, busy) > kOverlapFraction * measured_s;
      Deviation& d = with_compute ? during_compute : idle;
      d.measured_s += measured_s;
      d.predicted_s += predicted_s;
      ++d.count;
      if (with_compute) continue;  // sizes are judged on collectives that had the link to themselves
      const double bytes = step_bytes(c, ranks);
      Deviation& by_size = bytes < kLatencyBoundBytes ? small : bytes < kBandwidthBoundBytes ? middle : large;
      by_size.measured_s += measured_s;
      by_size.predicted_s += predicted_s;
      by_size.bytes += bytes;
      ++by_size.count;
    }
  }
  const std::string comm_head =
      fmt::format("{}: exposed communication {} per iteration (predicted {}, measured {})", head, ms(exposed_error_s),
                  ms(pm.exposed_comm_s), ms(mm.exposed_comm_s));
  if (during_compute.count > 0 && std::abs(during_compute.relative()) > 2 * std::abs(idle.relative()) &&
      std::abs(100 * during_compute.relative()) > tolerance_percent) {
    out.cause = MissCause::progress;
    out.explanation = fmt::format(
        "{}; collectives that ran during compute are predicted {} of their measured transfer time ({} of them), those "
        "alone {} ({}): posted collectives do not progress as the model assumes",
        comm_head, percent(during_compute.relative()), during_compute.count, percent(idle.relative()), idle.count);
    return out;
  }
  const Deviation* worst = &large;
  for (const Deviation* d : {&small, &middle})
    if (std::abs(d->error_s()) > std::abs(worst->error_s())) worst = d;
  if (std::abs(skew.error_s()) > std::abs(worst->error_s())) {
    out.cause = MissCause::contention;
    out.explanation = fmt::format(
        "{}; ranks waited {} for the last member to start their collectives, {} predicted (summed over ranks and "
        "measured iterations), while the transfers themselves are predicted {}: ranks that share the machine drift apart",
        comm_head, ms(skew.measured_s), ms(skew.predicted_s),
        percent((small.predicted_s + middle.predicted_s + large.predicted_s) /
                    std::max(1e-300, small.measured_s + middle.measured_s + large.measured_s) - 1));
    return out;
  }
  out.cause = worst == &large ? MissCause::effective_bandwidth : worst == &small ? MissCause::latency : MissCause::tcp_behaviour;
  out.explanation = fmt::format(
      "{}; collectives alone, predicted against measured transfer time (from the last member's start): steps < 64 KiB "
      "{} ({}), 64 KiB - 1 MiB {} ({}), >= 1 MiB {} ({})",
      comm_head, percent(small.relative()), small.count, percent(middle.relative()), middle.count,
      percent(large.relative()), large.count);
  if (ranks > 2 && worst == &large && idle.count > 0)
    out.explanation += "; with more than two ranks the nodes' traffic also shares the machine";
  return out;
}

std::optional<ComputeSpeedCheck> compute_speed_check(const Trace& predicted, const Trace& measured) {
  const std::vector<std::pair<double, double>> every_rank = comm_spans(measured, -1);
  Deviation alone, overlapped;
  for (std::size_t r = 0; r < measured.ranks.size() && r < predicted.ranks.size(); ++r)
    split_ops(measured.ranks[r], predicted.ranks[r], measured.warmup_iterations, every_rank, true, alone, overlapped);
  const double predicted_s = alone.predicted_s + overlapped.predicted_s;
  if (!(alone.predicted_s > 0) || alone.predicted_s < kMinUndisturbedShare * predicted_s) return std::nullopt;
  return ComputeSpeedCheck{alone.measured_s / alone.predicted_s, alone.count, alone.predicted_s / predicted_s};
}

bool compute_speed_off(double ratio, double tolerance_percent) {
  return ratio >= 0 && 100 * std::abs(ratio - 1) > tolerance_percent;
}

}  // namespace cnnpar
