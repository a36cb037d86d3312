#include "sim/analytic/collective_durations.hpp"

#include "sim/analytic/collective_cost.hpp"
#include "system/collective_algorithm.hpp"
#include "system/device_staging.hpp"

namespace cnnpar::analytic {
namespace {

// What collective_time_s reads of a collective.
bool same_price(const Collective& a, const Collective& b) {
  return a.kind == b.kind && a.bytes == b.bytes && a.root == b.root && a.algorithm == b.algorithm &&
         a.group == b.group;
}

}  // namespace

CollectivePrices collective_prices(const Schedule& schedule, const Platform& platform) {
  const std::vector<Collective>& collectives = schedule.collectives;
  CollectivePrices prices;
  prices.price_of.reserve(collectives.size());
  for (std::size_t c = 0; c < collectives.size(); ++c) {
    const Collective& collective = collectives[c];
    std::size_t price = 0;
    while (price < prices.first_of.size() && !same_price(collectives[prices.first_of[price]], collective)) ++price;
    if (price == prices.first_of.size()) {
      prices.first_of.push_back(c);
      prices.plans.push_back(collective.group.size() <= 1
                                 ? CollectivePlan{}
                                 : plan_collective(collective, resolve_algorithm(collective, platform),
                                                   critical_member(collective)));
    }
    prices.price_of.push_back(price);
  }
  return prices;
}

std::vector<double> collective_durations_s(const Schedule& schedule, const Platform& platform,
                                           const CollectivePrices& prices) {
  std::vector<double> price_s(prices.plans.size());
  for (std::size_t price = 0; price < prices.plans.size(); ++price) {
    const Collective& collective = schedule.collectives[prices.first_of[price]];
    price_s[price] = collective_time_s(collective, prices.plans[price], platform.network, 0.0) +
                     staging_times(collective, platform).total_s();
  }
  std::vector<double> durations_s;
  durations_s.reserve(prices.price_of.size());
  for (std::size_t price : prices.price_of) durations_s.push_back(price_s[price]);
  return durations_s;
}

std::vector<double> collective_durations_s(const Schedule& schedule, const Platform& platform) {
  return collective_durations_s(schedule, platform, collective_prices(schedule, platform));
}

}  // namespace cnnpar::analytic
