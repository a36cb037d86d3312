#pragma once
// What a fit is fitted to: the published numbers of studies and the mean iteration times of
// measured traces, and how each is predicted on a candidate platform.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "experiments/sweep.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/trace.hpp"
#include "workload/strategy.hpp"
#include "workload/study.hpp"

namespace cnnpar {

/** One observed number. */
struct Observation {
  std::string source;    ///< study name, or trace file
  std::string file;      ///< the study's or trace's file (error messages)
  std::string series;    ///< study series label ("" for a trace)
  std::string quantity;  ///< "speedup", "iteration_s" or "max_speedup"
  int nodes = 0;         ///< node count (0 for a maximum speedup: its node count is predicted)
  std::string network;   ///< network name
  double observed = 0;   ///< published or measured (iteration_s in seconds)
  int measured_iterations = 0;  ///< a trace's measured iterations (0 for published numbers)
  std::string path;          ///< JSON path of the value in `file` ("/series/1/paper/speedup_at/128")
  std::string network_path;  ///< JSON path that names its network ("/series/1/network", "/metadata/network")
  /** What was run and measured: network, strategy options, batch, quantity and node count (the
   *  node list for a maximum). Two studies that publish the same number share it. */
  std::string configuration;
  /** "lee k=9 f=2: speedup at 128 nodes", "iteration time at 2 nodes (mean of 4 measured)". */
  std::string label() const;
};

/** `--only KEY=VALUE[,VALUE...]` (all given filters hold): `series` (labels), `nodes` (node
 *  counts; drops maximum speedups, which have none), `quantity` (speedup, iteration_s,
 *  max_speedup). */
struct ObservationFilter {
  std::vector<std::string> series;
  std::vector<int> nodes;
  std::vector<std::string> quantities;
  bool keeps(const std::string& series_label, const std::string& quantity, int nodes) const;
};
/** @throws InputError(origin, flag, text, reason) for an unknown key or a bad value. */
ObservationFilter parse_observation_filter(const std::vector<std::string>& texts, const std::string& origin = "command line",
                                           const std::string& flag = "--only");

/** The observations of a fit and how to predict each on a candidate platform. */
class Observations {
 public:
  explicit Observations(EngineFactory make_engine) : make_engine_(std::move(make_engine)) {}

  /** Every published number (series' `paper`) of `study` read from `file` that `filter` keeps
   *  and that lies on one of the study's node counts, in `cnnpar report`'s order.
   *  @returns how many were added. @throws InputError for a series whose network does not load. */
  std::size_t add_study(const Study& study, const std::string& file, const ObservationFilter& filter = {});
  /** The measured mean iteration time of `trace` (read from `file`), predicted on the schedule
   *  rebuilt from its metadata (network, strategy and options, batch, ranks, iterations,
   *  warm-up, im2col columns, slowed-down ranks; a `real` trace's FP32 messages).
   *  @throws InputError naming the file and the metadata path that does not do. */
  void add_trace(const Trace& trace, const std::string& file);

  const std::vector<Observation>& list() const { return observations_; }
  std::size_t size() const { return observations_.size(); }
  /** The observed values, in list order. */
  std::vector<double> observed() const;
  /** The predicted value of every observation on `platform`, in list order.
   *  @throws InputError when a configuration does not fit the platform (too few nodes). */
  std::vector<double> predict(const Platform& platform) const;

 private:
  struct StudyGroup {
    Study study;        ///< reduced to the kept paper numbers and the node counts they need
    std::size_t first;  ///< index of its first observation
    std::size_t count;
  };
  struct TraceGroup {
    Network network;
    StrategyOptions options;
    std::map<int, double> slowdown;  ///< rank -> factor (metadata.slowdown)
    bool executor_elements = false;  ///< measured by cnnpar-run: messages of FP32 elements
    std::size_t index;
  };
  EngineFactory make_engine_;
  std::vector<Observation> observations_;
  std::vector<StudyGroup> studies_;
  std::vector<TraceGroup> traces_;
};

}  // namespace cnnpar
