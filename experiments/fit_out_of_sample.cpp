// A fit checked on what it did not see: leave-one-out refits of every observation, and held-out
// studies predicted with the start and the fitted values.
#include "experiments/fit_out_of_sample.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar {

double mean_abs_error_percent(const std::vector<double>& predicted, const std::vector<double>& observed) {
  if (observed.empty()) return 0;
  double sum = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) sum += std::abs(predicted[i] / observed[i] - 1);
  return 100 * sum / double(observed.size());
}

LeaveOneOut leave_one_out(const PredictFunction& predict, const std::vector<double>& observed,
                          const std::vector<FreeParameter>& free, const std::vector<double>& fitted,
                          const FitOptions& options, const SweepProgress& progress) {
  LeaveOneOut out;
  if (observed.size() <= free.size()) {
    out.skipped = fmt::format("{} observations for {} free parameters: leaving one out leaves fewer observations than "
                              "parameters",
                              observed.size(), free.size());
    return out;
  }
  double sum = 0;
  int counted = 0;
  for (std::size_t i = 0; i < observed.size(); ++i) {
    std::vector<std::size_t> others;
    for (std::size_t k = 0; k < observed.size(); ++k)
      if (k != i) others.push_back(k);
    LeaveOneOut::Row row;
    try {
      row.predicted = fit_parameters(predict, observed, free, fitted, options, others).predicted[i];
      row.relative_error = row.predicted / observed[i] - 1;
      sum += std::abs(row.relative_error);
      ++counted;
    } catch (const FitNotConverged& e) {
      row.converged = false;
      row.failure = e.what();
    } catch (const InputError& e) {  // without it, no observation depends on a parameter
      row.converged = false;
      row.failure = e.reason();
    }
    out.rows.push_back(row);
    if (progress) progress(int(i + 1), int(observed.size()));
  }
  out.mean_abs_error_percent = counted > 0 ? 100 * sum / counted : 0;
  return out;
}

HeldOut predict_held_out(const std::string& study, const Observations& held, const Platform& start, const Platform& fitted,
                         const std::vector<Observation>& seen, bool same_platform) {
  HeldOut out;
  out.study = study;
  out.platform = fitted.name;
  out.observations = held.list();
  out.start_predicted = held.predict(start);
  out.predicted = held.predict(fitted);
  const std::vector<double> observed = held.observed();
  out.start_mean_abs_error_percent = mean_abs_error_percent(out.start_predicted, observed);
  out.mean_abs_error_percent = mean_abs_error_percent(out.predicted, observed);
  std::vector<double> unseen_predicted, unseen_observed;
  for (std::size_t i = 0; i < out.observations.size(); ++i) {
    const bool fitted_on = same_platform && std::any_of(seen.begin(), seen.end(), [&](const Observation& o) {
                             return o.configuration == out.observations[i].configuration;
                           });
    out.fitted_on.push_back(fitted_on);
    if (fitted_on) continue;
    unseen_predicted.push_back(out.predicted[i]);
    unseen_observed.push_back(observed[i]);
  }
  out.unseen = int(unseen_observed.size());
  out.unseen_mean_abs_error_percent = mean_abs_error_percent(unseen_predicted, unseen_observed);
  return out;
}

}  // namespace cnnpar
