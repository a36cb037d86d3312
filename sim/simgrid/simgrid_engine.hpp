#pragma once
// The SimGrid engine: replays a Schedule on a SimGrid S4U platform. Ranks are actors (one
// compute actor and collective_concurrency communication actors per rank), collectives are
// decomposed into point-to-point messages by their algorithm (system/collective_algorithm.hpp)
// and contend for the platform's links. Emits the same Trace as every engine (engine "simgrid").
//
// SimGrid's Engine cannot be reset, so each simulation runs in a forked child process that
// sends its Trace back through a pipe. Never link MPI into an executable that links this.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/engine.hpp"

namespace cnnpar {

/** SimgridOptions::ring_messages by default. */
inline constexpr int kDefaultRingMessages = 4;

struct SimgridOptions {
  /** "CM02" (default) or "LV08". CM02 here also turns SimGrid's cross-traffic and TCP window
   *  bound off, so one message takes exactly route latency + bytes / bandwidth: the α-β model
   *  of the analytic engine and the closed forms. "LV08" keeps SimGrid's defaults, whose
   *  TCP-like latency and bandwidth factors and cross-traffic model real TCP more closely. */
  std::string network_model = "CM02";
  /** Optional SimGrid XML platform file loaded instead of building one from the Platform;
   *  its hosts are used for ranks in declaration order. Compute times still come from the Platform. */
  std::string platform_xml;
  /** One simulation per forked child (SimGrid's Engine cannot be reset). false runs in this
   *  process: possible once per process, for debugging. */
  bool fork_per_run = true;
  /** Ring steps sent as one message: 1 = every step of the algorithm is its own message;
   *  0 = automatic, from ring_messages. A message of g steps carries their bytes and waits
   *  (g - 1) route latencies and overheads before it is sent, so contention-free times are
   *  unchanged; link shares are recomputed every g steps instead of every step. */
  int ring_step_batch = 0;
  /** With ring_step_batch 0: the most messages a rank sends per ring, g = ceil(steps / this);
   *  0 = every step its own message. Each message is a few SimGrid activities whose cost grows
   *  with the ranks, so this bounds a 4,096-rank ring; docs/design.md gives the error against
   *  one message per step. */
  int ring_messages = kDefaultRingMessages;
  /** Extra SimGrid settings, each passed as --cfg=ITEM (e.g. "network/TCP-gamma:4194304"). */
  std::vector<std::string> extra_cfg;
};

/** @throws InputError (network_model) for an unknown network model. */
std::unique_ptr<Engine> make_simgrid_engine(const SimgridOptions& options = {});

/** Runs several (schedule, platform) pairs, as many forked children at once as cores; results
 *  in input order. `progress(done, total)` is called in this process after each one ends.
 *  @throws InputError for the first (in input order) job whose input was bad. */
std::vector<Trace> simulate_many(const std::vector<std::pair<const Schedule*, const Platform*>>& jobs,
                                 const SimgridOptions& options,
                                 std::function<void(int done, int total)> progress = {});

}  // namespace cnnpar
