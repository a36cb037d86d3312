#include "system/serve_ledger.hpp"

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar {

ServeLedger::ServeLedger(const Schedule& schedule)
    : schedule_(schedule), servers_(schedule.serves.size(), -1), state_(schedule.serves.size()) {
  // Without serves every query answers "none" (served() of an unlisted collective): nothing
  // to size, which each replay of a sweep would pay for.
  if (schedule.serves.empty()) return;
  served_.resize(schedule.collectives.size());
  version_.assign(std::size_t(schedule.ranks()), 0);
  base_.assign(std::size_t(schedule.ranks()), 0);
  reply_version_.assign(schedule.collectives.size(), -1);
  // A serve op names one of schedule.serves.
  for (const Program& program : schedule.programs)
    for (const Op& op : program.ops)
      if (op.kind == OpKind::serve) servers_[std::size_t(op.serve)] = program.rank;
  for (std::size_t s = 0; s < schedule.serves.size(); ++s) {
    CNNPAR_ASSERT(servers_[s] >= 0, fmt::format("serve {} is run by no serve op (verify() rejects this)", s));
    const auto& entries = schedule.serves[s].entries;
    for (std::size_t e = 0; e < entries.size(); ++e) {
      served_[std::size_t(entries[e].push)] = {int(s), int(e), true};
      served_[std::size_t(entries[e].reply)] = {int(s), int(e), false};
    }
  }
}

void ServeLedger::push_arrived(int collective) {
  const Served at = served(collective);
  CNNPAR_ASSERT(at.serve >= 0 && at.push, fmt::format("collective {} is not a served push", collective));
  ServeState& state = state_[std::size_t(at.serve)];
  ++state.pushes;
  state.arrived.push_back(at.entry);
}

bool ServeLedger::merge_ready(int serve) const {
  const ServeState& state = state_[std::size_t(serve)];
  if (!state.merging.empty() || state.arrived.empty()) return false;
  if (schedule_.serves[std::size_t(serve)].order == ServeOrder::arrival) return true;
  return state.pushes == schedule_.serves[std::size_t(serve)].entries.size();
}

std::vector<int> ServeLedger::begin_merge(int serve) {
  CNNPAR_ASSERT(merge_ready(serve), fmt::format("serve {} has no merge ready", serve));
  ServeState& state = state_[std::size_t(serve)];
  if (schedule_.serves[std::size_t(serve)].order == ServeOrder::arrival) {
    state.merging = {state.arrived.front()};
    state.arrived.pop_front();
  } else {
    state.merging.assign(state.arrived.begin(), state.arrived.end());
    state.arrived.clear();
  }
  return state.merging;
}

std::vector<int> ServeLedger::end_merge(int serve, double start_s, double end_s, std::vector<MergeRecord>& records) {
  ServeState& state = state_[std::size_t(serve)];
  CNNPAR_ASSERT(!state.merging.empty(), fmt::format("serve {} ends a merge it never began", serve));
  const Serve& definition = schedule_.serves[std::size_t(serve)];
  int& version = version_[std::size_t(servers_[std::size_t(serve)])];
  std::vector<int> replies;
  if (definition.order == ServeOrder::together) ++version;
  for (int e : state.merging) {
    const ServeEntry& entry = definition.entries[std::size_t(e)];
    if (definition.order == ServeOrder::arrival) ++version;
    records.push_back({.worker = entry.worker,
                       .round = entry.round,
                       .base_version = base_[std::size_t(entry.worker)],
                       .version = version,
                       .start_s = start_s,
                       .end_s = end_s});
    reply_version_[std::size_t(entry.reply)] = version;
    replies.push_back(entry.reply);
    // From here the worker trains from this version: its reply carries it, whenever it lands.
    // (Set now rather than at reply_done, so Eq. 9's gamma depends on the merge order alone and
    // a recorded order replays exactly.)
    base_[std::size_t(entry.worker)] = version;
  }
  state.merging.clear();
  return replies;
}

int ServeLedger::reply_version(int collective) const { return reply_version_[std::size_t(collective)]; }

void ServeLedger::reply_done(int collective) {
  const Served at = served(collective);
  CNNPAR_ASSERT(at.serve >= 0 && !at.push, fmt::format("collective {} is not a served reply", collective));
  CNNPAR_ASSERT(reply_version_[std::size_t(collective)] >= 0, "a reply done before its merge");
  ++state_[std::size_t(at.serve)].replies;
}

bool ServeLedger::finished(int serve) const {
  return state_[std::size_t(serve)].replies == schedule_.serves[std::size_t(serve)].entries.size();
}

int ServeLedger::latest_version(int server) const { return version_[std::size_t(server)]; }

}  // namespace cnnpar
