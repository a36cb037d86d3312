#include "sim/analytic/analytic_engine.hpp"

#include <algorithm>
#include <cstdint>
#include <queue>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "sim/analytic/collective_cost.hpp"
#include "sim/analytic/collective_durations.hpp"
#include "system/collective.hpp"
#include "system/collective_algorithm.hpp"
#include "system/device_staging.hpp"
#include "system/link_bucket.hpp"
#include "system/op_time.hpp"
#include "system/serve_ledger.hpp"

namespace cnnpar::analytic {
namespace {

struct Event {
  double time_s = 0;
  std::uint64_t seq = 0;        // insertion order: deterministic ties
  std::int32_t id = 0;          // rank (compute end) or collective (collective end)
  std::uint32_t version = 0;    // compute end: valid only if it matches the rank's version
  bool compute = false;
};

struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time_s > b.time_s || (a.time_s == b.time_s && a.seq > b.seq);
  }
};

enum class Status : std::uint8_t { ready, computing, waiting, serving, done };

// Work counted in full-speed seconds, progressing at `rate` per second since last_update_s: a
// rank's compute op (communication slow-down) or a collective (busy fraction, contention).
struct RatedWork {
  double remaining_s = 0;    // full-speed seconds still to run at last_update_s
  double last_update_s = 0;
  double rate = 1;           // progress per second
  std::uint32_t version = 0; // end events of older rates are stale

  // Switches to `new_rate` at time_s; returns the new end time.
  double change_rate(double time_s, double new_rate) {
    remaining_s = std::max(0.0, remaining_s - (time_s - last_update_s) * rate);
    last_update_s = time_s;
    rate = new_rate;
    ++version;
    return time_s + remaining_s / rate;
  }
};

struct RankState : RatedWork {
  std::size_t pc = 0;
  Status status = Status::ready;
  double clock_s = 0;        // the compute stream's time
  int waiting_on = -1;
  std::size_t wait_record = 0;
  // compute op in flight (time-ordered replay): RatedWork, rate 1 or 1/(1+slowdown)
  double overhead_s = 0;     // iteration_overhead_s(platform, schedule, rank)
  bool overhead_due = true;  // that overhead before the next op (program start, after a mark)
  bool in_overhead = false;  // the timed interval in flight is that overhead, not an op
  int merging_serve = -1;    // the timed interval in flight is a merge of this serve
  std::vector<int> in_progress;  // started, unended collectives (dynamic collective rates)
  // communication engine
  std::vector<int> queue;    // posted collective ids, posting order
  std::vector<double> ready_s;  // per queue entry: when the progress thread can take it
  std::size_t queue_head = 0;
  int active = 0;            // joined, not ended
  int transferring = 0;      // started, not ended
  // a parameter server's receiver: pushes from any worker, one at a time, in arrival order,
  // beside the engine (which sends the replies)
  std::vector<int> receiver_queue;  // a vector and its head: a deque allocates even when unused
  std::size_t receiver_head = 0;
  bool receiving = false;
};

// RatedWork only with dynamic rates (busy_bandwidth_fraction < 1 or injection contention).
struct CollState : RatedWork {
  double duration_s = 0;     // at full speed, alone on its members' links
  int busy_members = 0;      // members computing now
  int joined = 0;
  double max_join_s = 0;
  double start_s = 0, end_s = 0;
  bool started = false, ended = false;
  std::size_t member_offset = 0;  // into Replay::member_record_
};

class Replay {
 public:
  Replay(const Schedule& schedule, const Platform& platform, const ReplayPlan& plan, ReplayMode mode,
         TraceDetail detail)
      : schedule_(schedule),
        platform_(platform),
        plan_(plan),
        representatives_(plan.classes.representatives),
        detail_(detail),
        ledger_(schedule) {
    const int ranks = schedule.ranks();
    CNNPAR_ASSERT(plan.op_s.size() == std::size_t(ranks), "Replay: the plan is of another schedule");
    concurrency_ = std::max(1, platform.network.collective_concurrency);
    slowdown_ = std::max(0.0, platform.comm_compute_slowdown);
    run_ahead_ = mode == ReplayMode::automatic && slowdown_ == 0.0 && concurrency_ == 1;
    slow_rate_ = 1.0 / (1.0 + slowdown_);
    busy_fraction_ = platform.network.busy_bandwidth_fraction;
    contention_ = platform.network.injection_contention && concurrency_ > 1;
    dynamic_rates_ = busy_fraction_ < 1.0 || contention_;
    if (dynamic_rates_) run_ahead_ = false;
    // Whether a rank's progress thread is idle at a post depends on collectives ending in
    // time order (comm_start_wait_s).
    if (platform.comm_start_wait_max_s > 0) run_ahead_ = false;
    // What a link's bucket holds depends on when its collectives end.
    if (platform.network.link_burst_bytes > 0)
      buckets_ = LinkBuckets(ranks, platform.network.link_burst_bytes, platform.network.bandwidth_Bps);
    if (buckets_.enabled()) run_ahead_ = false;
    // A server takes pushes in the order they arrive: that order needs every end in time order.
    if (ledger_.any()) run_ahead_ = false;
    serve_active_.assign(schedule.serves.size(), 0);
    pending_pushes_.resize(schedule.serves.size());

    CNNPAR_ASSERT(mode == ReplayMode::automatic || plan.classes.representatives.empty(),
                  "Replay: a time-ordered replay replays every rank");
    ranks_.resize(std::size_t(ranks));
    for (int r = 0; r < ranks; ++r)
      if (replayed(r)) ranks_[std::size_t(r)].overhead_s = plan.overhead_s[std::size_t(r)];
    colls_.resize(schedule.collectives.size());
    std::size_t offset = 0;
    for (std::size_t c = 0; c < schedule.collectives.size(); ++c)
      CNNPAR_ASSERT(!schedule.collectives[c].group.empty(), fmt::format("collective {} has an empty group", c));
    const std::vector<double> durations_s = collective_durations_s(schedule, platform, plan.prices);
    for (std::size_t c = 0; c < schedule.collectives.size(); ++c) {
      const Collective& coll = schedule.collectives[c];
      colls_[c].duration_s = durations_s[c];
      colls_[c].member_offset = offset;
      offset += coll.group.size();
    }
    member_record_.assign(offset, -1);

    trace_ = make_empty_trace_without_layers(schedule, "analytic", detail);
    if (detail == TraceDetail::full) trace_.metadata["platform"] = platform.name;
    CNNPAR_ASSERT(int(trace_.ranks.size()) == ranks, "make_empty_trace_without_layers: one RankTrace per rank");
    for (int r = 0; r < ranks; ++r) {
      if (!replayed(r)) continue;
      const ReplayPlan::OpCounts& counts = plan.op_counts[std::size_t(r)];
      RankTrace& rt = trace_.ranks[std::size_t(r)];
      rt.compute.reserve(counts.computes);
      rt.collectives.reserve(counts.posts);
      rt.marks.reserve(counts.marks);
      ranks_[std::size_t(r)].queue.reserve(counts.posts);
      ranks_[std::size_t(r)].ready_s.reserve(counts.posts);
    }
  }

  ClassedTrace run() {
    for (int r = 0; r < int(ranks_.size()); ++r)
      if (replayed(r)) advance(r);
    while (!events_.empty()) {
      const Event event = events_.top();
      events_.pop();
      if (event.compute) {
        RankState& rs = ranks_[std::size_t(event.id)];
        if (rs.status != Status::computing || rs.version != event.version) continue;  // stale
        finish_compute(event.id, event.time_s);
        advance(event.id);
      } else {
        const CollState& cs = colls_[std::size_t(event.id)];
        if (cs.ended || (dynamic_rates_ && cs.version != event.version)) continue;  // stale
        if (dynamic_rates_) colls_[std::size_t(event.id)].end_s = event.time_s;
        end_collective(event.id);
      }
    }
    check_finished();
    // Every rank lived its class representative's timeline.
    return ClassedTrace{.trace = std::move(trace_),
                        .representative_of = representatives_.empty() ? std::vector<int>{}
                                                                      : plan_.classes.representative_of,
                        .detail = detail_};
  }

 private:
  // Index of `rank` inside the sorted group of collective `c`, or -1.
  int member_index(int c, int rank) const {
    const auto& group = schedule_.collectives[std::size_t(c)].group;
    const auto it = std::lower_bound(group.begin(), group.end(), rank);
    if (it == group.end() || *it != rank) return -1;
    return int(it - group.begin());
  }

  // The ranks whose state a collective changes: its group, or the class representatives.
  std::span<const int> members(int c) const {
    if (!representatives_.empty()) return representatives_;
    return schedule_.collectives[std::size_t(c)].group;
  }

  bool replayed(int r) const { return plan_.replayed(r); }

  int& record_slot(int c, int member) { return member_record_[colls_[std::size_t(c)].member_offset + std::size_t(member)]; }

  CollectiveRecord& record_of(int rank, int c) {
    const int member = member_index(c, rank);
    CNNPAR_ASSERT(member >= 0, "record_of: rank not in group");
    const int index = record_slot(c, member);
    CNNPAR_ASSERT(index >= 0, "record_of: collective not posted");
    return trace_.ranks[std::size_t(rank)].collectives[std::size_t(index)];
  }

  void push(double time_s, int id, std::uint32_t version, bool compute) {
    events_.push(Event{time_s, next_seq_++, id, version, compute});
  }

  double current_rate(const RankState& rs) const { return rs.transferring > 0 ? slow_rate_ : 1.0; }

  // Runs rank r's program from its clock until it blocks, starts a timed compute op
  // (time-ordered replay) or ends.
  void advance(int r) {
    RankState& rs = ranks_[std::size_t(r)];
    const auto& ops = schedule_.programs[std::size_t(r)].ops;
    RankTrace& rt = trace_.ranks[std::size_t(r)];
    while (rs.status == Status::ready) {
      if (rs.pc == ops.size()) {
        rs.status = Status::done;
        return;
      }
      const Op& op = ops[rs.pc];
      if (rs.overhead_due && op.kind != OpKind::mark) {
        rs.overhead_due = false;
        if (rs.overhead_s > 0) {
          if (run_ahead_) {
            rs.clock_s += rs.overhead_s;
          } else {
            rs.in_overhead = true;
            start_timed(r, rs.overhead_s);
          }
          continue;
        }
      }
      switch (op.kind) {
        case OpKind::compute: {
          const double duration_s = plan_.op_s[std::size_t(r)][rs.pc];
          CNNPAR_ASSERT(duration_s >= 0, fmt::format("negative compute time for {}", op.label));
          ComputeRecord& record = rt.compute.emplace_back();
          describe_compute_into(record, op, int(rs.pc), detail_);
          record.start_s = rs.clock_s;
          if (run_ahead_) {
            rs.clock_s += duration_s;
            record.end_s = rs.clock_s;
            ++rs.pc;
          } else {
            start_timed(r, duration_s);
          }
          break;
        }
        case OpKind::post:
          post(r, op.collective);
          ++rs.pc;
          break;
        case OpKind::wait:
          wait(r, op.collective);
          break;
        case OpKind::mark:
          rt.marks.push_back(MarkRecord{op.iteration, rs.clock_s});
          ++rs.pc;
          rs.overhead_due = true;
          break;
        case OpKind::serve:
          serve_step(r, op.serve);
          break;
      }
    }
  }

  // Rank r computes for `duration_s` full-speed seconds from its clock (time-ordered replay).
  void start_timed(int r, double duration_s) {
    RankState& rs = ranks_[std::size_t(r)];
    rs.status = Status::computing;
    rs.remaining_s = duration_s;
    rs.last_update_s = rs.clock_s;
    rs.rate = current_rate(rs);
    ++rs.version;
    push(rs.clock_s + rs.remaining_s / rs.rate, r, rs.version, true);
    if (dynamic_rates_) change_busy(r, +1, rs.clock_s);
  }

  void finish_compute(int r, double time_s) {
    RankState& rs = ranks_[std::size_t(r)];
    rs.clock_s = time_s;
    rs.status = Status::ready;
    rs.remaining_s = 0;
    if (dynamic_rates_) change_busy(r, -1, time_s);
    if (rs.in_overhead) {
      rs.in_overhead = false;
      return;
    }
    trace_.ranks[std::size_t(r)].compute.back().end_s = time_s;
    if (rs.merging_serve >= 0) {
      end_merge(r, time_s);
      return;
    }
    ++rs.pc;
  }

  // ---- parameter servers (system/serve_ledger.hpp) ----

  // Server r at its serve op: starts listening, runs a ready merge, or waits for arrivals;
  // moves past the op once every reply is done.
  void serve_step(int r, int s) {
    RankState& rs = ranks_[std::size_t(r)];
    if (!serve_active_[std::size_t(s)]) {
      serve_active_[std::size_t(s)] = 1;
      for (int c : pending_pushes_[std::size_t(s)]) receive_at(r, c, rs.clock_s);
      pending_pushes_[std::size_t(s)].clear();
    }
    if (ledger_.merge_ready(s)) {
      const std::vector<int> entries = ledger_.begin_merge(s);
      const Serve& serve = schedule_.serves[std::size_t(s)];
      ComputeRecord& record =
          trace_.ranks[std::size_t(r)].compute.emplace_back(describe_compute(serve.merge, int(rs.pc), detail_));
      const ServeEntry& first = serve.entries[std::size_t(entries.front())];
      if (detail_ == TraceDetail::full)
        record.label = serve.order == ServeOrder::arrival ? fmt::format("merge w{} r{}", first.worker, first.round)
                                                          : fmt::format("merge r{}", first.round);
      record.start_s = rs.clock_s;
      rs.merging_serve = s;
      start_timed(r, op_time_s(platform_, serve.merge, r));
      return;
    }
    if (ledger_.finished(s)) {
      ++rs.pc;
      return;
    }
    rs.status = Status::serving;
  }

  // Server r's merge ended: the versions advance and the replies are posted.
  void end_merge(int r, double time_s) {
    RankState& rs = ranks_[std::size_t(r)];
    const int s = rs.merging_serve;
    rs.merging_serve = -1;
    RankTrace& rt = trace_.ranks[std::size_t(r)];
    for (int reply : ledger_.end_merge(s, rt.compute.back().start_s, time_s, rt.merges)) post_at(r, reply, time_s);
  }

  // ---- dynamic collective rates (busy_bandwidth_fraction, injection contention) ----

  // Rate of in-progress collective c: busy_bandwidth_fraction while a member computes, divided
  // by the most collectives any member is transferring at once when they share its link.
  double collective_rate(int c) const {
    const CollState& cs = colls_[std::size_t(c)];
    double rate = cs.busy_members > 0 ? busy_fraction_ : 1.0;
    if (contention_) {
      std::size_t sharing = 1;
      for (int m : members(c)) sharing = std::max(sharing, ranks_[std::size_t(m)].in_progress.size());
      rate /= double(sharing);
    }
    return rate;
  }

  void update_collective_rate(int c, double time_s) {
    CollState& cs = colls_[std::size_t(c)];
    const double rate = collective_rate(c);
    if (rate == cs.rate) return;
    const double end_s = cs.change_rate(time_s, rate);
    push(end_s, c, cs.version, false);
  }

  void change_busy(int r, int delta, double time_s) {
    for (int c : ranks_[std::size_t(r)].in_progress) {
      colls_[std::size_t(c)].busy_members += delta;
      update_collective_rate(c, time_s);
    }
  }

  // The collectives sharing a link with c's members change speed when c starts or ends.
  void update_neighbours(int c, double time_s) {
    if (!contention_) return;
    for (int m : members(c))
      for (int other : ranks_[std::size_t(m)].in_progress)
        if (other != c) update_collective_rate(other, time_s);
  }

  void check_collective_id(int r, int c) const {
    CNNPAR_ASSERT(c >= 0 && std::size_t(c) < colls_.size(),
                  fmt::format("rank {} op {} names collective {} which does not exist", r,
                              ranks_[std::size_t(r)].pc, c));
  }

  void post(int r, int c) {
    check_collective_id(r, c);
    post_at(r, c, ranks_[std::size_t(r)].clock_s);
    // A push reaches its server's engine when the worker posts it, once the server listens.
    if (const ServeLedger::Served at = ledger_.served(c); at.serve >= 0 && at.push) {
      if (serve_active_[std::size_t(at.serve)])
        receive_at(ledger_.server(at.serve), c, ranks_[std::size_t(r)].clock_s);
      else
        pending_pushes_[std::size_t(at.serve)].push_back(c);
    }
  }

  // Server r's receiver gets push c at time_s: it joins now when idle, else after the pushes
  // before it (receive_next).
  void receive_at(int r, int c, double time_s) {
    RankState& rs = ranks_[std::size_t(r)];
    auto& records = trace_.ranks[std::size_t(r)].collectives;
    record_slot(c, member_index(c, r)) = int(records.size());
    CollectiveRecord& record = records.emplace_back();
    describe_collective_into(record, schedule_.collectives[std::size_t(c)], detail_);
    record.posted_s = record.comm_start_s = record.comm_end_s = record.wait_start_s = record.wait_end_s = time_s;
    rs.receiver_queue.push_back(c);
    receive_next(r, time_s);
  }

  void receive_next(int r, double time_s) {
    RankState& rs = ranks_[std::size_t(r)];
    if (rs.receiving || rs.receiver_head == rs.receiver_queue.size()) return;
    const int c = rs.receiver_queue[rs.receiver_head++];
    rs.receiving = true;
    record_of(r, c).comm_start_s = time_s;
    CollState& cs = colls_[std::size_t(c)];
    cs.max_join_s = cs.joined == 0 ? time_s : std::max(cs.max_join_s, time_s);
    if (++cs.joined == 2) start_collective(c);
  }

  // Rank r's engine gets collective c at time_s (its own post, or a server's reply).
  void post_at(int r, int c, double time_s) {
    RankState& rs = ranks_[std::size_t(r)];
    const Collective& coll = schedule_.collectives[std::size_t(c)];
    const int member = member_index(c, r);
    CNNPAR_ASSERT(member >= 0, fmt::format("rank {} posts collective {} ('{}') without being in its group", r, c,
                                           coll.label));
    int& slot = record_slot(c, member);
    CNNPAR_ASSERT(slot < 0, fmt::format("rank {} posts collective {} ('{}') twice", r, c, coll.label));
    auto& records = trace_.ranks[std::size_t(r)].collectives;
    slot = int(records.size());
    CollectiveRecord& record = records.emplace_back();
    describe_collective_into(record, coll, detail_);
    record.posted_s = time_s;
    record.comm_start_s = record.comm_end_s = record.wait_start_s = record.wait_end_s = time_s;
    const bool thread_idle = rs.active == 0 && rs.queue_head == rs.queue.size();
    rs.queue.push_back(c);
    rs.ready_s.push_back(time_s + (thread_idle ? comm_start_wait_s(platform_, schedule_, r, rs.pc) : 0.0));
    try_join(r, time_s);
  }

  // The engine of rank r takes queued collectives while it has a free slot; `now_s` is the
  // time the slot is known free (posting time, or the end of the collective that held it).
  void try_join(int r, double now_s) {
    RankState& rs = ranks_[std::size_t(r)];
    while (rs.active < concurrency_ && rs.queue_head < rs.queue.size()) {
      const double ready_s = rs.ready_s[rs.queue_head];
      const int c = rs.queue[rs.queue_head++];
      CollectiveRecord& record = record_of(r, c);
      const double join_s = std::max(now_s, ready_s);
      record.comm_start_s = join_s;
      ++rs.active;
      CollState& cs = colls_[std::size_t(c)];
      cs.max_join_s = cs.joined == 0 ? join_s : std::max(cs.max_join_s, join_s);
      ++cs.joined;
      const std::size_t needed =
          representatives_.empty() ? schedule_.collectives[std::size_t(c)].group.size() : representatives_.size();
      if (std::size_t(cs.joined) == needed) start_collective(c);
    }
  }

  void start_collective(int c) {
    CollState& cs = colls_[std::size_t(c)];
    cs.started = true;
    cs.start_s = cs.max_join_s;
    if (buckets_.enabled()) cs.duration_s = take_burst(c, cs.start_s);
    cs.end_s = cs.start_s + cs.duration_s;
    if (slowdown_ > 0)
      for (int m : members(c)) change_transferring(m, +1, cs.start_s);
    if (!dynamic_rates_) {
      push(cs.end_s, c, 0, false);
      return;
    }
    cs.remaining_s = cs.duration_s;
    cs.last_update_s = cs.start_s;
    cs.busy_members = 0;
    for (int m : members(c)) {
      ranks_[std::size_t(m)].in_progress.push_back(c);
      cs.busy_members += ranks_[std::size_t(m)].status == Status::computing;
    }
    cs.rate = collective_rate(c);
    push(cs.start_s + cs.remaining_s / cs.rate, c, cs.version, false);
    update_neighbours(c, cs.start_s);
  }

  // Collective c starting at start_s: its first bytes pass as a burst (network.burst_time_s) as
  // far as every member's upload (when it sends) and download (when it receives) bucket holds
  // them, from the critical member's first rounds. Returns c's full-speed duration.
  double take_burst(int c, double start_s) {
    const Collective& coll = schedule_.collectives[std::size_t(c)];
    if (coll.group.size() <= 1) return colls_[std::size_t(c)].duration_s;
    const Algorithm algorithm = resolve_algorithm(coll, platform_);
    const double size_factor = step_pricing(coll, platform_.network).size_factor;
    struct Volume {
      int rank;
      double sent_bytes, received_bytes;  // scaled by the size factor
    };
    std::vector<Volume> volumes;
    double passed_bytes = platform_.network.link_burst_bytes;
    for (int m : members(c)) {
      const CollectivePlan plan = plan_collective(coll, algorithm, member_index(c, m));
      const Volume v{m, size_factor * plan.bytes_sent, size_factor * plan.bytes_received};
      if (v.sent_bytes > 0) passed_bytes = std::min(passed_bytes, buckets_.upload_bytes(m, start_s));
      if (v.received_bytes > 0) passed_bytes = std::min(passed_bytes, buckets_.download_bytes(m, start_s));
      volumes.push_back(v);
    }
    for (const Volume& v : volumes) {
      buckets_.take_upload(v.rank, std::min(passed_bytes, v.sent_bytes), start_s);
      buckets_.take_download(v.rank, std::min(passed_bytes, v.received_bytes), start_s);
    }
    return collective_time_s(coll, plan_.prices.plans[plan_.prices.price_of[std::size_t(c)]], platform_.network,
                             passed_bytes) +
           staging_times(coll, platform_).total_s();
  }

  // Compute progresses at a new rate from time_s on (time-ordered replay only).
  void change_transferring(int r, int delta, double time_s) {
    RankState& rs = ranks_[std::size_t(r)];
    rs.transferring += delta;
    if (rs.status != Status::computing) return;
    const double rate = current_rate(rs);
    if (rate == rs.rate) return;
    const double end_s = rs.change_rate(time_s, rate);
    push(end_s, r, rs.version, true);
  }

  void end_collective(int c) {
    CollState& cs = colls_[std::size_t(c)];
    cs.ended = true;
    const std::span<const int> group = members(c);
    if (dynamic_rates_) {
      for (int m : group) {
        auto& list = ranks_[std::size_t(m)].in_progress;
        list.erase(std::find(list.begin(), list.end(), c));
      }
      update_neighbours(c, cs.end_s);
    }
    const ServeLedger::Served served = ledger_.served(c);
    const int receiver = served.push ? ledger_.server(served.serve) : -1;
    for (int m : group) {
      RankState& rs = ranks_[std::size_t(m)];
      record_of(m, c).comm_end_s = cs.end_s;
      if (buckets_.enabled() && schedule_.collectives[std::size_t(c)].group.size() > 1) {  // as take_burst took
        buckets_.release_upload(m, cs.end_s);
        buckets_.release_download(m, cs.end_s);
      }
      if (m == receiver)
        rs.receiving = false;
      else
        --rs.active;
      if (slowdown_ > 0) change_transferring(m, -1, cs.end_s);
    }
    if (receiver >= 0) receive_next(receiver, cs.end_s);
    if (const ServeLedger::Served& at = served; at.serve >= 0) {
      if (at.push)
        ledger_.push_arrived(c);
      else
        ledger_.reply_done(c);
      RankState& server = ranks_[std::size_t(ledger_.server(at.serve))];
      if (server.status == Status::serving) {
        server.status = Status::ready;
        server.clock_s = std::max(server.clock_s, cs.end_s);
      }
    }
    for (int m : group) {
      RankState& rs = ranks_[std::size_t(m)];
      if (rs.status == Status::waiting && rs.waiting_on == c) {
        resume_from_wait(m, cs.end_s);
      }
      try_join(m, cs.end_s);
      advance(m);
    }
  }

  void wait(int r, int c) {
    check_collective_id(r, c);
    RankState& rs = ranks_[std::size_t(r)];
    const int member = member_index(c, r);
    CNNPAR_ASSERT(member >= 0 && record_slot(c, member) >= 0,
                  fmt::format("rank {} op {} waits for collective {} ('{}') it never posted", r, rs.pc, c,
                              schedule_.collectives[std::size_t(c)].label));
    CollectiveRecord& record = trace_.ranks[std::size_t(r)].collectives[std::size_t(record_slot(c, member))];
    record.wait_start_s = rs.clock_s;
    const CollState& cs = colls_[std::size_t(c)];
    // Run-ahead: a started collective's end is already final.
    if (cs.ended || (run_ahead_ && cs.started)) {
      rs.clock_s = std::max(rs.clock_s, cs.end_s);
      record.wait_end_s = rs.clock_s;
      ++rs.pc;
      return;
    }
    rs.status = Status::waiting;
    rs.waiting_on = c;
  }

  void resume_from_wait(int r, double end_s) {
    RankState& rs = ranks_[std::size_t(r)];
    CollectiveRecord& record = record_of(r, rs.waiting_on);
    rs.clock_s = std::max(rs.clock_s, end_s);
    record.wait_end_s = rs.clock_s;
    rs.status = Status::ready;
    rs.waiting_on = -1;
    ++rs.pc;
  }

  [[noreturn]] void report_deadlock() const {
    std::string message = "analytic replay deadlocked:";
    int listed = 0;
    for (std::size_t r = 0; r < ranks_.size() && listed < 8; ++r) {
      const RankState& rs = ranks_[r];
      if (rs.status == Status::done || !replayed(int(r))) continue;
      ++listed;
      message += fmt::format(" rank {} at op {}", r, rs.pc);
      if (rs.status == Status::waiting) {
        const int c = rs.waiting_on;
        const Collective& coll = schedule_.collectives[std::size_t(c)];
        std::vector<int> missing;
        for (std::size_t i = 0; i < coll.group.size(); ++i)
          if (member_record_[colls_[std::size_t(c)].member_offset + i] < 0) missing.push_back(coll.group[i]);
        message += fmt::format(" waits for collective {} ('{}', joined by {}/{} members{}{});", c, coll.label,
                               colls_[std::size_t(c)].joined, coll.group.size(),
                               missing.empty() ? "" : ", never posted by ranks ", fmt::join(missing, ","));
      } else {
        message += " is stuck;";
      }
    }
    throw InternalError(message + " (verify() should have rejected this schedule)");
  }

  void check_finished() const {
    for (std::size_t r = 0; r < ranks_.size(); ++r)
      if (replayed(int(r)) && ranks_[r].status != Status::done) report_deadlock();
  }

  const Schedule& schedule_;
  const Platform& platform_;
  const ReplayPlan& plan_;
  const std::vector<int>& representatives_;  // one rank per class; empty = replay every rank
  TraceDetail detail_;
  int concurrency_ = 1;
  double slowdown_ = 0;
  double slow_rate_ = 1;
  double busy_fraction_ = 1;
  bool contention_ = false;
  bool dynamic_rates_ = false;
  bool run_ahead_ = false;
  LinkBuckets buckets_;  // the node links' token buckets (network.link_burst_bytes)
  ServeLedger ledger_;   // parameter servers' merges and versions
  std::vector<char> serve_active_;              // per serve: its op reached
  std::vector<std::vector<int>> pending_pushes_;  // per serve: pushes posted before that
  std::vector<RankState> ranks_;
  std::vector<CollState> colls_;
  std::vector<int> member_record_;  // per (collective, member): record index on that rank, -1 = not posted
  std::priority_queue<Event, std::vector<Event>, Later> events_;
  std::uint64_t next_seq_ = 0;
  Trace trace_;
};

}  // namespace

ClassedTrace analytic_replay_classed(const Schedule& schedule, const Platform& platform, ReplayMode mode) {
  return analytic_replay_classed(schedule, platform, make_replay_plan(schedule, platform, mode), mode,
                                 TraceDetail::full);
}

ClassedTrace analytic_replay_classed(const Schedule& schedule, const Platform& platform, const ReplayPlan& plan,
                                     ReplayMode mode, TraceDetail detail) {
  Replay replay(schedule, platform, plan, mode, detail);
  return replay.run();
}

Trace analytic_replay(const Schedule& schedule, const Platform& platform, ReplayMode mode) {
  return analytic_replay_classed(schedule, platform, mode).expand(schedule);
}

}  // namespace cnnpar::analytic
