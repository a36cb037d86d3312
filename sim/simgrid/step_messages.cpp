#include "sim/simgrid/step_messages.hpp"

namespace cnnpar::simgrid_engine {

std::vector<StepMessage> step_messages(const std::vector<CollectiveStep>& steps, int batch) {
  std::vector<StepMessage> messages;
  for (std::size_t k = 0; k < steps.size();) {
    const CollectiveStep& step = steps[k];
    std::size_t g = 1;
    if (step.send_to >= 0 && step.receive_from >= 0)
      while (g < std::size_t(batch) && k + g < steps.size() && steps[k + g].send_to == step.send_to &&
             steps[k + g].receive_from == step.receive_from && steps[k + g].send_bytes == step.send_bytes &&
             steps[k + g].receive_bytes == step.receive_bytes && steps[k + g].reduce == step.reduce)
        ++g;
    messages.push_back({.step = step, .steps = g});
    k += g;
  }
  return messages;
}

bool plans_shift_with_member(const Collective& c, Algorithm algorithm) {
  const bool ring_kind = c.kind == CollectiveKind::allreduce || c.kind == CollectiveKind::reduce_scatter ||
                         c.kind == CollectiveKind::allgather;
  return algorithm == Algorithm::ring && ring_kind;
}

StepMessage shifted(const StepMessage& message, int position, int members) {
  StepMessage moved = message;
  if (moved.step.send_to >= 0) moved.step.send_to = (moved.step.send_to + position) % members;
  if (moved.step.receive_from >= 0) moved.step.receive_from = (moved.step.receive_from + position) % members;
  return moved;
}

}  // namespace cnnpar::simgrid_engine
