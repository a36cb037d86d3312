#pragma once
// The factors a parameter server's merge applies to each merged increment, the same for the MPI
// serve loop and the in-process replay (real/local_executor.hpp), so a run and its replay merge
// alike: gamma·Q_j (Eq. 10) for a push merged on arrival, Q_j/ΣQ (Eq. 7) for a round merged
// together.
#include <vector>

#include "model/schedule.hpp"
#include "system/serve_ledger.hpp"

namespace cnnpar::real {

/** Factors of the merge of `entries` (Serve::entries indices, as ServeLedger::begin_merge gave
 *  them) with the pushes' accuracies Q_j (in the same order, each in [0, 1]) on `server`. Eq. 9's
 *  gamma when the serve's gamma is 0 (from the versions in `ledger`), else the fixed one. */
std::vector<double> merge_factors(const Serve& serve, const std::vector<int>& entries,
                                  const std::vector<double>& accuracies, const ServeLedger& ledger, int server);

}  // namespace cnnpar::real
