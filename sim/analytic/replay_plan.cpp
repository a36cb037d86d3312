#include "sim/analytic/replay_plan.hpp"

#include <fmt/format.h>

#include "base/error.hpp"
#include "system/op_time.hpp"

namespace cnnpar::analytic {

ReplayPlan make_replay_plan(const Schedule& schedule, const Platform& platform, ReplayMode mode) {
  if (schedule.ranks() > platform.nodes.count)
    throw InputError(platform.name, "/nodes/count", std::to_string(platform.nodes.count),
                     fmt::format("the schedule needs {} ranks but the platform has only {} nodes", schedule.ranks(),
                                 platform.nodes.count));
  ReplayPlan plan;
  if (mode == ReplayMode::automatic) plan.classes = find_rank_classes(schedule, platform);
  const std::size_t ranks = std::size_t(schedule.ranks());
  plan.op_s.resize(ranks);
  plan.overhead_s.assign(ranks, 0.0);
  plan.op_counts.resize(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    if (!plan.replayed(int(r))) continue;
    plan.overhead_s[r] = iteration_overhead_s(platform, schedule, int(r));
    const auto& ops = schedule.programs[r].ops;
    std::vector<double>& op_s = plan.op_s[r];
    ReplayPlan::OpCounts& counts = plan.op_counts[r];
    op_s.reserve(ops.size());
    for (const Op& op : ops) {
      op_s.push_back(op.kind == OpKind::compute ? op_time_s(platform, op, int(r)) : 0.0);
      counts.computes += op.kind == OpKind::compute;
      counts.posts += op.kind == OpKind::post;
      counts.marks += op.kind == OpKind::mark;
    }
  }
  plan.prices = collective_prices(schedule, platform);
  return plan;
}

}  // namespace cnnpar::analytic
