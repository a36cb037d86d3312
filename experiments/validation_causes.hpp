#pragma once
// Internal to the validation: every cause of a miss, in order, for reading a cause back from a
// result file and for counting each cause in the summary.
#include "experiments/validation_diagnosis.hpp"

namespace cnnpar::detail {

inline constexpr MissCause kCauses[] = {MissCause::none,     MissCause::compute,       MissCause::effective_bandwidth,
                                        MissCause::latency,  MissCause::progress,      MissCause::tcp_behaviour,
                                        MissCause::contention};

}  // namespace cnnpar::detail
