#pragma once
// A hand-built parameter-server schedule for the serve tests (model, system, sim, simgrid):
// rank 0 is the server, ranks 1..m the workers. Per round a worker computes, posts its push,
// waits for it, posts the reply, waits for it and marks the round, as param_server emits them.
#include <cstddef>
#include <string>
#include <vector>

#include "model/schedule.hpp"

namespace cnnpar::test {

struct ServeSetup {
  ServeOrder order = ServeOrder::arrival;
  int rounds = 2;
  std::vector<double> worker_flops = {1e9, 1e9};  ///< per worker, one compute op per round (FLOP)
  double bytes = 1e6;                             ///< every push and reply (B)
  double merge_flops = 1e9;                       ///< one merge (FLOP, kernel update, no bytes)
  double gamma = 0;                               ///< arrival: fixed gamma; 0 = Eq. 9
};

/** arrival: one serve over every entry (worker-major, as param_server adds them);
 *  together: one serve per round, its entries in worker order. */
inline Schedule serve_schedule(const ServeSetup& setup) {
  const int workers = int(setup.worker_flops.size());
  Schedule schedule;
  schedule.strategy = "hand-built";
  schedule.network = "none";
  schedule.global_batch = workers;
  schedule.iterations = setup.rounds;
  schedule.programs.resize(std::size_t(workers + 1));
  for (int r = 0; r <= workers; ++r) schedule.programs[std::size_t(r)].rank = r;
  const Op merge = Op::compute_op("merge", -1, Phase::update, KernelClass::update, setup.merge_flops, 0, 0);
  std::vector<Serve> serves(setup.order == ServeOrder::arrival ? 1 : std::size_t(setup.rounds));
  for (Serve& serve : serves) {
    serve.order = setup.order;
    serve.merge = merge;
    serve.gamma = setup.order == ServeOrder::arrival ? setup.gamma : 0;
  }
  for (int w = 1; w <= workers; ++w) {
    auto& ops = schedule.programs[std::size_t(w)].ops;
    for (int round = 0; round < setup.rounds; ++round) {
      Collective push{.kind = CollectiveKind::send,
                      .bytes = setup.bytes,
                      .group = {0, w},
                      .root = w,
                      .algorithm = Algorithm::direct,
                      .label = "push w" + std::to_string(w) + " r" + std::to_string(round),
                      .payload = Payload::increments,
                      .iteration = round};
      Collective reply = push;
      reply.root = 0;
      reply.label = "pull w" + std::to_string(w) + " r" + std::to_string(round);
      reply.payload = Payload::weights;
      const ServeEntry entry{.push = schedule.add_collective(push), .reply = schedule.add_collective(reply),
                             .worker = w, .round = round};
      serves[setup.order == ServeOrder::arrival ? 0 : std::size_t(round)].entries.push_back(entry);
      ops.push_back(Op::compute_op("train w" + std::to_string(w), 0, Phase::forward, KernelClass::other,
                                   setup.worker_flops[std::size_t(w - 1)], 0, 1));
      ops.push_back(Op::post_op(entry.push));
      ops.push_back(Op::wait_op(entry.push));
      ops.push_back(Op::post_op(entry.reply));
      ops.push_back(Op::wait_op(entry.reply));
      ops.push_back(Op::mark_op(round));
    }
  }
  for (Serve& serve : serves) schedule.programs[0].ops.push_back(Op::serve_op(schedule.add_serve(std::move(serve))));
  return schedule;
}

/** The entry of `worker`'s push in `round` (asserts by returning a default entry when absent). */
inline ServeEntry entry_of(const Schedule& schedule, int worker, int round) {
  for (const Serve& serve : schedule.serves)
    for (const ServeEntry& entry : serve.entries)
      if (entry.worker == worker && entry.round == round) return entry;
  return {};
}

}  // namespace cnnpar::test
