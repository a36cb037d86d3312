// The SimGrid engine's messages for a collective plan: batched steps never mix added and
// copied blocks, and a ring's messages computed once for member 0 and shifted are each
// member's own (the engine plans rings once per collective).
#include <catch2/catch.hpp>

#include "sim/simgrid/step_messages.hpp"
#include "system/collective.hpp"

using namespace cnnpar;
using namespace cnnpar::simgrid_engine;

namespace {

Collective ring_collective(CollectiveKind kind, int members, double bytes) {
  Collective c;
  c.id = 0;
  c.kind = kind;
  c.bytes = bytes;
  for (int r = 0; r < members; ++r) c.group.push_back(r);
  return c;
}

}  // namespace

TEST_CASE("batched steps stop where added blocks turn into copied ones", "[simgrid][messages]") {
  // A 4-member ring allreduce: 3 reduce-scatter steps (added), then 3 allgather steps (copied),
  // all of n/P bytes between the same peers. Batches of 2: [2 added] [1 added] [2 copied] [1 copied].
  const Collective c = ring_collective(CollectiveKind::allreduce, 4, 8e6);
  const CollectivePlan plan = plan_collective(c, Algorithm::ring, 0);
  REQUIRE(plan.steps.size() == 6);
  const std::vector<StepMessage> messages = step_messages(plan.steps, 2);
  REQUIRE(messages.size() == 4);
  const std::size_t expected_steps[] = {2, 1, 2, 1};
  const bool expected_reduce[] = {true, true, false, false};
  for (std::size_t m = 0; m < messages.size(); ++m) {
    INFO("message " << m);
    CHECK(messages[m].steps == expected_steps[m]);
    CHECK(messages[m].step.reduce == expected_reduce[m]);
    CHECK(messages[m].step.send_bytes == 2e6);
  }
  // Batch 1 (or 0 messages per ring): every step its own message.
  CHECK(step_messages(plan.steps, 1).size() == 6);
}

TEST_CASE("a ring's messages shifted from member 0 are every member's own", "[simgrid][messages]") {
  for (const CollectiveKind kind :
       {CollectiveKind::allreduce, CollectiveKind::reduce_scatter, CollectiveKind::allgather}) {
    const int members = 7;
    const Collective c = ring_collective(kind, members, 7.7e6);
    REQUIRE(plans_shift_with_member(c, Algorithm::ring));
    for (const int batch : {1, 3, 64}) {
      const std::vector<StepMessage> first = step_messages(plan_collective(c, Algorithm::ring, 0).steps, batch);
      for (int member = 0; member < members; ++member) {
        INFO(to_string(kind) << ", batch " << batch << ", member " << member);
        const std::vector<StepMessage> own = step_messages(plan_collective(c, Algorithm::ring, member).steps, batch);
        REQUIRE(own.size() == first.size());
        for (std::size_t m = 0; m < own.size(); ++m) {
          const StepMessage moved = shifted(first[m], member, members);
          CHECK(moved.steps == own[m].steps);
          CHECK(moved.step.send_to == own[m].step.send_to);
          CHECK(moved.step.receive_from == own[m].step.receive_from);
          CHECK(moved.step.send_bytes == own[m].step.send_bytes);
          CHECK(moved.step.receive_bytes == own[m].step.receive_bytes);
          CHECK(moved.step.reduce == own[m].step.reduce);
        }
      }
    }
  }
}

TEST_CASE("trees and recursive doubling are planned per member", "[simgrid][messages]") {
  CHECK_FALSE(plans_shift_with_member(ring_collective(CollectiveKind::bcast, 8, 1e6), Algorithm::binomial));
  CHECK_FALSE(
      plans_shift_with_member(ring_collective(CollectiveKind::allreduce, 8, 1e6), Algorithm::recursive_doubling));
}
