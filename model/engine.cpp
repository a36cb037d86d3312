#include "model/engine.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace cnnpar {
namespace {

// The cores this process may run on (taskset, a Slurm allocation), not the machine's: TBB keeps
// to them, and asking it for more workers only prints a warning.
int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

BatchLedger::BatchLedger(std::size_t jobs, const BatchOptions& options)
    : options_(options),
      workers_(options.workers > 0 ? options.workers : usable_cores()),
      summaries_(jobs),
      errors_(jobs) {}

bool BatchLedger::stopping() {
  std::lock_guard lock(mutex_);
  if (!stopped_ && options_.stop && options_.stop()) stopped_ = true;
  return stopped_;
}

void BatchLedger::succeeded(std::size_t job, nlohmann::json summary) {
  std::lock_guard lock(mutex_);
  summaries_[job] = std::move(summary);
  if (options_.finished) options_.finished(job, summaries_[job]);
  ended();
}

void BatchLedger::failed(std::size_t job, std::exception_ptr error) {
  std::lock_guard lock(mutex_);
  errors_[job] = std::move(error);
  ended();
}

void BatchLedger::ended() {
  ++done_;
  if (options_.progress) options_.progress(done_, int(summaries_.size()));
}

std::vector<nlohmann::json> BatchLedger::finish() {
  for (const std::exception_ptr& error : errors_)
    if (error) std::rethrow_exception(error);
  return std::move(summaries_);
}

}  // namespace cnnpar
