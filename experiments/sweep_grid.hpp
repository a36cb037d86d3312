#pragma once
// The grid of `cnnpar sweep`: axes, their cross product, and the resumable CSV with one row per
// configuration (the axes' values and a node count).
//
// An axis is named by a platform JSON path ("network.bandwidth"), a strategy option ("k"), or
// one of the scenario's own choices: "strategy", "network" (the CNN), "platform", "batch".
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "experiments/sweep.hpp"

namespace cnnpar {

struct SweepAxis {
  std::string name;                 ///< as given: "network.bandwidth", "k", "strategy"
  std::vector<std::string> values;  ///< as given: "1Gbps", "9", "lee"
};

/** The axes that pick the scenario itself rather than a value inside it. */
bool is_scenario_axis(const std::string& name);

/** "NAME=V1,V2,..." @throws InputError(origin, flag, text, reason) without '=', with an empty
 *  name, an empty list or an empty value. */
SweepAxis parse_axis(const std::string& text, const std::string& origin, const std::string& flag);

/** One point of the cross product: a value per axis, "" where the axis does not apply (an
 *  option the point's strategy does not take). */
struct SweepPoint {
  std::vector<std::string> values;  ///< parallel to the axes
};

/** The cross product of `axes` in axis order (the last axis varies fastest). An axis over a
 *  strategy option applies only to the points whose strategy (the "strategy" axis's value, or
 *  `base_strategy`) takes it: elsewhere its value is "" and duplicates are dropped.
 *  @throws InputError(origin, flag, axis name, reason) when no strategy of the sweep takes an
 *  option axis, or two axes have the same name. */
std::vector<SweepPoint> sweep_points(const std::vector<SweepAxis>& axes, const std::string& base_strategy,
                                     const std::string& origin, const std::string& flag);

/** The CSV header: the configuration columns, one column per axis that is not one of them
 *  (a strategy, network, platform or batch axis is the configuration column of that name),
 *  then nodes and the metrics (the columns of kRowCsvHeader after `batch`). */
std::string sweep_grid_csv_header(const std::vector<SweepAxis>& axes);
/** The number of axis columns (axes that are not scenario axes). */
std::size_t sweep_grid_axis_columns(const std::vector<SweepAxis>& axes);
/** A point's fields before `nodes` (configuration, axes), which all its rows share. */
std::string sweep_grid_row_prefix(const ConfigColumns& config, const std::vector<SweepAxis>& axes,
                                  const SweepPoint& point);
/** One row ("\n"-terminated) of the point with that prefix. */
std::string sweep_grid_csv_line(const std::string& prefix, const SweepRow& row);
/** What identifies a row: its fields before the metrics (configuration, axes, nodes), joined. */
std::string sweep_grid_row_key(const std::string& prefix, int nodes);

/** The key of a row read back from its fields (what sweep_grid_row_key made): the first
 *  `key_fields` fields (configuration, axes, nodes), quoted as written and joined. */
std::string sweep_row_key(const std::vector<std::string>& fields, std::size_t key_fields);

/** Splits one RFC 4180 CSV line (no line break inside fields) into its fields.
 *  @returns false for a malformed line (an unterminated quote). */
bool split_csv_line(const std::string& line, std::vector<std::string>& fields);

/** The finished rows of an earlier run of the same sweep, read from its CSV.
 *  `keys` is filled with the key of every whole row; a torn last line (no final newline, the
 *  mark of a run killed while writing) is reported by `torn_bytes` so the caller can cut it.
 *  @throws InputError(file, "line 1", header, reason) when the header is not `header`, and
 *  (file, "line N", line, reason) for a row that does not parse. */
struct ExistingSweepRows {
  std::map<std::string, std::string> lines_by_key;  ///< key -> the whole line
  std::uintmax_t whole_bytes = 0;                   ///< length of the file up to the last whole line
  std::uintmax_t torn_bytes = 0;                    ///< bytes after it
};
ExistingSweepRows read_sweep_csv(const std::string& file, const std::string& header, std::size_t axis_columns);

}  // namespace cnnpar
