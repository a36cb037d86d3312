// Jobs that share a schedule build it once, and the batch lets go of it after its last job.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/error.hpp"
#include "experiments/shared_schedules.hpp"

using namespace cnnpar;

namespace {

Schedule named_schedule(const std::string& strategy) {
  Schedule schedule;
  schedule.strategy = strategy;
  return schedule;
}

}  // namespace

TEST_CASE("shared schedules: one build per slot, released after the last user") {
  SharedSchedules schedules;
  int builds_a = 0, builds_b = 0;
  const std::size_t a = schedules.add([&] { ++builds_a; return named_schedule("a"); }, 3);
  const std::size_t b = schedules.add([&] { ++builds_b; return named_schedule("b"); }, 1);
  std::shared_ptr<const Schedule> first = schedules.take(a);
  std::shared_ptr<const Schedule> second = schedules.take(a);
  CHECK(first == second);
  CHECK(first->strategy == "a");
  CHECK(schedules.take(b)->strategy == "b");
  std::shared_ptr<const Schedule> last = schedules.take(a);
  CHECK(last == first);
  CHECK(builds_a == 1);
  CHECK(builds_b == 1);
  first.reset();
  second.reset();
  CHECK(last.use_count() == 1);  // the slot keeps nothing after its third user
  CHECK_THROWS_AS(schedules.take(a), InternalError);  // a fourth taker is a bug
}

TEST_CASE("shared schedules: a build that throws is tried again by the next user") {
  SharedSchedules schedules;
  int attempts = 0;
  const std::size_t slot = schedules.add(
      [&] {
        if (++attempts == 1) throw std::runtime_error("first build fails");
        return named_schedule("dp");
      },
      2);
  CHECK_THROWS_AS(schedules.take(slot), std::runtime_error);
  CHECK(schedules.take(slot)->strategy == "dp");
  CHECK(attempts == 2);
}

TEST_CASE("shared schedules: concurrent users of one slot see one build") {
  SharedSchedules schedules;
  std::atomic<int> builds = 0;
  constexpr int kUsersPerThread = 200;
  const std::size_t slot = schedules.add([&] { ++builds; return named_schedule("lee"); }, 2 * kUsersPerThread);
  std::vector<const Schedule*> seen(2 * kUsersPerThread, nullptr);
  std::vector<std::shared_ptr<const Schedule>> keep_first(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kUsersPerThread; ++i) {
        std::shared_ptr<const Schedule> schedule = schedules.take(slot);
        seen[std::size_t(t * kUsersPerThread + i)] = schedule.get();
        if (i == 0) keep_first[std::size_t(t)] = schedule;
      }
    });
  for (std::thread& thread : threads) thread.join();
  CHECK(builds == 1);
  CHECK(keep_first[0] == keep_first[1]);
  for (const Schedule* schedule : seen) CHECK(schedule == keep_first[0].get());
}

TEST_CASE("schedule memo: one value per slot, made once, let go after the last user") {
  SharedSchedules schedules;
  const std::size_t slot = schedules.add([] { return named_schedule("dp"); }, 3);
  const std::shared_ptr<ScheduleMemo> memo = schedules.memo(slot);
  CHECK(schedules.memo(slot) == memo);  // every user of the slot gets the same memo
  int makes = 0;
  const auto make = [&] {
    ++makes;
    return std::vector<int>{1, 2, 3};
  };
  std::shared_ptr<const std::vector<int>> first = memo->get<std::vector<int>>(make);
  std::shared_ptr<const std::vector<int>> second = memo->get<std::vector<int>>(make);
  CHECK(first == second);
  std::shared_ptr<const std::vector<int>> last = memo->get<std::vector<int>>(make);
  CHECK(makes == 1);
  first.reset();
  second.reset();
  CHECK(last.use_count() == 1);  // the memo keeps nothing after its third user
  CHECK_THROWS_AS(memo->get<std::vector<int>>(make), InternalError);  // a fourth user is a bug
}

TEST_CASE("schedule memo: a make that throws is tried again by the next user, one kind of value only") {
  ScheduleMemo memo(3);
  int attempts = 0;
  const auto make = [&] {
    if (++attempts == 1) throw std::runtime_error("first make fails");
    return 7;
  };
  CHECK_THROWS_AS(memo.get<int>(make), std::runtime_error);
  CHECK(*memo.get<int>(make) == 7);
  CHECK(attempts == 2);
  CHECK_THROWS_AS(memo.get<double>([] { return 1.0; }), InternalError);
}
