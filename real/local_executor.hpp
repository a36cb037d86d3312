#pragma once
// Runs every rank of a Schedule in ONE process, without MPI: each rank's Runtime executes
// its program in order, and every kind of collective runs the point-to-point steps of the
// collective layer (real/collective_steps.hpp) on the ranks' buffers once every member has
// posted. The reference beside the MPI interpreter: the same Runtime calls in the same
// order, so a P-rank MPI run must reproduce its weights; also the P = 1 bench driver.
// A parameter server's serve op merges the pushes as they are posted here, or in the order a
// run recorded (replay_merges): an asynchronous run is then reproduced, not just resembled.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/network.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"
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

  /** Arrival-order serves merge the pushes in the order of `merges` (a server's
   *  RankTrace::merges: worker and round per merge) instead of the order they are posted in.
   *  run() throws InternalError when a merge's push is never posted or a push is left over. */
  void replay_merges(const std::vector<MergeRecord>& merges) { replayed_ = merges; }

  /** Runs the whole schedule once on `data` (then finish_schedule() on every rank) and
   *  returns the global mean loss of each iteration (Σ ranks' loss sums / N; under a parameter
   *  server over the images its workers' rounds saw).
   *  With `timings`, appends the wall time of every compute op; with `mark_s`, appends the
   *  time (seconds since the start of run) at which rank 0 reaches each mark.
   *  @throws InternalError when no rank can make progress (a deadlocked schedule). */
  std::vector<double> run(const Dataset& data, std::vector<OpTiming>* timings = nullptr,
                          std::vector<double>* mark_s = nullptr);

 private:
  Schedule schedule_;  // own copy, so a temporary schedule may be passed
  std::vector<std::unique_ptr<Runtime>> runtimes_;
  std::vector<MergeRecord> replayed_;
};

}  // namespace cnnpar::real
