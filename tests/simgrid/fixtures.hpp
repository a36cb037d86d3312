#pragma once
// Small hand-built platforms and schedules for the SimGrid engine tests.
#include <cmath>
#include <numeric>
#include <vector>

#include "model/platform.hpp"
#include "model/schedule.hpp"
#include "model/trace.hpp"

namespace cnnpar::test {

/** A crossbar of `nodes` nodes: β = 1.25 GB/s, latency 2 µs, overhead 1 µs (α = 3 µs). */
inline Platform crossbar(int nodes, double latency_s = 2e-6, double overhead_s = 1e-6) {
  Platform platform;
  platform.name = "test-crossbar";
  platform.nodes.count = nodes;
  platform.nodes.peak_flops = 1e12;
  platform.nodes.default_efficiency = 0.5;
  platform.network.topology = Topology::crossbar;
  platform.network.bandwidth_Bps = 1.25e9;
  platform.network.latency_s = latency_s;
  platform.network.overhead_s = overhead_s;
  platform.resolve_speed_factors();
  return platform;
}

inline std::vector<int> all_ranks(int ranks) {
  std::vector<int> group(std::size_t(ranks), 0);
  std::iota(group.begin(), group.end(), 0);
  return group;
}

/** Schedule of `ranks` ranks, one iteration, empty programs. */
inline Schedule empty_schedule(int ranks) {
  Schedule schedule;
  schedule.strategy = "hand-built";
  schedule.network = "none";
  schedule.global_batch = ranks;
  schedule.iterations = 1;
  schedule.warmup_iterations = 0;
  for (int r = 0; r < ranks; ++r) {
    Program program;
    program.rank = r;
    schedule.programs.push_back(program);
  }
  return schedule;
}

inline int add(Schedule& schedule, CollectiveKind kind, double bytes, std::vector<int> group, int root = -1,
               Algorithm algorithm = Algorithm::automatic) {
  Collective collective;
  collective.kind = kind;
  collective.bytes = bytes;
  collective.group = std::move(group);
  collective.root = root;
  collective.algorithm = algorithm;
  collective.label = to_string(kind);
  return schedule.add_collective(collective);
}

/** Every member of collective `id` posts it and waits for it, then marks iteration 0. */
inline Schedule single_collective(int ranks, CollectiveKind kind, double bytes, int root = -1,
                                  Algorithm algorithm = Algorithm::automatic) {
  Schedule schedule = empty_schedule(ranks);
  const int id = add(schedule, kind, bytes, all_ranks(ranks), root, algorithm);
  for (Program& program : schedule.programs) {
    program.ops.push_back(Op::post_op(id));
    program.ops.push_back(Op::wait_op(id));
    program.ops.push_back(Op::mark_op(0));
  }
  return schedule;
}

/** Latest comm_end over ranks of the collective with id `id` (all ranks post at t = 0). */
inline double latest_end_s(const Trace& trace, int id) {
  double latest = 0;
  for (const RankTrace& rank : trace.ranks)
    for (const CollectiveRecord& record : rank.collectives)
      if (record.collective == id) latest = std::max(latest, record.comm_end_s);
  return latest;
}

}  // namespace cnnpar::test
