#pragma once
// What an engine derives from a schedule once for every job of a batch that shares it: a sweep
// over link rates replays one schedule at each rate, and the op times, rank classes and
// collective plans are the same at every rate.
#include <memory>
#include <mutex>
#include <typeindex>
#include <typeinfo>

#include "base/error.hpp"

namespace cnnpar {

/** Jobs given one memo run the same schedule object on platforms equal in everything but the
 *  network's rates, latencies, topology and other link fields (network.algorithms and
 *  element_bytes equal too: what workload/strategy.hpp's schedule_platform_key keeps). An
 *  engine may keep there only what it derives from that common part. */
class ScheduleMemo {
 public:
  /** `users`: the jobs that will call get(), at least one. */
  explicit ScheduleMemo(int users) : users_left_(users) {
    CNNPAR_ASSERT(users >= 1, "ScheduleMemo: a memo needs a user");
  }

  /** The value `make()` gives (a T), made by the first caller while the others wait; the memo
   *  lets go of it after its last user, so a batch holds it no longer than its jobs need it.
   *  A `make` that throws is tried again by the next caller. Thread-safe. */
  template <class T, class Make>
  std::shared_ptr<const T> get(Make&& make) {
    std::lock_guard lock(mutex_);
    CNNPAR_ASSERT(users_left_ > 0, "ScheduleMemo::get: more users than announced");
    if (!value_) {
      try {
        value_ = std::make_shared<const T>(make());
      } catch (...) {
        --users_left_;  // this user's job fails; the next one tries again
        throw;
      }
      type_ = std::type_index(typeid(T));
    }
    CNNPAR_ASSERT(type_ == std::type_index(typeid(T)), "ScheduleMemo::get: one memo, two kinds of value");
    std::shared_ptr<const T> value = std::static_pointer_cast<const T>(value_);
    if (--users_left_ == 0) value_.reset();
    return value;
  }

 private:
  std::mutex mutex_;
  int users_left_ = 0;
  std::shared_ptr<const void> value_;
  std::type_index type_ = std::type_index(typeid(void));
};

}  // namespace cnnpar
