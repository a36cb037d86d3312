#pragma once
// The one narrow boundary between workload and back-ends: a Schedule in, a Trace out; and many
// of them at once, each reduced to what its caller keeps. experiments/ reaches engines only
// through this interface (by name, through engines/registry.hpp).
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/classed_trace.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "model/schedule_memo.hpp"
#include "model/trace.hpp"

namespace cnnpar {

/** One configuration of a batch (Engine::run_all). */
struct EngineJob {
  /** Builds the schedule where the job runs (a worker thread, or SimGrid's forked child), so a
   *  large sweep never holds every schedule at once; jobs whose schedules are equal may share
   *  one. @throws InputError for a bad configuration. */
  std::function<std::shared_ptr<const Schedule>()> schedule;
  const Platform* platform = nullptr;
  /** What the caller keeps of the trace, computed where the trace was made: a forked child
   *  sends back only this. Numbers survive the trip exactly (17 significant digits). */
  std::function<nlohmann::json(const Trace&)> summarize;
  /** Optional: the same summary read from the trace before its rank classes are expanded, and
   *  without labels and metadata (TraceDetail::timing). An engine that replays one rank per
   *  class calls it instead of `summarize`, sparing the copies of the representatives' records;
   *  it must give exactly what `summarize` gives on the full trace. */
  std::function<nlohmann::json(const ClassedTrace&)> summarize_classed;
  /** Optional: shared by the jobs that share this job's schedule (ScheduleMemo says what else
   *  they share); an engine that uses it calls get() once per job. */
  std::shared_ptr<ScheduleMemo> memo;
};

struct BatchOptions {
  /** Jobs at once (threads, or forked children for SimGrid); 0 = the cores; 1 = one after
   *  another, in this thread where the engine allows it. */
  int workers = 0;
  /** Called in this process, one call at a time, as each job ends (not for a job that failed),
   *  with its summary (which it may move from). */
  std::function<void(std::size_t job, nlohmann::json& summary)> finished;
  /** Called in this process, one call at a time, after each job (failed ones too). */
  std::function<void(int done, int total)> progress;
  /** Polled before each job starts: true starts no more (a sweep interrupted by a signal). */
  std::function<bool()> stop;
};

/** What every engine's run_all shares: each job's summary or failure handed to the caller one
 *  at a time as it ends, and the first failure in job order rethrown at the end. Thread-safe. */
class BatchLedger {
 public:
  BatchLedger(std::size_t jobs, const BatchOptions& options);
  /** Jobs at once: options.workers, or the cores for 0. */
  int workers() const { return workers_; }
  /** True once options.stop said so: start no more jobs. */
  bool stopping();
  void succeeded(std::size_t job, nlohmann::json summary);
  void failed(std::size_t job, std::exception_ptr error);
  /** The summaries in job order. @throws the first failure in job order. */
  std::vector<nlohmann::json> finish();

 private:
  void ended();  // with mutex_ held
  const BatchOptions& options_;
  int workers_ = 1;
  std::mutex mutex_;
  bool stopped_ = false;
  int done_ = 0;
  std::vector<nlohmann::json> summaries_;
  std::vector<std::exception_ptr> errors_;
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  /** Replays `schedule` on `platform` and returns its Trace.
   *  @throws InputError if the schedule does not fit the platform (e.g. more ranks than nodes). */
  virtual Trace run(const Schedule& schedule, const Platform& platform) = 0;
  /** Runs every job (at most options.workers at once) and returns their summaries in job order
   *  (null for a job that did not run because of `stop`). When jobs failed, the first failure
   *  in job order is rethrown once every started job has ended, so the error does not depend on
   *  timing. */
  virtual std::vector<nlohmann::json> run_all(const std::vector<EngineJob>& jobs, const BatchOptions& options) = 0;
};

}  // namespace cnnpar
