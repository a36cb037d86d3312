#include "real/local_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/collective_steps.hpp"
#include "real/dataset.hpp"
#include "real/serve_merge.hpp"
#include "system/collective_algorithm.hpp"
#include "system/serve_ledger.hpp"

namespace cnnpar::real {

LocalExecutor::LocalExecutor(const Network& network, const Schedule& schedule, std::uint64_t seed,
                             SgdConfig sgd)
    : schedule_(schedule) {
  for (int r = 0; r < schedule.ranks(); ++r)
    runtimes_.push_back(std::make_unique<Runtime>(network, schedule, r, seed, sgd));
}

namespace {

// Runs the collective's point-to-point steps (system/collective.hpp) on the posted buffers
// once every member has posted, with the algorithm the engines price by default.
void emulate(const Collective& c, std::map<int, CollectiveBuffers>& posted) {
  const Algorithm algorithm = resolve_algorithm(c, Platform{});
  std::vector<StepRunner> members;
  members.reserve(c.group.size());
  for (std::size_t m = 0; m < c.group.size(); ++m) {
    const CollectiveBuffers& b = posted.at(c.group[m]);
    members.emplace_back(c, algorithm, int(m), b.send, b.recv, b.send_count, b.recv_count);
  }
  run_steps_in_process(members);
}

// A parameter server's side of the run: the pushes posted and not yet merged, the ledger, and
// where the replay of a recorded merge order is.
struct ServerSide {
  explicit ServerSide(const Schedule& schedule) : ledger(schedule) {}
  ServeLedger ledger;
  std::map<int, std::vector<float>> pushed;  // push collective -> its increment, then its accuracy
  std::vector<int> unheard;                  // pushes posted, not yet handed to the ledger
  std::size_t replayed = 0;                  // merges of the recorded order taken so far
};

}  // namespace

std::vector<double> LocalExecutor::run(const Dataset& data, std::vector<OpTiming>* timings,
                                       std::vector<double>* mark_s) {
  const auto start = std::chrono::steady_clock::now();
  const int P = ranks();
  std::vector<std::size_t> pc(std::size_t(P), 0);
  std::vector<int> iteration(std::size_t(P), 0), loaded(std::size_t(P), -1);
  std::vector<double> loss(std::size_t(schedule_.iterations), 0.0), loss_images = loss;
  std::map<int, std::map<int, CollectiveBuffers>> posted;  // collective -> rank -> buffers
  std::vector<char> done(schedule_.collectives.size(), 0);
  const std::function<void()> no_poll;
  std::optional<ServerSide> server;
  if (!schedule_.serves.empty()) server.emplace(schedule_);

  // Every member has posted: run the steps. A served reply also ends on its server.
  const auto finish_collective = [&](const Collective& c) {
    emulate(c, posted.at(c.id));
    done[std::size_t(c.id)] = 1;
    posted.erase(c.id);
    if (!server) return;
    const ServeLedger::Served at = server->ledger.served(c.id);
    if (at.serve < 0 || at.push) return;
    runtimes_[std::size_t(server->ledger.server(at.serve))]->complete(c);
    server->ledger.reply_done(c.id);
  };

  // The server's serve op `s` on rank r: hand the posted pushes to the ledger (in the recorded
  // order when replaying), merge what is ready, post the replies. True when the serve is over.
  const auto serve = [&](int r, int s, bool& progressed) {
    ServerSide& side = *server;
    const Serve& definition = schedule_.serves[std::size_t(s)];
    const auto entry_of = [&](int push) { return side.ledger.served(push).entry; };
    if (definition.order == ServeOrder::arrival && !replayed_.empty()) {
      while (side.replayed < replayed_.size()) {
        const MergeRecord& next = replayed_[side.replayed];
        const auto it = std::find_if(side.unheard.begin(), side.unheard.end(), [&](int push) {
          const ServeEntry& e = definition.entries[std::size_t(entry_of(push))];
          return side.ledger.served(push).serve == s && e.worker == next.worker && e.round == next.round;
        });
        if (it == side.unheard.end()) break;
        side.ledger.push_arrived(*it);
        side.unheard.erase(it);
        ++side.replayed;
        progressed = true;
      }
    } else {
      for (auto it = side.unheard.begin(); it != side.unheard.end();) {
        if (side.ledger.served(*it).serve != s) {
          ++it;
          continue;
        }
        side.ledger.push_arrived(*it);
        it = side.unheard.erase(it);
        progressed = true;
      }
    }
    Runtime& rt = *runtimes_[std::size_t(r)];
    while (side.ledger.merge_ready(s)) {
      const std::vector<int> entries = side.ledger.begin_merge(s);
      const Collective& first = schedule_.collectives[std::size_t(definition.entries[std::size_t(entries.front())].push)];
      const std::int64_t increment_floats = std::int64_t(first.bytes / 4.0);
      std::vector<std::span<const float>> increments;
      std::vector<double> accuracies;
      for (int e : entries) {
        const std::vector<float>& floats = side.pushed.at(definition.entries[std::size_t(e)].push);
        increments.emplace_back(floats.data(), std::size_t(increment_floats));
        accuracies.push_back(std::int64_t(floats.size()) > increment_floats ? double(floats.back()) : 1.0);
      }
      rt.merge_increments(first, increments, merge_factors(definition, entries, accuracies, side.ledger, r));
      std::vector<MergeRecord> merged;
      for (int reply : side.ledger.end_merge(s, 0.0, 0.0, merged)) {
        auto& members = posted[reply];
        members[r] = rt.prepare(schedule_.collectives[std::size_t(reply)]);
        if (members.size() == 2) finish_collective(schedule_.collectives[std::size_t(reply)]);
      }
      progressed = true;
    }
    return side.ledger.finished(s);
  };

  bool all_finished = false;
  while (!all_finished) {
    all_finished = true;
    bool progressed = false;
    for (int r = 0; r < P; ++r) {
      Runtime& rt = *runtimes_[std::size_t(r)];
      const auto& ops = schedule_.programs[std::size_t(r)].ops;
      std::size_t& i = pc[std::size_t(r)];
      while (i < ops.size()) {
        const Op& op = ops[i];
        int& it = iteration[std::size_t(r)];
        // The batch is loaded before the iteration's first compute or post op, as the MPI
        // interpreter does (a conv_split master posts the input before computing).
        if ((op.kind == OpKind::compute || op.kind == OpKind::post) && loaded[std::size_t(r)] != it &&
            it < schedule_.iterations) {
          rt.load_batch(it, data);
          loaded[std::size_t(r)] = it;
        }
        if (op.kind == OpKind::compute) {
          if (timings) {
            const auto t0 = std::chrono::steady_clock::now();
            rt.run_compute(op, it, no_poll);
            const auto t1 = std::chrono::steady_clock::now();
            timings->push_back(OpTiming{r, it, op.label, op.kernel, op.flops,
                                        std::chrono::duration<double>(t1 - t0).count()});
          } else {
            rt.run_compute(op, it, no_poll);
          }
        } else if (op.kind == OpKind::mark) {
          if (it < schedule_.iterations) {
            loss[std::size_t(it)] += rt.last_loss_sum();
            loss_images[std::size_t(it)] += rt.last_loss_images();
          }
          if (mark_s && r == 0)
            mark_s->push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          ++it;
        } else if (op.kind == OpKind::serve) {
          if (!serve(r, op.serve, progressed)) break;
        } else if (op.kind == OpKind::post) {
          const Collective& c = schedule_.collectives.at(std::size_t(op.collective));
          if (server && server->ledger.served(c.id).push) {  // the server takes it in its serve op
            const CollectiveBuffers b = rt.prepare(c);
            server->pushed[c.id].assign(b.send, b.send + b.send_count);
            server->unheard.push_back(c.id);
            done[std::size_t(c.id)] = 1;
          } else {
            auto& members = posted[c.id];
            members[r] = rt.prepare(c);
            if (members.size() == c.group.size()) finish_collective(c);
          }
        } else {  // wait
          if (!done[std::size_t(op.collective)]) break;
          rt.complete(schedule_.collectives.at(std::size_t(op.collective)));
        }
        ++i;
        progressed = true;
      }
      if (i < ops.size()) all_finished = false;
    }
    CNNPAR_ASSERT(all_finished || progressed, "local execution deadlocked: every rank waits on a collective");
  }
  if (server && !replayed_.empty() && server->replayed != replayed_.size())
    throw InternalError(fmt::format("the replay took {} of the {} recorded merges", server->replayed, replayed_.size()));
  for (auto& rt : runtimes_) rt->finish_schedule();
  // Under a parameter server the workers' rounds see other images than N.
  for (std::size_t it = 0; it < loss.size(); ++it)
    loss[it] /= server ? (loss_images[it] > 0 ? loss_images[it] : 1.0) : double(schedule_.global_batch);
  return loss;
}

}  // namespace cnnpar::real
