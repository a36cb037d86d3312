#pragma once
// Runs one member's point-to-point steps of the collective layer (system/collective.hpp) on
// real FP32 buffers, without MPI: the local executor exchanges the steps' messages in
// process, the MPI interpreter's plain send/recv mode (`--collectives p2p`) with
// MPI_Isend/MPI_Irecv. Both get the kind's result in the posted buffers (real/interpreter.hpp
// CommBuffers conventions) by the algorithm the engines priced.
#include <cstdint>
#include <span>
#include <vector>

#include "model/schedule.hpp"
#include "system/collective.hpp"

namespace cnnpar::real {

class StepRunner {
 public:
  /** Member `member` (group index) of `collective` with its posted buffers (counts in FP32
   *  elements as collective_counts() gives them). Fills the work vector from `send`. */
  StepRunner(const Collective& collective, Algorithm algorithm, int member, float* send, float* recv,
             std::int64_t send_count, std::int64_t recv_count);

  const CollectivePlan& plan() const { return plan_; }
  std::size_t steps() const { return plan_.steps.size(); }
  /** Elements step k sends (empty when it sends nothing); valid until apply(k). */
  std::span<const float> outgoing(std::size_t k) const;
  /** Where step k's message lands first (a scratch buffer of the right size). */
  std::span<float> incoming(std::size_t k);
  /** After step k's message arrived in incoming(k): copies or adds it into its span. */
  void apply(std::size_t k);
  /** After the last step: the result into the posted receive buffer. */
  void finish();

 private:
  float* buffer(StepBuffer which) const;
  std::int64_t elements(StepBuffer which) const;
  Range range(const BlockSpan& span, StepBuffer which) const;

  const Collective& c_;
  int member_;
  int root_rel_ = 0;  // member's root-relative index (gather, scatter)
  CollectivePlan plan_;
  float* send_;
  float* recv_;
  std::int64_t send_count_, recv_count_;
  std::vector<float> work_storage_;  // when the work vector is not the receive buffer
  float* work_ = nullptr;
  std::int64_t work_count_ = 0;
  std::vector<float> scratch_;
};

/** Runs every member's steps in one process, round by round (a member's next step runs when
 *  its peers' matching steps are next too); the messages of a round are read before any of
 *  them lands. The reference for the MPI executor's p2p mode. */
void run_steps_in_process(std::vector<StepRunner>& members);

}  // namespace cnnpar::real
