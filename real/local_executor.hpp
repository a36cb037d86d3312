#pragma once
// Runs every rank of a Schedule in ONE process, without MPI: each rank's Runtime executes
// its program in order, and every kind of collective runs the point-to-point steps of the
// collective layer (real/collective_steps.hpp) on the ranks' buffers once every member has
// posted. The reference beside the MPI interpreter: the same Runtime calls in the same
// order, so a P-rank MPI run must reproduce its weights; also the P = 1 bench driver.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/schedule.hpp"
#include "real/runtime.hpp"

namespace cnnpar::real {

class Dataset;

/** Wall time of one compute op (label, kernel class, FLOPs from the Schedule). */
struct OpTiming {
  int rank = 0;
  int iteration = 0;
  std::string label;
  KernelClass kernel = KernelClass::other;
  double flops = 0;
  double seconds = 0;
};

class LocalExecutor {
 public:
  /** One Runtime per rank of `schedule`, all initialised from `seed`. */
  LocalExecutor(const Network& network, const Schedule& schedule, std::uint64_t seed, SgdConfig sgd = {});

  Runtime& runtime(int rank) { return *runtimes_.at(std::size_t(rank)); }
  int ranks() const { return int(runtimes_.size()); }

  /** Runs the whole schedule once on `data` (then finish_schedule() on every rank) and
   *  returns the global mean loss of each iteration (Σ ranks' loss sums / N).
   *  With `timings`, appends the wall time of every compute op; with `mark_s`, appends the
   *  time (seconds since the start of run) at which rank 0 reaches each mark.
   *  @throws InternalError when no rank can make progress (a deadlocked schedule). */
  std::vector<double> run(const Dataset& data, std::vector<OpTiming>* timings = nullptr,
                          std::vector<double>* mark_s = nullptr);

 private:
  Schedule schedule_;  // own copy, so a temporary schedule may be passed
  std::vector<std::unique_ptr<Runtime>> runtimes_;
};

}  // namespace cnnpar::real
