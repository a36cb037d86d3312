#pragma once
// A rank's set-up before the run: network, platform, execution modes, the verified schedule,
// the checkpoint identity, the runtime and the dataset; built identically on every rank.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/cnnpar-run/options.hpp"
#include "base/freed_memory.hpp"
#include "model/network.hpp"
#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "real/checkpoint.hpp"
#include "real/dataset.hpp"
#include "real/interpreter.hpp"
#include "real/runtime.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::executor {

using namespace cnnpar::real;

/** Everything a rank sets up before the run; built identically on every rank. */
struct Setup {
  Network network;
  Platform platform;
  StrategyOptions strategy;
  Schedule schedule;
  std::unique_ptr<Dataset> dataset;
  std::unique_ptr<Runtime> runtime;
  ProgressMode progress = ProgressMode::poll;
  InterpreterOptions interpreter;
  std::int64_t tile_columns = 0;
  CheckpointRun checkpoint_run;  // what a checkpoint of this run records
  std::vector<double> probe_s;   // conv_split's probe seconds per rank (empty without a probe)
};

/** How the executor runs: --comm-progress, --collectives, --compute. */
struct ExecutionModes {
  ProgressMode progress = ProgressMode::poll;
  CollectiveMode collectives = CollectiveMode::mpi;
  bool sleep_compute = false;
};
/** @throws InputError("command line", "/FLAG", value, reason) for a mode that does not exist. */
ExecutionModes parse_execution_modes(const Options& o);

/** GEMM column tile between polls: --gemm-tile-columns, else 4096 when polling (deep-layer
 *  GEMMs are narrower, so they run whole), else none. */
std::int64_t executor_tile_columns(const Options& o, ProgressMode progress);

/** How the heap treats freed memory once set up, in training and calibration alike (so the
 *  calibration times ops and collectives as runs see them). Over several ranks `kept`: the MPI
 *  library allocates a temporary the size of the message for every large MPI_Iallreduce, and
 *  mapped afresh each time it page-faulted ~45 MB an iteration on resnet-18-32 (dp on 2 ranks:
 *  0.84 -> 0.57 s an iteration, vgg-a-32 0.31 -> 0.20 s; 39-52 MB more peak memory). One rank
 *  has no such temporaries, and keeps the lower peak of `returned` (same speed). */
FreedMemory freed_memory_once_set_up(int ranks);

/** The checkpoint file inside --checkpoint DIR. */
std::string checkpoint_file(const Options& o);

/** What prepare throws on the ranks whose checks passed when another rank's failed, learnt in
 *  the set-up agreement it makes before the ranks time anything together (a rank probe, auto's
 *  conv timing): the agreement is made, and the run ends with `status`. */
struct SetUpFailedElsewhere {
  int status = 0;
};

/** Fills `s` in place: the Runtime keeps references to s.network and s.schedule.
 *  @throws SetUpFailedElsewhere (above); InputError and others for this rank's own failures. */
void prepare(Setup& s, const Options& o, int rank, int size);

}  // namespace cnnpar::executor
