#include "sim/simgrid/sg_replay.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <simgrid/Exception.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/ConditionVariable.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/Mutex.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <simgrid/s4u/Semaphore.hpp>

#include "base/error.hpp"
#include "sim/simgrid/sg_platform.hpp"
#include "sim/simgrid/sg_trace.hpp"
#include "sim/simgrid/step_messages.hpp"
#include "system/collective.hpp"
#include "system/collective_algorithm.hpp"
#include "system/device_staging.hpp"
#include "system/link_bucket.hpp"
#include "system/op_time.hpp"
#include "system/serve_ledger.hpp"

namespace sg4 = simgrid::s4u;

namespace cnnpar::simgrid_engine {

namespace {

/** Mailbox carrying the messages of collective `id` from rank `src` to rank `dst`. Within one
 *  collective both ends issue their messages to a pair in the same order, so FIFO matching
 *  pairs them correctly even when several collectives run at once. */
sg4::Mailbox* pair_mailbox(int id, int src, int dst) {
  return sg4::Mailbox::by_name(fmt::format("{}:{}>{}", id, src, dst));
}

/** Mailbox of the point-to-point (`send`) messages addressed to `rank`, whatever their source. */
sg4::Mailbox* inbox(int rank) { return sg4::Mailbox::by_name(fmt::format("in:{}", rank)); }

std::uint64_t message_size(double bytes) { return bytes <= 0 ? 0 : std::uint64_t(std::llround(bytes)); }

char dummy_payload = 0;

/** Everything the actors of one rank share. SimGrid runs actors one at a time, so plain
 *  fields are safe; SimGrid primitives are used only to block. */
struct RankState {
  int rank = 0;
  sg4::Host* host = nullptr;
  RankTrace* trace = nullptr;
  std::unordered_map<int, int> record_of;  ///< collective id -> index in trace->collectives
  std::vector<char> done;                  ///< per collective record: completed on this rank
  std::vector<double> arrived_s;           ///< per collective record (send, receiving side): arrival, -1 if none
  std::deque<int> queue;                   ///< posted collective records not yet started
  std::vector<double> ready_s;             ///< per collective record: when the progress thread can take it
  int unfinished = 0;                      ///< posted collectives not yet ended (0 = the thread is idle)
  int posts_total = 0;
  int claimed = 0;                         ///< posts a communication actor has committed to run
  int sends_expected = 0;                  ///< `send` collectives this rank receives
  sg4::SemaphorePtr queued;
  sg4::MutexPtr mutex;
  sg4::ConditionVariablePtr changed;       ///< done or arrived_s changed
  int transferring = 0;                    ///< collectives in progress (for the compute slow-down)
  sg4::ExecPtr background;                 ///< CPU share taken by communication while transferring
  bool finished = false;
  /** The node's own links (up and down) with their nominal bandwidth: they run at
   *  busy_bandwidth_fraction of it while the rank computes. */
  std::vector<std::pair<sg4::Link*, double>> own_links;
  bool busy = false;  ///< computing now (its own links slowed)
};

class Replay {
 public:
  Replay(const Schedule& schedule, const Platform& platform, const SimgridOptions& options,
         std::vector<sg4::Host*> hosts, Trace& trace)
      : schedule_(schedule), platform_(platform), ring_step_batch_(options.ring_step_batch),
        ring_messages_per_ring_(options.ring_messages), states_(hosts.size()),
        ledger_(schedule) {
    algorithms_.reserve(schedule.collectives.size());
    for (const Collective& c : schedule.collectives) algorithms_.push_back(resolve_algorithm(c, platform));
    overhead_s_ = platform.network.overhead_s;
    stages_ = platform_stages_messages(platform);
    slowdown_ = platform.comm_compute_slowdown;
    busy_fraction_ = platform.network.busy_bandwidth_fraction;
    if (busy_fraction_ < 1 && hosts.size() >= 2) find_own_links(hosts);
    buckets_ = LinkBuckets(int(hosts.size()), platform.network.link_burst_bytes, platform.network.bandwidth_Bps);
    for (std::size_t r = 0; r < hosts.size(); ++r) {
      RankState& st = states_[r];
      st.rank = int(r);
      st.host = hosts[r];
      st.trace = &trace.ranks[r];
      const auto& records = st.trace->collectives;
      for (std::size_t i = 0; i < records.size(); ++i) {
        st.record_of.emplace(records[i].collective, int(i));
        const Collective& c = schedule.collectives[std::size_t(records[i].collective)];
        if (c.kind == CollectiveKind::send && c.root != int(r)) ++st.sends_expected;
      }
      st.done.assign(records.size(), 0);
      st.ready_s.assign(records.size(), 0.0);
      st.arrived_s.assign(records.size(), -1.0);
      st.posts_total = int(records.size());
      // A server's engine runs its replies; its side of a push is the receiver's.
      for (const CollectiveRecord& record : records) {
        const ServeLedger::Served at = ledger_.served(record.collective);
        if (at.push && ledger_.server(at.serve) == int(r)) --st.posts_total;
      }
      st.queued = sg4::Semaphore::create(0);
      st.mutex = sg4::Mutex::create();
      st.changed = sg4::ConditionVariable::create();
    }
  }

  void start() {
    const int engines = std::max(1, platform_.network.collective_concurrency);
    for (RankState& st : states_) {
      RankState* s = &st;
      sg4::Actor::create(fmt::format("compute-{}", st.rank), st.host, [this, s] { compute_actor(*s); });
      if (st.posts_total > 0)
        for (int e = 0; e < std::min(engines, st.posts_total); ++e)
          sg4::Actor::create(fmt::format("comm-{}.{}", st.rank, e), st.host, [this, s] { comm_actor(*s); });
      if (st.sends_expected > 0)
        sg4::Actor::create(fmt::format("recv-{}", st.rank), st.host, [this, s] { receiver_actor(*s); });
    }
  }

  /** Ranks whose compute stream did not reach its end (a deadlocked schedule). */
  std::vector<int> unfinished() const {
    std::vector<int> ranks;
    for (const RankState& st : states_)
      if (!st.finished) ranks.push_back(st.rank);
    return ranks;
  }

 private:
  /** Each rank's first link towards another rank and last link from one: its own up and
   *  down links in every topology built here (one shared link in a star). */
  void find_own_links(const std::vector<sg4::Host*>& hosts) {
    for (std::size_t r = 0; r < hosts.size(); ++r) {
      sg4::Host* other = hosts[(r + 1) % hosts.size()];
      std::vector<sg4::Link*> up, down;
      double latency_s = 0;
      hosts[r]->route_to(other, up, &latency_s);
      other->route_to(hosts[r], down, &latency_s);
      auto& own = states_[r].own_links;
      for (sg4::Link* link : {up.empty() ? nullptr : up.front(), down.empty() ? nullptr : down.back()})
        if (link != nullptr && (own.empty() || own.front().first != link)) own.emplace_back(link, link->get_bandwidth());
    }
  }

  /** A polling rank advances its collectives at busy_bandwidth_fraction while it computes. */
  void set_busy(RankState& st, bool busy) {
    st.busy = busy;
    apply_links(st, busy);
  }

  void apply_links(const RankState& st, bool slowed) {
    for (const auto& [link, nominal_Bps] : st.own_links) link->set_bandwidth(slowed ? nominal_Bps * busy_fraction_ : nominal_Bps);
  }

  /** Starts a message between ranks `a` and `b` with `start`. CM02 bounds a message's rate,
   *  for good, by the slowest link of its route when it starts: it starts with their links at
   *  nominal speed, then a busy rank's links slow down again and limit it through their shared
   *  capacity, which follows the rank in and out of compute. */
  template <typename Start>
  sg4::CommPtr start_message(int a, int b, Start start) {
    if (busy_fraction_ >= 1) return start();
    for (int r : {a, b})
      if (r >= 0 && states_[std::size_t(r)].busy) apply_links(states_[std::size_t(r)], false);
    sg4::CommPtr comm = start();
    for (int r : {a, b})
      if (r >= 0 && states_[std::size_t(r)].busy) apply_links(states_[std::size_t(r)], true);
    return comm;
  }

  /** `duration_s` of this rank's CPU: compute ops and the per-iteration overhead. */
  void occupy_cpu(RankState& st, double duration_s, double host_speed) {
    if (duration_s <= 0) return;
    set_busy(st, true);
    // With a slow-down, execute so the communication's background load shares the CPU.
    if (slowdown_ > 0)
      sg4::this_actor::execute(duration_s * host_speed);
    else
      sg4::this_actor::sleep_for(duration_s);
    set_busy(st, false);
  }

  void compute_actor(RankState& st) {
    const auto& ops = schedule_.programs[std::size_t(st.rank)].ops;
    std::size_t next_compute = 0, next_mark = 0;
    const double host_speed = st.host->get_speed();
    const double overhead_s = iteration_overhead_s(platform_, schedule_, st.rank);
    bool overhead_due = true;  // overhead_s before the first op of each iteration
    for (std::size_t op_index = 0; op_index < ops.size(); ++op_index) {
      const Op& op = ops[op_index];
      if (overhead_due && op.kind != OpKind::mark) {
        overhead_due = false;
        occupy_cpu(st, overhead_s, host_speed);
      }
      switch (op.kind) {
        case OpKind::compute: {
          ComputeRecord& record = st.trace->compute[next_compute++];
          record.start_s = sg4::Engine::get_clock();
          occupy_cpu(st, op_time_s(platform_, op, st.rank), host_speed);
          record.end_s = sg4::Engine::get_clock();
          break;
        }
        case OpKind::post:
          enqueue(st, st.record_of.at(op.collective), op_index);
          break;
        case OpKind::wait: {
          const auto found = st.record_of.find(op.collective);
          CNNPAR_ASSERT(found != st.record_of.end(), "wait for a collective this rank never posted");
          CollectiveRecord& record = st.trace->collectives[std::size_t(found->second)];
          record.wait_start_s = sg4::Engine::get_clock();
          {
            std::unique_lock lock(*st.mutex);
            try {
              while (!st.done[std::size_t(found->second)]) st.changed->wait(lock);
            } catch (const simgrid::ForcefulKillException&) {
              // A deadlocked replay's actors are killed in this wait. Unlocking is a simcall
              // a dying actor cannot make with thread contexts (it blocks forever); the
              // simulation is over, so the lock is dropped without unlocking.
              lock.release();
              throw;
            }
          }
          record.wait_end_s = sg4::Engine::get_clock();
          break;
        }
        case OpKind::mark:
          st.trace->marks[next_mark++].time_s = sg4::Engine::get_clock();
          overhead_due = true;
          break;
        case OpKind::serve:
          serve(st, op_index, op.serve, host_speed);
          break;
      }
    }
    st.finished = true;
  }

  /** Queues the collective of record `index` on this rank's engine (a post). */
  void enqueue(RankState& st, int index, std::size_t op_index) {
    const double now_s = sg4::Engine::get_clock();
    st.trace->collectives[std::size_t(index)].posted_s = now_s;
    st.ready_s[std::size_t(index)] =
        now_s + (st.unfinished == 0 ? comm_start_wait_s(platform_, schedule_, st.rank, op_index) : 0.0);
    ++st.unfinished;
    st.queue.push_back(index);
    st.queued->release();
  }

  /** A server's serve op (system/serve_ledger.hpp): merges as pushes arrive (the receiver
   *  actor reports them), posts the replies, until every reply is done. */
  void serve(RankState& st, std::size_t op_index, int s, double host_speed) {
    const Serve& definition = schedule_.serves[std::size_t(s)];
    std::unique_lock lock(*st.mutex);
    while (!ledger_.finished(s)) {
      if (!ledger_.merge_ready(s)) {
        st.changed->wait(lock);
        continue;
      }
      const std::vector<int> entries = ledger_.begin_merge(s);
      lock.unlock();
      ComputeRecord& record = st.trace->compute.emplace_back(describe_compute(definition.merge, int(op_index)));
      const ServeEntry& first = definition.entries[std::size_t(entries.front())];
      record.label = definition.order == ServeOrder::arrival ? fmt::format("merge w{} r{}", first.worker, first.round)
                                                             : fmt::format("merge r{}", first.round);
      const double start_s = sg4::Engine::get_clock();
      record.start_s = start_s;
      occupy_cpu(st, op_time_s(platform_, definition.merge, st.rank), host_speed);
      const double end_s = sg4::Engine::get_clock();
      st.trace->compute.back().end_s = end_s;
      for (int reply : ledger_.end_merge(s, start_s, end_s, st.trace->merges)) {
        const int index = st.record_of.at(reply);
        enqueue(st, index, op_index);
        CollectiveRecord& sent = st.trace->collectives[std::size_t(index)];
        sent.wait_start_s = sent.wait_end_s = sent.posted_s;  // the serve op does not wait for it
      }
      lock.lock();
    }
  }

  void comm_actor(RankState& st) {
    while (st.claimed < st.posts_total) {
      ++st.claimed;
      st.queued->acquire();
      const int index = st.queue.front();
      st.queue.pop_front();
      const double ready_s = st.ready_s[std::size_t(index)];
      if (ready_s > sg4::Engine::get_clock()) sg4::this_actor::sleep_until(ready_s);
      CollectiveRecord& record = st.trace->collectives[std::size_t(index)];
      record.comm_start_s = sg4::Engine::get_clock();
      begin_transfer(st);
      run_collective(st, index, schedule_.collectives[std::size_t(record.collective)]);
      end_transfer(st);
      record.comm_end_s = sg4::Engine::get_clock();
      --st.unfinished;
      st.done[std::size_t(index)] = 1;
      if (const ServeLedger::Served at = ledger_.served(record.collective); at.serve >= 0 && !at.push &&
                                                                            ledger_.server(at.serve) == st.rank)
        ledger_.reply_done(record.collective);  // the reply's put ended: the worker has it
      st.changed->notify_all();
    }
  }

  /** Accepts the rank's point-to-point messages in arrival order, from any source. */
  void receiver_actor(RankState& st) {
    sg4::Mailbox* box = inbox(st.rank);
    for (int i = 0; i < st.sends_expected; ++i) {
      int* payload = nullptr;
      start_message(st.rank, -1, [&] { return box->get_async<int>(&payload); })->wait();
      const auto found = st.record_of.find(*payload);
      CNNPAR_ASSERT(found != st.record_of.end(), "message for a send this rank never posts");
      // A message into a rank is taken whole, its device copies included, before the next
      // (the analytic engine's order of receives); the source pays them after its put.
      if (stages_) sleep_staging(schedule_.collectives[std::size_t(*payload)]);
      st.arrived_s[std::size_t(found->second)] = sg4::Engine::get_clock();
      if (const ServeLedger::Served at = ledger_.served(*payload); at.push && ledger_.server(at.serve) == st.rank)
        push_arrived(st, found->second, *payload);
      st.changed->notify_all();
    }
  }

  /** A push reached its server: the server's record takes the worker's post and transfer start. */
  void push_arrived(RankState& st, int index, int c) {
    const ServeEntry& entry = *schedule_.served(c);
    RankState& worker = states_[std::size_t(entry.worker)];
    const CollectiveRecord& sent = worker.trace->collectives[std::size_t(worker.record_of.at(c))];
    CollectiveRecord& record = st.trace->collectives[std::size_t(index)];
    record.posted_s = sent.posted_s;
    record.comm_start_s = sent.comm_start_s;
    record.comm_end_s = record.wait_start_s = record.wait_end_s = sg4::Engine::get_clock();
    st.done[std::size_t(index)] = 1;
    ledger_.push_arrived(c);
  }

  void begin_transfer(RankState& st) {
    if (slowdown_ <= 0 || st.transferring++ > 0) return;
    // Runs beside compute at priority `slowdown`: compute then gets 1/(1+s) of the CPU.
    st.background = sg4::Exec::init()->set_flops_amount(1e18)->set_host(st.host);
    st.background->set_priority(slowdown_);
    st.background->start();
  }

  void end_transfer(RankState& st) {
    if (slowdown_ <= 0 || --st.transferring > 0) return;
    st.background->cancel();
    st.background = nullptr;
  }

  /** Per-message software overhead of a `bytes`-byte message: part of α, so it takes the
   *  message's latency factor as SimGrid's callback does for the link latency. */
  double message_overhead_s(double bytes) const {
    return overhead_s_ * platform_.network.message_factor(bytes).latency_factor;
  }

  /** The reduction arithmetic of `steps` rounds that add what they received (system/collective.hpp step_time_s). */
  void reduce_received(const CollectiveStep& step, std::size_t steps) const {
    if (!step.reduce || step.receive_from < 0 || platform_.network.reduction_rate_Bps <= 0) return;
    sg4::this_actor::sleep_for(double(steps) * step.receive_bytes / platform_.network.reduction_rate_Bps);
  }

  /** Starts the put of a `bytes`-byte message from `from` to `to`: the bytes the links' token
   *  buckets pass (system/link_bucket.hpp) take burst_time_s first and are not sent through the
   *  links; end_put gives the links back. */
  template <typename Put>
  sg4::CommPtr start_put(int from, int to, double bytes, Put put) {
    const double passed_bytes = buckets_.start_message(from, to, bytes, sg4::Engine::get_clock());
    const double burst_s = platform_.network.burst_time_s(passed_bytes);
    if (burst_s > 0) sg4::this_actor::sleep_for(burst_s);  // the burst, then the rest at the link's rate
    const std::uint64_t size = message_size(bytes - passed_bytes);
    sleep_busy_latency(from, to, double(size));
    return start_message(from, to, [&] { return put(size); });
  }

  /** A collective progresses at busy_bandwidth_fraction f of its speed while a member computes
   *  (the analytic engine slows its whole duration): the slowed links cover a message's
   *  bandwidth term, and a message started while an end computes takes its latency 1/f times. */
  void sleep_busy_latency(int from, int to, double size) {
    if (busy_fraction_ >= 1 || !(states_[std::size_t(from)].busy || states_[std::size_t(to)].busy)) return;
    const double latency_s = route_latency_s(from, to) * platform_.network.message_factor(size).latency_factor;
    if (latency_s > 0) sg4::this_actor::sleep_for(latency_s * (1 / busy_fraction_ - 1));
  }

  /** A collective kind's step overhead (StepPricing) before rank `from` sends to `to`: part of
   *  the step's start-up, so it is slowed as its latency is (sleep_busy_latency). */
  void sleep_step_overhead(int from, int to, double overhead_s) {
    if (!(overhead_s > 0)) return;
    const bool slowed = busy_fraction_ < 1 && (states_[std::size_t(from)].busy || states_[std::size_t(to)].busy);
    sg4::this_actor::sleep_for(slowed ? overhead_s / busy_fraction_ : overhead_s);
  }

  /** The latency of the route from rank `from`'s host to rank `to`'s (seconds). */
  double route_latency_s(int from, int to) const {
    std::vector<sg4::Link*> links;
    double latency_s = 0;
    states_[std::size_t(from)].host->route_to(states_[std::size_t(to)].host, links, &latency_s);
    return latency_s;
  }
  void end_put(int from, int to) { buckets_.end_message(from, to, sg4::Engine::get_clock()); }

  /** Blocking send of `bytes` from rank `from` to rank `to` after the per-message overhead and
   *  the collective's step overhead. */
  void send(sg4::Mailbox* box, double bytes, int from, int to, double step_overhead_s) {
    if (overhead_s_ > 0) sg4::this_actor::sleep_for(message_overhead_s(bytes));
    sleep_step_overhead(from, to, step_overhead_s);
    start_put(from, to, bytes, [&](std::uint64_t size) { return box->put_async(&dummy_payload, size); })->wait();
    end_put(from, to);
  }

  void receive(sg4::Mailbox* box, int from, int to) {
    char* payload = nullptr;
    start_message(from, to, [&] { return box->get_async<char>(&payload); })->wait();
  }

  /** One step that sends and receives at once (ring, recursive doubling, pairwise exchange);
   *  it ends when both have. `extra_s` is start-up of further batched steps, paid with the
   *  overhead; `step_overhead_s` the collective's step overhead of all of them. (Detached sends
   *  would save a simcall, but SimGrid 3.32 keeps them in a per-actor list whose removal is
   *  linear: quadratic in the steps of a ring.) */
  void send_receive(sg4::Mailbox* out, double bytes, sg4::Mailbox* in, int me, int to, int from, double extra_s,
                    double step_overhead_s) {
    const double start_s = message_overhead_s(bytes) + extra_s;
    if (start_s > 0) sg4::this_actor::sleep_for(start_s);
    sleep_step_overhead(me, to, step_overhead_s);
    sg4::CommPtr put = start_put(me, to, bytes, [&](std::uint64_t size) { return out->put_async(&dummy_payload, size); });
    receive(in, from, me);
    put->wait();
    end_put(me, to);
  }

  /** Runs this member's steps of the one collective layer (system/collective.hpp) as
   *  messages: a round with both a send and a receive is one send_receive, one with either a
   *  blocking put or get. Consecutive rounds between the same two peers with equal messages
   *  (a ring) are sent as batches of ring_batch() rounds. */
  void run_collective(RankState& st, int record_index, const Collective& c) {
    const int p = int(c.group.size());
    if (p <= 1) return;
    if (c.kind == CollectiveKind::send) {
      run_send(st, record_index, c);
      return;
    }
    // The member's links stay in use from the collective's start to its end, as the analytic
    // engine books them (take_burst, end_collective): its buckets do not refill between its
    // steps, e.g. while it adds what it received.
    const double start_s = sg4::Engine::get_clock();
    buckets_.take_upload(st.rank, 0, start_s);
    buckets_.take_download(st.rank, 0, start_s);
    // Device <-> host copies around the steps (system/device_staging.hpp).
    const StagingTimes staging = stages_ ? staging_times(c, platform_) : StagingTimes{};
    if (staging.before_s > 0) sg4::this_actor::sleep_for(staging.before_s);
    run_member_steps(st, c);
    if (staging.after_s > 0) sg4::this_actor::sleep_for(staging.after_s);
    const double end_s = sg4::Engine::get_clock();
    buckets_.release_upload(st.rank, end_s);
    buckets_.release_download(st.rank, end_s);
  }

  /** This member's steps of a collective other than send, as messages. */
  void run_member_steps(RankState& st, const Collective& c) {
    const int p = int(c.group.size());
    const auto position = std::lower_bound(c.group.begin(), c.group.end(), st.rank);
    CNNPAR_ASSERT(position != c.group.end() && *position == st.rank, "rank runs a collective it is not in");
    const int me = st.rank;
    const int id = c.id;
    const int member = int(position - c.group.begin());
    const StepPricing pricing = step_pricing(c, platform_.network);  // as step_time_s prices it
    const std::shared_ptr<const std::vector<StepMessage>> messages = messages_of(c, member);
    for (const StepMessage& planned : *messages) {
      const StepMessage message = plans_shift_with_member(c, algorithms_[std::size_t(id)])
                                      ? shifted(planned, member, p)
                                      : planned;
      const CollectiveStep& step = message.step;
      if (step.send_to < 0) {
        const int from = c.group[std::size_t(step.receive_from)];
        receive(pair_mailbox(id, from, me), from, me);
        reduce_received(step, 1);
        continue;
      }
      const int to = c.group[std::size_t(step.send_to)];
      if (step.receive_from < 0) {
        send(pair_mailbox(id, me, to), pricing.size_factor * step.send_bytes, me, to, pricing.step_overhead_s);
        continue;
      }
      const std::size_t g = message.steps;
      // Start-up of the rounds a batched message stands for, beyond the one it pays itself.
      const double extra_s = g > 1 ? double(g - 1) * (route_latency_s(me, to) + overhead_s_) : 0.0;
      const int from = c.group[std::size_t(step.receive_from)];
      send_receive(pair_mailbox(id, me, to), pricing.size_factor * double(g) * step.send_bytes, pair_mailbox(id, from, me),
                   me, to, from, extra_s, double(g) * pricing.step_overhead_s);
      reduce_received(step, g);
    }
  }

  /** The messages of `member`'s plan of `c`; for a ring, member 0's, made once per collective
   *  (each plan has 2(P - 1) steps: planning every member's is quadratic in P). */
  std::shared_ptr<const std::vector<StepMessage>> messages_of(const Collective& c, int member) {
    const Algorithm algorithm = algorithms_[std::size_t(c.id)];
    const auto plan_messages = [&](int of) {
      const CollectivePlan plan = plan_collective(c, algorithm, of);
      return std::make_shared<const std::vector<StepMessage>>(
          step_messages(plan.steps, ring_batch(int(plan.steps.size()))));
    };
    if (!plans_shift_with_member(c, algorithm)) return plan_messages(member);
    std::shared_ptr<const std::vector<StepMessage>>& ring = ring_messages_[c.id];
    if (!ring) ring = plan_messages(0);
    return ring;
  }

  /** `send`: the source puts into the destination's inbox; the destination's receiver actor
   *  accepts messages from any source as they arrive, and this engine waits for this one. */
  void run_send(RankState& st, int record_index, const Collective& c) {
    CNNPAR_ASSERT(c.group.size() == 2, "send needs a group of two ranks");
    if (st.rank == c.root) {
      const int destination = c.group[0] == c.root ? c.group[1] : c.group[0];
      const StepPricing pricing = step_pricing(c, platform_.network);  // as step_time_s prices it
      const double bytes = pricing.size_factor * c.bytes;
      if (overhead_s_ > 0) sg4::this_actor::sleep_for(message_overhead_s(bytes));
      sleep_step_overhead(st.rank, destination, pricing.step_overhead_s);
      start_put(st.rank, destination, bytes,
                [&](std::uint64_t size) { return inbox(destination)->put_async(const_cast<int*>(&c.id), size); })
          ->wait();
      end_put(st.rank, destination);
      if (stages_) sleep_staging(c);
      return;
    }
    std::unique_lock lock(*st.mutex);
    while (st.arrived_s[std::size_t(record_index)] < 0) st.changed->wait(lock);
  }

  /** A send's device <-> host copies, both ways (system/device_staging.hpp). */
  void sleep_staging(const Collective& c) const {
    const double staging_s = staging_times(c, platform_).total_s();
    if (staging_s > 0) sg4::this_actor::sleep_for(staging_s);
  }

  /** Ring steps per message for a ring of `steps` steps (SimgridOptions::ring_step_batch,
   *  ring_messages). Size-dependent message factors price each round's own size: no batching. */
  int ring_batch(int steps) const {
    if (!platform_.network.message_factors.empty()) return 1;
    if (ring_step_batch_ > 0) return ring_step_batch_;
    if (ring_messages_per_ring_ <= 0) return 1;
    return std::max(1, (steps + ring_messages_per_ring_ - 1) / ring_messages_per_ring_);
  }

  const Schedule& schedule_;
  const Platform& platform_;
  int ring_step_batch_ = 0;
  int ring_messages_per_ring_ = kDefaultRingMessages;
  /** Member 0's messages, per ring collective id. */
  std::unordered_map<int, std::shared_ptr<const std::vector<StepMessage>>> ring_messages_;
  std::vector<RankState> states_;
  std::vector<Algorithm> algorithms_;  ///< resolved algorithm per collective id
  double overhead_s_ = 0;
  bool stages_ = false;  ///< some rank copies its messages between device and host
  double slowdown_ = 0;
  double busy_fraction_ = 1;
  LinkBuckets buckets_;  ///< the node links' token buckets (network.link_burst_bytes)
  ServeLedger ledger_;   ///< parameter servers' merges and versions
};

}  // namespace

Trace simulate_here(const Schedule& schedule, const Platform& platform, const SimgridOptions& options,
                    const std::function<void()>& on_platform_ready) {
  std::vector<std::string> args = {"cnnpar-simgrid", "--cfg=network/model:" + options.network_model,
                                   "--cfg=contexts/stack-size:256", "--log=root.thresh:warning",
                                   "--log=xbt_cfg.thresh:warning"};
  if (options.network_model == "CM02") {
    // Pure α-β: no reverse-direction acknowledgement traffic, no TCP window bound.
    args.emplace_back("--cfg=network/crosstraffic:0");
    args.emplace_back("--cfg=network/TCP-gamma:0");
  }
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // Debian's SimGrid has no sanitizer fiber hooks, so ASan cannot follow its raw context
  // switches ("ignoring requested __asan_handle_no_return", then false stack reports) and
  // TSan cannot either. Actors as OS threads are ordinary stacks to both: nothing suppressed.
  args.emplace_back("--cfg=contexts/factory:thread");
#endif
  for (const std::string& item : options.extra_cfg) args.push_back("--cfg=" + item);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = int(args.size());
  sg4::Engine engine(&argc, argv.data());

  const int ranks = schedule.ranks();
  std::vector<sg4::Host*> hosts = options.platform_xml.empty() ? build_platform(platform, ranks)
                                                                : load_platform_xml(options.platform_xml, ranks);
  if (on_platform_ready) on_platform_ready();
  // SimGrid's own message-size factors (what SMPI's calibrated lat-factor/bw-factor feed).
  if (!platform.network.message_factors.empty()) {
    const NetworkSpec network = platform.network;
    auto* model = engine.get_netzone_root()->get_network_model();
    model->set_lat_factor_cb([network](double size, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                       const std::unordered_set<sg4::NetZone*>&) {
      return network.message_factor(size).latency_factor;
    });
    model->set_bw_factor_cb([network](double size, const sg4::Host*, const sg4::Host*, const std::vector<sg4::Link*>&,
                                      const std::unordered_set<sg4::NetZone*>&) {
      return network.message_factor(size).bandwidth_factor;
    });
  }

  Trace trace = trace_skeleton(schedule, platform);
  Replay replay(schedule, platform, options, std::move(hosts), trace);
  replay.start();
  engine.run();
  const std::vector<int> stuck = replay.unfinished();
  if (!stuck.empty())
    throw InputError("<schedule>", fmt::format("/programs/{}", stuck.front()), std::to_string(stuck.size()),
                     fmt::format("the schedule deadlocked in the SimGrid replay: {} rank(s) never finished, "
                                 "first rank {}",
                                 stuck.size(), stuck.front()));
  // A server's records in posting order, as every back-end writes them (pushes as they arrived).
  for (RankTrace& rank : trace.ranks)
    if (!rank.merges.empty())
      std::stable_sort(rank.collectives.begin(), rank.collectives.end(),
                       [](const CollectiveRecord& a, const CollectiveRecord& b) { return a.posted_s < b.posted_s; });
  annotate(trace, options);
  return trace;
}

}  // namespace cnnpar::simgrid_engine
