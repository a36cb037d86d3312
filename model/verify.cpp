// Schedule verifier: static checks, then an untimed replay of every rank's compute stream
// and communication engine (one collective at a time, the DESIGN default) that finds
// deadlocks: members reaching collectives in different orders, and wait cycles.
#include <algorithm>
#include <deque>
#include <set>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/schedule.hpp"

namespace cnnpar {
namespace {

bool needs_root(CollectiveKind kind) {
  return kind == CollectiveKind::bcast || kind == CollectiveKind::reduce || kind == CollectiveKind::gather ||
         kind == CollectiveKind::scatter || kind == CollectiveKind::send;
}

std::string describe(const Schedule& schedule, int collective) {
  const Collective& c = schedule.collectives[std::size_t(collective)];
  return c.label.empty() ? fmt::format("collective {} ({})", collective, to_string(c.kind))
                         : fmt::format("collective {} ({})", collective, c.label);
}

void check_collectives(const Schedule& schedule, std::vector<VerifyIssue>& issues) {
  const int ranks = schedule.ranks();
  for (const Collective& c : schedule.collectives) {
    const std::string name = describe(schedule, c.id);
    if (c.group.empty()) {
      issues.push_back({-1, -1, fmt::format("{} has an empty group", name)});
      continue;
    }
    for (std::size_t i = 0; i < c.group.size(); ++i) {
      if (c.group[i] < 0 || c.group[i] >= ranks)
        issues.push_back({-1, -1, fmt::format("{}: group member {} is not a rank (0..{})", name, c.group[i], ranks - 1)});
      if (i > 0 && c.group[i] <= c.group[i - 1])
        issues.push_back({-1, -1, fmt::format("{}: group must be sorted without duplicates", name)});
    }
    if (c.bytes < 0) issues.push_back({-1, -1, fmt::format("{}: negative size {}", name, c.bytes)});
    if (needs_root(c.kind) && std::find(c.group.begin(), c.group.end(), c.root) == c.group.end())
      issues.push_back({-1, -1, fmt::format("{}: root {} is not in its group", name, c.root)});
    if (c.kind == CollectiveKind::send && c.group.size() != 2)
      issues.push_back({-1, -1, fmt::format("{}: a send needs a group of exactly 2 ranks", name)});
  }
}

// Per-rank static checks: posts and waits pair up, members only.
void check_programs(const Schedule& schedule, std::vector<VerifyIssue>& issues) {
  const std::size_t collective_count = schedule.collectives.size();
  std::vector<std::vector<int>> posters(collective_count);
  for (const Program& program : schedule.programs) {
    std::vector<int> posted_at(collective_count, -1), waited_at(collective_count, -1);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind != OpKind::post && op.kind != OpKind::wait) continue;
      if (op.collective < 0 || std::size_t(op.collective) >= collective_count) {
        issues.push_back({program.rank, int(i), fmt::format("{} of collective {}, which does not exist", to_string(op.kind), op.collective)});
        continue;
      }
      const Collective& c = schedule.collectives[std::size_t(op.collective)];
      const std::string name = describe(schedule, op.collective);
      if (op.kind == OpKind::post) {
        if (!std::binary_search(c.group.begin(), c.group.end(), program.rank) &&
            std::find(c.group.begin(), c.group.end(), program.rank) == c.group.end())
          issues.push_back({program.rank, int(i), fmt::format("posts {} but is not in its group", name)});
        if (posted_at[std::size_t(op.collective)] >= 0)
          issues.push_back({program.rank, int(i), fmt::format("posts {} twice (first at op {})", name, posted_at[std::size_t(op.collective)])});
        else
          posters[std::size_t(op.collective)].push_back(program.rank);
        posted_at[std::size_t(op.collective)] = int(i);
      } else {
        if (posted_at[std::size_t(op.collective)] < 0)
          issues.push_back({program.rank, int(i), fmt::format("waits for {} without posting it first", name)});
        else if (waited_at[std::size_t(op.collective)] >= 0)
          issues.push_back({program.rank, int(i), fmt::format("waits for {} twice", name)});
        waited_at[std::size_t(op.collective)] = int(i);
      }
    }
    for (std::size_t c = 0; c < collective_count; ++c)
      if (posted_at[c] >= 0 && waited_at[c] < 0)
        issues.push_back({program.rank, posted_at[c], fmt::format("posts {} but never waits for it", describe(schedule, int(c)))});
  }
  for (const Collective& c : schedule.collectives) {
    for (int member : c.group) {
      if (member < 0 || member >= schedule.ranks()) continue;
      if (std::find(posters[std::size_t(c.id)].begin(), posters[std::size_t(c.id)].end(), member) ==
          posters[std::size_t(c.id)].end())
        issues.push_back({member, -1, fmt::format("is in the group of {} but never posts it", describe(schedule, c.id))});
    }
  }
}

// Untimed replay; reports the first deadlock it finds.
void check_deadlock(const Schedule& schedule, std::vector<VerifyIssue>& issues) {
  const int ranks = schedule.ranks();
  std::vector<std::size_t> pc(std::size_t(ranks), 0);
  std::vector<std::deque<int>> engine(static_cast<std::size_t>(ranks));
  std::vector<char> completed(schedule.collectives.size(), 0);
  std::vector<int> at_front(schedule.collectives.size(), 0);  // members whose engine front is this collective
  std::vector<int> worklist;
  for (int r = 0; r < ranks; ++r) worklist.push_back(r);

  const auto front_reached = [&](int rank, std::vector<int>& ready) {
    if (engine[std::size_t(rank)].empty()) return;
    const int c = engine[std::size_t(rank)].front();
    if (++at_front[std::size_t(c)] == int(schedule.collectives[std::size_t(c)].group.size())) ready.push_back(c);
  };

  while (!worklist.empty()) {
    std::vector<int> ready;
    for (int rank : worklist) {
      const Program& program = schedule.programs[std::size_t(rank)];
      std::size_t& i = pc[std::size_t(rank)];
      while (i < program.ops.size()) {
        const Op& op = program.ops[i];
        if (op.kind == OpKind::post) {
          auto& queue = engine[std::size_t(rank)];
          queue.push_back(op.collective);
          if (queue.size() == 1) front_reached(rank, ready);
        } else if (op.kind == OpKind::wait && !completed[std::size_t(op.collective)]) {
          break;
        }
        ++i;
      }
    }
    worklist.clear();
    // Completing a collective moves each member's engine on and may unblock its stream.
    for (std::size_t k = 0; k < ready.size(); ++k) {
      const int c = ready[k];
      completed[std::size_t(c)] = 1;
      for (int member : schedule.collectives[std::size_t(c)].group) {
        engine[std::size_t(member)].pop_front();
        front_reached(member, ready);
        worklist.push_back(member);
      }
    }
    std::sort(worklist.begin(), worklist.end());
    worklist.erase(std::unique(worklist.begin(), worklist.end()), worklist.end());
  }

  // Explain the first stuck rank: a mismatched order if its engine front waits on a member
  // whose own engine front is a different collective; otherwise a wait cycle.
  for (int rank = 0; rank < ranks; ++rank) {
    const auto& queue = engine[std::size_t(rank)];
    if (!queue.empty()) {
      const int c = queue.front();
      for (int member : schedule.collectives[std::size_t(c)].group) {
        const auto& other = engine[std::size_t(member)];
        if (!other.empty() && other.front() != c) {
          issues.push_back({rank, -1, fmt::format("deadlock: rank {} reaches {} before {}, but rank {} reaches {} first "
                                                  "(members must post collectives in the same order)",
                                                  rank, describe(schedule, c), describe(schedule, other.front()), member,
                                                  describe(schedule, other.front()))});
          return;
        }
        if (other.empty()) {
          const std::size_t i = pc[std::size_t(member)];
          const Program& program = schedule.programs[std::size_t(member)];
          const std::string blocked = i < program.ops.size()
                                          ? fmt::format("blocked at op {} waiting for {}", i, describe(schedule, program.ops[i].collective))
                                          : std::string("finished its program");
          issues.push_back({rank, -1, fmt::format("deadlock: rank {} waits in {} for rank {}, which has not posted it and is {}",
                                                  rank, describe(schedule, c), member, blocked)});
          return;
        }
      }
    }
    const Program& program = schedule.programs[std::size_t(rank)];
    if (pc[std::size_t(rank)] < program.ops.size()) {
      const Op& op = program.ops[pc[std::size_t(rank)]];
      issues.push_back({rank, int(pc[std::size_t(rank)]),
                        fmt::format("deadlock: wait for {} can never complete (wait cycle between ranks)",
                                    describe(schedule, op.collective))});
      return;
    }
  }
}

}  // namespace

std::vector<VerifyIssue> verify(const Schedule& schedule) {
  std::vector<VerifyIssue> issues;
  if (schedule.programs.empty()) {
    issues.push_back({-1, -1, "the schedule has no ranks"});
    return issues;
  }
  for (std::size_t r = 0; r < schedule.programs.size(); ++r)
    if (schedule.programs[r].rank != int(r))
      issues.push_back({int(r), -1, fmt::format("program {} says it is rank {}", r, schedule.programs[r].rank)});
  check_collectives(schedule, issues);
  check_programs(schedule, issues);
  if (issues.empty()) check_deadlock(schedule, issues);  // the replay assumes the static checks hold
  return issues;
}

void verify_or_throw(const Schedule& schedule, const std::string& file) {
  const std::vector<VerifyIssue> issues = verify(schedule);
  if (issues.empty()) return;
  const VerifyIssue& first = issues.front();
  std::string path = "/";
  if (first.rank >= 0) path = first.op >= 0 ? fmt::format("/programs/{}/ops/{}", first.rank, first.op) : fmt::format("/programs/{}", first.rank);
  const std::string value = first.rank >= 0 ? fmt::format("rank {}{}", first.rank, first.op >= 0 ? fmt::format(" op {}", first.op) : "") : "schedule";
  const std::string more = issues.size() > 1 ? fmt::format(" (and {} more problems)", issues.size() - 1) : "";
  throw InputError(file, path, value, "schedule does not verify: " + first.message + more);
}

}  // namespace cnnpar
