// Schedule verifier: static checks, then an untimed replay of every rank's compute stream
// and communication engine (one collective at a time, the DESIGN default) that finds
// deadlocks: members reaching collectives in different orders, and wait cycles.
#include <algorithm>
#include <deque>
#include <set>

#include <fmt/format.h>

#include "base/error.hpp"
#include "model/network.hpp"
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

// A serve's entries: sends between its server and one worker, each collective in one entry.
void check_serves(const Schedule& schedule, std::vector<VerifyIssue>& issues) {
  std::vector<int> server_of(schedule.serves.size(), -1);
  for (const Program& program : schedule.programs)
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind != OpKind::serve || op.serve < 0 || std::size_t(op.serve) >= schedule.serves.size()) continue;
      if (server_of[std::size_t(op.serve)] >= 0)
        issues.push_back({program.rank, int(i), fmt::format("serve {} is run by two serve ops", op.serve)});
      server_of[std::size_t(op.serve)] = program.rank;
    }
  std::vector<int> entries_of(schedule.collectives.size(), 0);
  for (std::size_t s = 0; s < schedule.serves.size(); ++s) {
    const int server = server_of[s];
    if (server < 0) {
      issues.push_back({-1, -1, fmt::format("serve {} is run by no serve op", s)});
      continue;
    }
    const Serve& serve = schedule.serves[s];
    if (serve.merge.kind != OpKind::compute)
      issues.push_back({server, -1, fmt::format("serve {}: its merge is not a compute op", s)});
    for (const ServeEntry& e : serve.entries) {
      if (e.worker == server) {
        issues.push_back({server, -1, fmt::format("serve {}: the server is also worker {}", s, e.worker)});
        continue;
      }
      const std::pair<int, int> sides[] = {{e.push, e.worker}, {e.reply, server}};
      for (const auto& [c, root] : sides) {
        if (c < 0 || std::size_t(c) >= schedule.collectives.size()) {
          issues.push_back({server, -1, fmt::format("serve {}: collective {} does not exist", s, c)});
          continue;
        }
        ++entries_of[std::size_t(c)];
        const Collective& coll = schedule.collectives[std::size_t(c)];
        const std::vector<int> pair = {std::min(server, e.worker), std::max(server, e.worker)};
        if (coll.kind != CollectiveKind::send || coll.group != pair || coll.root != root)
          issues.push_back({server, -1, fmt::format("serve {}: {} must be a send from rank {} between ranks {} and {}", s,
                                                    describe(schedule, c), root, server, e.worker)});
      }
    }
  }
  for (std::size_t c = 0; c < entries_of.size(); ++c)
    if (entries_of[c] > 1)
      issues.push_back({-1, -1, fmt::format("{} is served by {} entries", describe(schedule, int(c)), entries_of[c])});
}

// Per-rank static checks: posts and waits pair up, members only.
void check_programs(const Schedule& schedule, std::vector<VerifyIssue>& issues) {
  const std::size_t collective_count = schedule.collectives.size();
  std::vector<std::vector<int>> posters(collective_count);
  for (const Program& program : schedule.programs) {
    std::vector<int> posted_at(collective_count, -1), waited_at(collective_count, -1);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind == OpKind::serve) {
        // The server's side of every push and reply it serves.
        if (op.serve < 0 || std::size_t(op.serve) >= schedule.serves.size()) {
          issues.push_back({program.rank, int(i), fmt::format("serve {}, which does not exist", op.serve)});
          continue;
        }
        for (const ServeEntry& e : schedule.serves[std::size_t(op.serve)].entries)
          for (int c : {e.push, e.reply})
            if (c >= 0 && std::size_t(c) < collective_count) {
              if (posted_at[std::size_t(c)] >= 0)
                issues.push_back({program.rank, int(i), fmt::format("serves {} twice", describe(schedule, c))});
              else
                posters[std::size_t(c)].push_back(program.rank);
              posted_at[std::size_t(c)] = waited_at[std::size_t(c)] = int(i);
            }
        continue;
      }
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

// Untimed replay; reports the first deadlock it finds. A serve op's side of its pushes and
// replies needs no place in the server's engine (it receives from any worker): a push is there
// once the op is reached, a reply once its push (arrival) or every push (together) completed.
void check_deadlock(const Schedule& schedule, std::vector<VerifyIssue>& issues) {
  const int ranks = schedule.ranks();
  std::vector<std::size_t> pc(std::size_t(ranks), 0);
  std::vector<std::deque<int>> engine(static_cast<std::size_t>(ranks));
  std::vector<char> completed(schedule.collectives.size(), 0);
  std::vector<int> at_front(schedule.collectives.size(), 0);  // members whose engine front is this collective
  std::vector<int> worklist;
  for (int r = 0; r < ranks; ++r) worklist.push_back(r);

  struct ServeState {
    int server = -1;
    bool active = false;
    std::size_t pushes_done = 0, replies_done = 0;
  };
  std::vector<ServeState> serves(schedule.serves.size());
  std::vector<int> serve_of(schedule.collectives.size(), -1);
  std::vector<int> entry_of(schedule.collectives.size(), -1);
  for (const Program& program : schedule.programs)
    for (const Op& op : program.ops)
      if (op.kind == OpKind::serve) serves[std::size_t(op.serve)].server = program.rank;
  for (std::size_t s = 0; s < schedule.serves.size(); ++s)
    for (std::size_t e = 0; e < schedule.serves[s].entries.size(); ++e)
      for (int c : {schedule.serves[s].entries[e].push, schedule.serves[s].entries[e].reply}) {
        serve_of[std::size_t(c)] = int(s);
        entry_of[std::size_t(c)] = int(e);
      }
  const auto served_side = [&](int c, int member) {
    return serve_of[std::size_t(c)] >= 0 && serves[std::size_t(serve_of[std::size_t(c)])].server == member;
  };

  const auto arrive = [&](int c, std::vector<int>& ready) {
    if (++at_front[std::size_t(c)] == int(schedule.collectives[std::size_t(c)].group.size())) ready.push_back(c);
  };
  const auto front_reached = [&](int rank, std::vector<int>& ready) {
    if (engine[std::size_t(rank)].empty()) return;
    arrive(engine[std::size_t(rank)].front(), ready);
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
        } else if (op.kind == OpKind::serve) {
          ServeState& state = serves[std::size_t(op.serve)];
          const Serve& serve = schedule.serves[std::size_t(op.serve)];
          if (!state.active) {
            state.active = true;
            for (const ServeEntry& e : serve.entries) arrive(e.push, ready);
          }
          if (state.replies_done < serve.entries.size()) break;
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
        if (served_side(c, member)) continue;
        engine[std::size_t(member)].pop_front();
        front_reached(member, ready);
        worklist.push_back(member);
      }
      if (serve_of[std::size_t(c)] < 0) continue;
      ServeState& state = serves[std::size_t(serve_of[std::size_t(c)])];
      const Serve& serve = schedule.serves[std::size_t(serve_of[std::size_t(c)])];
      const ServeEntry& entry = serve.entries[std::size_t(entry_of[std::size_t(c)])];
      if (c == entry.push) {
        ++state.pushes_done;
        if (serve.order == ServeOrder::arrival) arrive(entry.reply, ready);
        else if (state.pushes_done == serve.entries.size())
          for (const ServeEntry& e : serve.entries) arrive(e.reply, ready);
      } else if (++state.replies_done == serve.entries.size()) {
        worklist.push_back(state.server);
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
        if (served_side(c, member)) continue;
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
          const std::string blocked =
              i >= program.ops.size()                  ? std::string("finished its program")
              : program.ops[i].kind == OpKind::serve ? fmt::format("blocked at op {} serving serve {}", i, program.ops[i].serve)
                                                     : fmt::format("blocked at op {} waiting for {}", i,
                                                                   describe(schedule, program.ops[i].collective));
          issues.push_back({rank, -1, fmt::format("deadlock: rank {} waits in {} for rank {}, which has not posted it and is {}",
                                                  rank, describe(schedule, c), member, blocked)});
          return;
        }
      }
    }
    const Program& program = schedule.programs[std::size_t(rank)];
    if (pc[std::size_t(rank)] < program.ops.size()) {
      const Op& op = program.ops[pc[std::size_t(rank)]];
      if (op.kind == OpKind::serve) {
        issues.push_back({rank, int(pc[std::size_t(rank)]),
                          fmt::format("deadlock: serve {} never completes: {} of its {} replies can complete", op.serve,
                                      serves[std::size_t(op.serve)].replies_done,
                                      schedule.serves[std::size_t(op.serve)].entries.size())});
        return;
      }
      issues.push_back({rank, int(pc[std::size_t(rank)]),
                        fmt::format("deadlock: wait for {} can never complete (wait cycle between ranks)",
                                    describe(schedule, op.collective))});
      return;
    }
  }
}

// First op index of `layer` in `program` (for messages), -1 if none.
int first_op_of(const Program& program, int layer) {
  for (std::size_t i = 0; i < program.ops.size(); ++i)
    if (program.ops[i].kind == OpKind::compute && program.ops[i].layer == layer) return int(i);
  return -1;
}

// Ranges of all ranks along one axis tile [0, total): disjoint, gap-free, none empty.
bool tiles(std::vector<Range> ranges, std::int64_t total) {
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::int64_t next = 0;
  for (const Range& r : ranges) {
    if (r.begin != next || r.count <= 0) return false;
    next = r.end();
  }
  return next == total;
}

// What layer l needs of its input (the previous layer's output) to compute its own region:
// a conv/fc layer every input unit, lrn and softmax every unit, other layers their own units.
LayerPartition input_need(const Layer& layer, const LayerPartition& own, std::int64_t input_units) {
  LayerPartition need = own;
  if (layer.has_parameters() || layer.spec.kind == LayerKind::lrn || layer.spec.kind == LayerKind::softmax ||
      layer.spec.kind == LayerKind::concat)  // a concat stacks every unit of each input
    need.units = {0, input_units};
  return need;
}

void check_partitions(const Schedule& schedule, const Network& network, std::vector<VerifyIssue>& issues) {
  const int ranks = schedule.ranks();
  const int L = int(network.layers.size());
  const std::int64_t N = schedule.global_batch;
  for (const Program& program : schedule.programs)
    if (!program.partitions.empty() && int(program.partitions.size()) != L) {
      issues.push_back({program.rank, -1, fmt::format("has {} partitions but network {} has {} layers",
                                                      program.partitions.size(), network.name, L)});
      return;
    }
  if (schedule.programs.front().partitions.empty()) return;  // data parallel throughout
  for (int l = 0; l < L; ++l) {
    const Layer& layer = network.layers[std::size_t(l)];
    const std::int64_t U = layer_units(layer);
    const std::string where = fmt::format("layer {} ({})", l, layer.spec.name);
    // Ranks with a `none` partition take no part; the others must agree on the kind and tile it.
    const LayerPartition* first_holder = nullptr;
    std::vector<Range> batches, units;
    bool batch_full = true, units_full = true;
    for (const Program& program : schedule.programs) {
      const LayerPartition& p = program.partitions[std::size_t(l)];
      if (p.kind == PartitionKind::none) {
        if (p.batch.count != 0 || p.units.count != 0)
          issues.push_back({program.rank, first_op_of(program, l), fmt::format("{}: a none partition holds a region", where)});
        continue;
      }
      if (first_holder == nullptr) first_holder = &p;
      if (p.kind != first_holder->kind)
        issues.push_back({program.rank, first_op_of(program, l),
                          fmt::format("{}: partition {} differs from the other holders' {}", where, to_string(p.kind),
                                      to_string(first_holder->kind))});
      if (p.kind == PartitionKind::model && p.units.count <= 0)
        issues.push_back({program.rank, first_op_of(program, l), fmt::format("{}: the rank's model slice is empty", where)});
      if (!Range{0, N}.contains(p.batch) || !Range{0, U}.contains(p.units))
        issues.push_back({program.rank, first_op_of(program, l),
                          fmt::format("{}: region [{}, {}) × units [{}, {}) lies outside {} images × {} units", where,
                                      p.batch.begin, p.batch.end(), p.units.begin, p.units.end(), N, U)});
      batches.push_back(p.batch);
      units.push_back(p.units);
      batch_full = batch_full && p.batch == Range{0, N};
      units_full = units_full && p.units == Range{0, U};
    }
    if (first_holder == nullptr) {
      issues.push_back({0, -1, fmt::format("{}: no rank holds it", where)});
      continue;
    }
    const bool ok = (batch_full && units_full) || (units_full && tiles(batches, N)) || (batch_full && tiles(units, U));
    if (!ok)
      issues.push_back({0, first_op_of(schedule.programs.front(), l),
                        fmt::format("layer {} ({}): the ranks' partitions do not tile it (each rank a disjoint batch "
                                    "slice, a disjoint unit slice, or all of it)", l, layer.spec.name)});
  }
  if (!issues.empty()) return;

  // Transitions: a layer whose input region is not held by a layer it reads must wait for an
  // activations collective of that layer before its forward ops; a layer it reads whose errors
  // it cannot hand over locally (a model layer's partial sums, or a smaller region) must wait
  // for an errors collective before its backward ops.
  for (const Program& program : schedule.programs) {
    std::vector<char> needs_input(std::size_t(L), 0), needs_errors(std::size_t(L), 0);
    for (int l = 1; l < L; ++l) {
      const LayerPartition& own = program.partitions[std::size_t(l)];
      const Layer& layer = network.layers[std::size_t(l)];
      for (const int read : layer.inputs) {
        if (read < 0) continue;  // the network input, read from the dataset in any region
        const LayerPartition& before = program.partitions[std::size_t(read)];
        const LayerPartition need = input_need(layer, own, layer_units(network.layers[std::size_t(read)]));
        const bool held = before.batch.contains(need.batch) && before.units.contains(need.units);
        needs_input[std::size_t(l)] = needs_input[std::size_t(l)] || (own.kind != PartitionKind::none && !held);
        const bool partial = layer.has_parameters() && own.kind == PartitionKind::model && ranks > 1;
        needs_errors[std::size_t(read)] =
            needs_errors[std::size_t(read)] ||
            (before.kind != PartitionKind::none &&
             (partial || !need.batch.contains(before.batch) || !need.units.contains(before.units)));
      }
    }
    std::vector<char> input_delivered(std::size_t(L), 0), errors_delivered(std::size_t(L), 0);
    std::vector<char> forward_seen(std::size_t(L), 0), backward_seen(std::size_t(L), 0);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
      const Op& op = program.ops[i];
      if (op.kind == OpKind::mark) {
        std::fill(input_delivered.begin(), input_delivered.end(), 0);
        std::fill(errors_delivered.begin(), errors_delivered.end(), 0);
        std::fill(forward_seen.begin(), forward_seen.end(), 0);
        std::fill(backward_seen.begin(), backward_seen.end(), 0);
      } else if (op.kind == OpKind::wait) {
        const Collective& c = schedule.collectives[std::size_t(op.collective)];
        if (c.layers.size() != 1 || c.layers.front() < 0 || c.layers.front() >= L) continue;
        if (c.payload == Payload::activations) input_delivered[std::size_t(c.layers.front())] = 1;
        if (c.payload == Payload::errors) errors_delivered[std::size_t(c.layers.front())] = 1;
      } else if (op.kind == OpKind::compute && op.layer >= 0 && op.layer < L) {
        const std::size_t l = std::size_t(op.layer);
        const LayerPartition& p = program.partitions[l];
        const std::int64_t U = layer_units(network.layers[l]);
        const std::int64_t expected_units = p.units.count == U ? 0 : p.units.count;
        if (p.kind == PartitionKind::none) {
          issues.push_back({program.rank, int(i), fmt::format("{} computes layer {}, which the rank does not hold",
                                                              op.label, network.layers[l].spec.name)});
          continue;
        }
        // An update may cover every row: a master that owns the weights of a split layer.
        const bool whole_update = op.phase == Phase::update && op.units == 0;
        if (op.units != expected_units && !whole_update)
          issues.push_back({program.rank, int(i), fmt::format("{} computes {} units of layer {} but the rank holds {}",
                                                              op.label, op.units == 0 ? U : op.units,
                                                              network.layers[l].spec.name, p.units.count)});
        if (op.phase == Phase::forward && !forward_seen[l]) {
          forward_seen[l] = 1;
          if (needs_input[l] && !input_delivered[l])
            issues.push_back({program.rank, int(i),
                              fmt::format("layer {} needs input the partition of a layer it reads does not hold, and no "
                                          "activations collective of layer {} is waited for before it",
                                          network.layers[l].spec.name, network.layers[l].spec.name)});
        }
        if ((op.phase == Phase::backward_data || op.phase == Phase::backward_weight) && !backward_seen[l] &&
            forward_seen[l]) {
          backward_seen[l] = 1;
          if (needs_errors[l] && !errors_delivered[l])
            issues.push_back({program.rank, int(i),
                              fmt::format("layer {}'s errors come from a layer with another partition, and no errors "
                                          "collective of layer {} is waited for before its backward pass",
                                          network.layers[l].spec.name, network.layers[l].spec.name)});
        }
      }
      if (issues.size() > 16) return;
    }
  }
}

}  // namespace

std::vector<VerifyIssue> verify_partitions(const Schedule& schedule, const Network& network) {
  std::vector<VerifyIssue> issues;
  if (schedule.programs.empty()) return issues;
  check_partitions(schedule, network, issues);
  return issues;
}

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
  check_serves(schedule, issues);
  check_programs(schedule, issues);
  if (issues.empty()) check_deadlock(schedule, issues);  // the replay assumes the static checks hold
  return issues;
}

void verify_or_throw(const Schedule& schedule, const std::string& file, const Network* network) {
  std::vector<VerifyIssue> issues = verify(schedule);
  if (issues.empty() && network != nullptr) issues = verify_partitions(schedule, *network);
  if (issues.empty()) return;
  const VerifyIssue& first = issues.front();
  std::string path = "/";
  if (first.rank >= 0) path = first.op >= 0 ? fmt::format("/programs/{}/ops/{}", first.rank, first.op) : fmt::format("/programs/{}", first.rank);
  const std::string value = first.rank >= 0 ? fmt::format("rank {}{}", first.rank, first.op >= 0 ? fmt::format(" op {}", first.op) : "") : "schedule";
  const std::string more = issues.size() > 1 ? fmt::format(" (and {} more problems)", issues.size() - 1) : "";
  throw InputError(file, path, value, "schedule does not verify: " + first.message + more);
}

}  // namespace cnnpar
