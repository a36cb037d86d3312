#pragma once
// Jobs of a batch whose schedules are equal build it once: a sweep over link rates gives every
// rate the same schedule (workload/strategy.hpp: schedule_platform_key), and the engine derives
// what it can from it once (ScheduleMemo).
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "model/schedule.hpp"
#include "model/schedule_memo.hpp"

namespace cnnpar {

class SharedSchedules {
 public:
  /** A slot that `users` jobs take from (at least one); returns its index. */
  std::size_t add(std::function<Schedule()> build, int users);
  /** The slot's schedule, built by its first taker (the others wait); the slot lets go of it
   *  after its last taker, so a batch that runs its jobs in slot order holds about one
   *  schedule per worker. A build that throws is tried again by the next taker. Thread-safe. */
  std::shared_ptr<const Schedule> take(std::size_t slot);
  /** The slot's memo (EngineJob::memo), for as many users as the slot has. */
  std::shared_ptr<ScheduleMemo> memo(std::size_t slot) const { return slots_.at(slot)->memo; }

 private:
  struct Slot {
    std::function<Schedule()> build;
    int users_left = 0;
    std::shared_ptr<const Schedule> schedule;
    std::shared_ptr<ScheduleMemo> memo;
    std::mutex mutex;
  };
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace cnnpar
