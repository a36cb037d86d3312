#pragma once
// Side-by-side comparison of two Traces (e.g. a prediction and a measurement).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/trace.hpp"

namespace cnnpar {

struct MetricComparison {
  std::string name;        ///< "iteration_s", "compute_max_s", "comm_s", "exposed_comm_s", "overlap_ratio_percent"
  double predicted = 0;
  double measured = 0;
  double absolute_error = 0;  ///< |predicted − measured|
  double relative_error = 0;  ///< absolute_error / |measured|; 0 if both are 0, +inf if only measured is 0
};

/** One compute op present in both traces, matched by (rank, label, occurrence of that
 *  label on the rank) — which equals (rank, op index) when both ran the same Schedule. */
struct OpDeviation {
  int rank = 0;
  int op = -1;               ///< op index in the predicted trace
  std::string label;
  double predicted_s = 0;    ///< duration
  double measured_s = 0;
  double deviation_s = 0;    ///< predicted − measured
};

struct CompareReport {
  std::string predicted_engine, measured_engine;
  std::vector<MetricComparison> metrics;
  std::vector<OpDeviation> largest_deviations;  ///< by |deviation|, largest first
  int matched_ops = 0;
  int unmatched_ops = 0;  ///< compute ops in either trace without a partner
};

/** Refuses to compare traces of different workloads: another network, global batch or rank
 *  count (InputError naming `measured_file`, the metadata path and both values). Another
 *  strategy or other strategy options are refused too unless `allow_other_strategy` (a user
 *  comparing dp against lee on purpose). */
void check_comparable(const Trace& predicted, const Trace& measured, const std::string& predicted_file,
                      const std::string& measured_file, bool allow_other_strategy);

/** @throws InputError if either trace has no measured iteration. */
CompareReport compare_traces(const Trace& predicted, const Trace& measured, int top_ops = 10);

std::string format_compare_table(const CompareReport& report);

/** Both traces as rows of the prediction CSV (analysis/rows.hpp kRowCsvHeader): the
 *  predicted row, then the measured one; speedup and efficiency are empty (no baseline). */
std::string compare_csv(const Trace& predicted, const Trace& measured);

/** Why a measurement may not be what it seems, one sentence each: a loaded machine (load
 *  average above half the cores when the run started, from the trace's metadata), iteration
 *  times that spread more than 10 % around their median, and ranks that all ran on one host
 *  while their measured communication took over twice the predicted (shared memory on the
 *  compute cores, not the network). `predicted` may be null. */
std::vector<std::string> measurement_warnings(const Trace* predicted, const Trace& measured);
nlohmann::json to_json(const CompareReport& report);

}  // namespace cnnpar
