#include "sim/analytic/rank_classes.hpp"

#include <cstddef>

namespace cnnpar::analytic {
namespace {

bool same_op(const Op& a, const Op& b) {
  return a.kind == b.kind && a.collective == b.collective && a.iteration == b.iteration && a.layer == b.layer &&
         a.phase == b.phase && a.kernel == b.kernel && a.flops == b.flops && a.bytes == b.bytes &&
         a.batch == b.batch && a.gemm == b.gemm && a.label == b.label && a.serve == b.serve;
}

bool same_ops(const OpList& a, const OpList& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_op(a[i], b[i])) return false;
  return true;
}

}  // namespace

RankClasses find_rank_classes(const Schedule& schedule, const Platform& platform) {
  const int ranks = schedule.ranks();
  if (ranks < 2) return {};
  for (const Collective& c : schedule.collectives) {
    if (int(c.group.size()) != ranks) return {};
    for (int i = 0; i < ranks; ++i)
      if (c.group[std::size_t(i)] != i) return {};
  }
  constexpr std::size_t kMaxClasses = 8;  // beyond that, comparing programs costs more than it saves
  RankClasses classes;
  std::vector<int>& reps = classes.representatives;
  std::vector<int>& of = classes.representative_of;
  of.assign(std::size_t(ranks), -1);
  for (int r = 0; r < ranks; ++r) {
    const auto& ops = schedule.programs[std::size_t(r)].ops;
    const double speed = platform.speed_factor(r);
    const int kind = platform.kind_of(r);
    for (int candidate : reps) {
      const auto& other = schedule.programs[std::size_t(candidate)].ops;
      if (platform.speed_factor(candidate) != speed || platform.kind_of(candidate) != kind) continue;
      if (ops.same_storage(other) || same_ops(ops, other)) {
        of[std::size_t(r)] = candidate;
        break;
      }
    }
    if (of[std::size_t(r)] >= 0) continue;
    if (reps.size() == kMaxClasses) return {};
    reps.push_back(r);
    of[std::size_t(r)] = r;
  }
  if (int(reps.size()) == ranks) return {};
  return classes;
}

}  // namespace cnnpar::analytic
