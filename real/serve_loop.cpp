#include "real/serve_loop.hpp"

#include <algorithm>
#include <list>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/serve_merge.hpp"

namespace cnnpar::real {
namespace {

/** A push as it arrived: the worker's increment (its weights minus the global version it
 *  trained from), then its accuracy when the worker computed one (real compute). */
struct Arrived {
  std::vector<float> floats;
  std::int64_t increment_floats = 0;
  std::span<const float> increment() const { return {floats.data(), std::size_t(increment_floats)}; }
  /** Q_j; 1 when the push carried none (sleep compute: the merge only takes time). */
  double accuracy() const {
    return std::int64_t(floats.size()) > increment_floats ? double(floats[std::size_t(increment_floats)]) : 1.0;
  }
};

struct Reply {
  const Collective* collective = nullptr;
  CommBuffers buffers;
  std::unique_ptr<RunningCollective> running;
  std::size_t record = 0;
};

}  // namespace

void run_serve(const ServeContext& cx, int s, std::size_t op_index, RankTrace& trace) {
  const Serve& serve = cx.schedule.serves[std::size_t(s)];
  ServeLedger& ledger = cx.ledger;
  const int tag_ub = tag_upper_bound();
  std::vector<Arrived> arrived(serve.entries.size());
  std::vector<char> received(serve.entries.size(), 0);

  // One receive from any worker in flight at a time, as large as the largest push (+ accuracy).
  std::int64_t inbox_floats = 1;
  for (const ServeEntry& e : serve.entries)
    inbox_floats = std::max(inbox_floats, std::int64_t(cx.schedule.collectives[std::size_t(e.push)].bytes / 4.0) + 1);
  std::vector<float> inbox;
  mpi::Request receive;
  double listening_s = 0;
  std::size_t expected = serve.entries.size();
  const auto listen = [&] {
    if (expected == 0) return;
    inbox.assign(std::size_t(inbox_floats), 0.0f);
    CNNPAR_MPI(MPI_Irecv(inbox.data(), int(inbox_floats), MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                         cx.comms.point_to_point(), receive.out()));
    listening_s = cx.clock.now_s();
  };
  // Which push a message is: the next not yet received of its worker whose tag it carries.
  const auto entry_of = [&](int source, int tag) {
    for (std::size_t e = 0; e < serve.entries.size(); ++e)
      if (!received[e] && serve.entries[e].worker == source && serve.entries[e].push % (tag_ub + 1) == tag) return int(e);
    throw InternalError(fmt::format("rank {}: a message from rank {} with tag {} is no push this server expects",
                                    cx.rank, source, tag));
  };

  std::list<Reply> replies;
  double last_change_s = cx.clock.now_s();
  listen();
  while (!ledger.finished(s)) {
    bool changed = false;
    MPI_Status status{};
    if (receive.active() && receive.test(&status)) {
      const int e = entry_of(status.MPI_SOURCE, status.MPI_TAG);
      const ServeEntry& entry = serve.entries[std::size_t(e)];
      int count = 0;
      CNNPAR_MPI(MPI_Get_count(&status, MPI_FLOAT, &count));
      const Collective& push = cx.schedule.collectives[std::size_t(entry.push)];
      arrived[std::size_t(e)] = {std::vector<float>(inbox.begin(), inbox.begin() + count), std::int64_t(push.bytes / 4.0)};
      CNNPAR_ASSERT(count >= arrived[std::size_t(e)].increment_floats,
                    fmt::format("push {} carried {} floats, its weights need {}", push.label, count,
                                arrived[std::size_t(e)].increment_floats));
      received[std::size_t(e)] = 1;
      CollectiveRecord record = describe_collective(push);
      record.posted_s = record.comm_start_s = listening_s;
      record.comm_end_s = record.wait_start_s = record.wait_end_s = cx.clock.now_s();
      trace.collectives.push_back(record);
      ledger.push_arrived(entry.push);
      --expected;
      listen();
      changed = true;
    }
    for (auto it = replies.begin(); it != replies.end();) {
      if (!it->running->test()) {
        ++it;
        continue;
      }
      trace.collectives[it->record].comm_end_s = cx.clock.now_s();
      ledger.reply_done(it->collective->id);
      cx.backend.complete(*it->collective);
      it = replies.erase(it);
      changed = true;
    }
    if (ledger.merge_ready(s)) {
      const std::vector<int> entries = ledger.begin_merge(s);
      std::vector<double> accuracies;
      for (int e : entries) accuracies.push_back(arrived[std::size_t(e)].accuracy());
      const std::vector<double> factors = merge_factors(serve, entries, accuracies, ledger, cx.rank);
      std::vector<std::span<const float>> increments;
      for (int e : entries) increments.push_back(arrived[std::size_t(e)].increment());
      const ServeEntry& first = serve.entries[std::size_t(entries.front())];
      ComputeRecord compute = describe_compute(serve.merge, int(op_index));
      compute.label = serve.order == ServeOrder::arrival ? fmt::format("merge w{} r{}", first.worker, first.round)
                                                         : fmt::format("merge r{}", first.round);
      compute.start_s = cx.clock.now_s();
      cx.backend.merge(serve.merge, cx.schedule.collectives[std::size_t(first.push)], increments, factors);
      compute.end_s = cx.clock.now_s();
      trace.compute.push_back(compute);
      for (int e : entries) arrived[std::size_t(e)] = {};
      for (int id : ledger.end_merge(s, compute.start_s, compute.end_s, trace.merges)) {
        Reply& reply = replies.emplace_back();
        reply.collective = &cx.schedule.collectives[std::size_t(id)];
        CollectiveRecord record = describe_collective(*reply.collective);
        record.posted_s = record.wait_start_s = record.wait_end_s = cx.clock.now_s();  // nobody waits for it here
        reply.buffers = cx.backend.prepare(*reply.collective);
        record.comm_start_s = cx.clock.now_s();
        reply.running = std::make_unique<RunningCollective>(*reply.collective, reply.buffers, cx.comms, cx.rank,
                                                            cx.options.collectives, cx.options.platform, tag_ub);
        reply.record = trace.collectives.size();
        trace.collectives.push_back(record);
      }
      changed = true;
    }
    const double now_s = cx.clock.now_s();
    if (changed) {
      last_change_s = now_s;
    } else {
      if (now_s - last_change_s > cx.options.timeout_s)
        throw StallError(fmt::format("rank {}: stalled serving serve {} for {:.1f} s: {} of {} pushes received", cx.rank,
                                     s, now_s - last_change_s, serve.entries.size() - expected, serve.entries.size()));
      std::this_thread::yield();  // ranks may outnumber cores: let a computing worker run
    }
  }
}

}  // namespace cnnpar::real
