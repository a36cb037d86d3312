#pragma once
// The loss of a measured run against time: the real executor records the global mean loss of
// every iteration (metadata.loss; under a parameter server, of every round over the images its
// workers' rounds saw), the Trace the time each rank reached the iteration's end. Time per
// iteration alone cannot compare SGWU with AGWU, whose numerics differ: time to reach a loss
// can. The engines predict no loss, so a predicted trace's time to a loss is the predicted end
// of the iteration at which the measured run reached it.
#include <optional>
#include <vector>

#include "model/trace.hpp"

namespace cnnpar {

struct LossPoint {
  int iteration = 0;
  double end_s = 0;  ///< the last worker's mark of the iteration (s since the trace's start)
  double loss = 0;   ///< global mean cross-entropy (nats)
};

/** One point per iteration of `measured` (metadata.loss), ended at the latest mark of that
 *  iteration over the ranks that are no server. Empty when the trace has no loss. */
std::vector<LossPoint> loss_curve(const Trace& measured);

/** The first point whose loss is at most `target_loss`, if any. */
std::optional<LossPoint> first_reaching(const std::vector<LossPoint>& curve, double target_loss);

/** The latest mark of `iteration` over the ranks of `trace` that are no server (s), or none
 *  when no rank reached it. */
std::optional<double> iteration_end_s(const Trace& trace, int iteration);

}  // namespace cnnpar
