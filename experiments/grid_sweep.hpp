#pragma once
// `cnnpar sweep`: the cross product of axes (platform paths, strategy options, strategy,
// network, platform, batch) × node counts on one engine, one CSV row per configuration, every
// configuration a job of Engine::run_all. The CSV is also the sweep's log: each finished row is
// appended at once, so an interrupted sweep loses no finished row and a rerun computes only the
// missing ones.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engines/registry.hpp"
#include "experiments/sweep_grid.hpp"
#include "experiments/sweep_shards.hpp"

namespace cnnpar {

/** What a sweep computes: the command line's settings, a sweep file's for those not given. */
struct GridSweepSettings {
  std::string network;
  std::string platform;
  std::string strategy;  ///< the strategy of points without a strategy axis
  /** Its options as given by flags (--k 9), typed by its schema; ignored with a strategy axis
   *  (options then come as --set k=9). */
  nlohmann::json strategy_values = nlohmann::json::object();
  bool recompute_columns = false;
  ConvPaths conv;  ///< --conv (im2col, direct or the layers run direct)
  std::int64_t batch = 256;
  int iterations = 3;
  int warmup = 1;
  bool uneven_batch = false;
  std::vector<std::string> sets;  ///< --set PATH=VALUE, a sweep file's first (later ones win)
  std::vector<std::string> axes;  ///< NAME=V1,V2,..., a sweep file's first
  std::string nodes;
  EngineSettings engine;
  int workers = 0;       ///< configurations at once; 0 = the cores
  std::string csv_log;   ///< the CSV appended to as rows finish and resumed from; "" = none
  std::optional<ShardSpec> shard;  ///< the rows this run computes; none = all
};

/** Takes the sweep file's settings (docs/formats.md "Sweep file") for every one whose flag
 *  (--network, --strategy, ...) `given` says was not given on the command line; --set values
 *  and axes of the file come before the command line's, and an axis given there replaces the
 *  file's of that name. @throws InputError naming the file, the JSON path and the value. */
void apply_sweep_file(const std::string& path, const std::function<bool(const std::string& flag)>& given,
                      GridSweepSettings& settings);

struct GridSweepCallbacks {
  std::function<void(int done, int total)> progress;
  std::function<bool()> stop;  ///< polled before each configuration starts
  std::function<void(const std::string& line)> note;  ///< what the sweep resumed
};

struct GridSweepResult {
  std::vector<SweepAxis> axes;
  std::string header;               ///< the CSV header
  std::vector<std::string> lines;   ///< every row ("\n"-terminated) in sweep order; partial when stopped
  std::size_t rows = 0;             ///< rows of this run (its shard's)
  std::size_t sweep_rows = 0;       ///< rows of the whole sweep
  std::string fingerprint;          ///< sweep_fingerprint of the whole sweep
  std::size_t computed = 0;         ///< by this run
  std::size_t resumed = 0;          ///< from the log
  bool stopped = false;             ///< `stop` said so before every row was computed
};

/** Runs the sweep (P = 1 of every point too, as its speedup baseline), appending rows to
 *  settings.csv_log as they finish. @throws InputError (origin "command line" or the log
 *  file) for a bad setting or a log of another sweep, before any configuration runs. */
GridSweepResult run_grid_sweep(const GridSweepSettings& settings, const GridSweepCallbacks& callbacks);

/** The `--json` document: the sweep's settings and its rows, numbers as numbers. */
nlohmann::json grid_sweep_json(const GridSweepSettings& settings, const GridSweepResult& result);

/** Where each axis's value is in a row: its configuration column, or its own column. */
std::vector<std::size_t> axis_value_columns(const std::vector<SweepAxis>& axes);

}  // namespace cnnpar
