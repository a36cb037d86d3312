#pragma once
// The one narrow boundary between workload and back-ends: a Schedule in, a Trace out.
// analysis/ reaches engines only through this interface.
#include <memory>
#include <string>

#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"

namespace cnnpar {

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  /** Replays `schedule` on `platform` and returns its Trace.
   *  @throws InputError if the schedule does not fit the platform (e.g. more ranks than nodes). */
  virtual Trace run(const Schedule& schedule, const Platform& platform) = 0;
};

}  // namespace cnnpar
