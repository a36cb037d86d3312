#include "real/serve_merge.hpp"

#include <algorithm>

#include "base/error.hpp"
#include "workload/strategies/bpt_cnn.hpp"

namespace cnnpar::real {

std::vector<double> merge_factors(const Serve& serve, const std::vector<int>& entries,
                                  const std::vector<double>& accuracies, const ServeLedger& ledger, int server) {
  CNNPAR_ASSERT(!entries.empty() && entries.size() == accuracies.size(), "one accuracy per merged push");
  if (serve.order == ServeOrder::together) return bpt::sgwu_weights(accuracies);
  const int worker = serve.entries[std::size_t(entries.front())].worker;
  double gamma = serve.gamma;
  if (gamma <= 0) {
    std::vector<int> others, other_bases;
    for (const ServeEntry& e : serve.entries)
      if (e.worker != worker && std::find(others.begin(), others.end(), e.worker) == others.end()) {
        others.push_back(e.worker);
        other_bases.push_back(ledger.base_version(e.worker));
      }
    gamma = bpt::agwu_attenuation(ledger.base_version(worker), ledger.latest_version(server), other_bases);
  }
  return {gamma * accuracies.front()};
}

}  // namespace cnnpar::real
