#pragma once
// The messages the SimGrid engine sends for one member's collective plan: a step with both a
// send and a receive is one exchange; consecutive such steps alike are sent as one message of
// up to `batch` steps (SimgridOptions::ring_messages). A ring's plans
// differ between members only in the blocks they move, so its messages are computed once per
// collective and shifted to each member.
#include <cstddef>
#include <vector>

#include "system/collective.hpp"

namespace cnnpar::simgrid_engine {

struct StepMessage {
  CollectiveStep step;     ///< the first step it stands for (peers, bytes and reduce of all of them)
  std::size_t steps = 1;   ///< consecutive steps sent as this one message
};

/** `steps` grouped: exchange steps with the same peers, sizes and reduction (a message's
 *  received bytes are all added, or all copied), up to `batch` at a time. */
std::vector<StepMessage> step_messages(const std::vector<CollectiveStep>& steps, int batch);

/** Whether every member's plan of `c` is member 0's with the peers shifted by the member's
 *  position (ring allreduce, reduce_scatter and allgather). */
bool plans_shift_with_member(const Collective& c, Algorithm algorithm);

/** Member 0's messages moved to the member at `position` of a group of `members`: peers shifted
 *  (what plans_shift_with_member allows). */
StepMessage shifted(const StepMessage& message, int position, int members);

}  // namespace cnnpar::simgrid_engine
