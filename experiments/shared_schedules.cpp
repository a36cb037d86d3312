#include "experiments/shared_schedules.hpp"

#include "base/error.hpp"

namespace cnnpar {

std::size_t SharedSchedules::add(std::function<Schedule()> build, int users) {
  CNNPAR_ASSERT(users >= 1, "SharedSchedules::add: a slot needs a user");
  auto slot = std::make_unique<Slot>();
  slot->build = std::move(build);
  slot->users_left = users;
  slot->memo = std::make_shared<ScheduleMemo>(users);
  slots_.push_back(std::move(slot));
  return slots_.size() - 1;
}

std::shared_ptr<const Schedule> SharedSchedules::take(std::size_t index) {
  Slot& slot = *slots_.at(index);
  std::lock_guard lock(slot.mutex);
  CNNPAR_ASSERT(slot.users_left > 0, "SharedSchedules::take: more takers than users");
  if (!slot.schedule) slot.schedule = std::make_shared<const Schedule>(slot.build());
  std::shared_ptr<const Schedule> schedule = slot.schedule;
  if (--slot.users_left == 0) slot.schedule.reset();
  return schedule;
}

}  // namespace cnnpar
