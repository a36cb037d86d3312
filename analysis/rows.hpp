#pragma once
// One row per node count with the metrics of analysis/metrics.hpp and the speedup against P = 1,
// the configuration columns every CSV starts with, and the CSV, JSON and table writers.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/metrics.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/trace.hpp"

namespace cnnpar {

struct SweepRow {
  int nodes = 0;
  double iteration_s = 0;            ///< median iteration time (seconds)
  double compute_s = 0;              ///< compute seconds per iteration, max over ranks
  double comm_s = 0;                 ///< Σ T_c per iteration, max over ranks (seconds)
  double exposed_comm_s = 0;         ///< Σ T_b per iteration, max over ranks (seconds)
  double overlap_ratio_percent = 0;  ///< R, Lee Eq. 11
  double speedup = 0;                ///< T_iter(1) / T_iter(P)
  double efficiency = 0;             ///< speedup / P
};

SweepRow make_sweep_row(int nodes, const TraceMetrics& metrics, double iteration_1_s);

/** Rows from already computed metrics (e.g. traces of simulate_many), nodes[i] ↔ metrics[i]. */
std::vector<SweepRow> sweep_rows(const std::vector<int>& nodes, const std::vector<TraceMetrics>& metrics,
                                 double iteration_1_s);

/** Which configuration a CSV row describes: the first columns of every CSV cnnpar writes, so
 *  that CSVs of several commands and runs concatenate into one table. */
struct ConfigColumns {
  std::string network, platform, engine, strategy;
  std::string options;     ///< the strategy's own options in schema order, "k=9 f=2" ("" if none)
  std::int64_t batch = 0;  ///< global mini-batch N (images)
};
/** From JSON strategy options (to_json(StrategyOptions), or a trace's metadata "options"). */
ConfigColumns config_columns(const nlohmann::json& strategy_options, const std::string& network,
                             const std::string& platform, const std::string& engine);
/** From a trace's metadata (every back-end writes strategy, options, network and platform). */
ConfigColumns config_columns(const Trace& trace);

/** The header of every row CSV (predict, simulate, report series, compare): the configuration
 *  columns, then `nodes` and the metrics of SweepRow under their field names. */
extern const char* const kRowCsvHeader;
/** The configuration columns of a CSV line: "network,platform,engine,strategy,options,batch"
 *  (no trailing comma), quoted where needed. */
std::string config_csv_fields(const ConfigColumns& config);
/** One row CSV line ("\n"-terminated). Speedup and efficiency are left empty when `with_speedup`
 *  is false (a single measured configuration has no baseline). */
std::string row_csv_line(const ConfigColumns& config, const SweepRow& row, bool with_speedup = true);
/** The part of row_csv_line after the configuration columns: ",nodes,...\n". */
std::string row_csv_tail(const SweepRow& row, bool with_speedup = true);

std::string sweep_csv(const ConfigColumns& config, const std::vector<SweepRow>& rows);
nlohmann::json sweep_json(const std::vector<SweepRow>& rows, const nlohmann::json& metadata);
std::string format_sweep_table(const std::vector<SweepRow>& rows);

}  // namespace cnnpar
