#pragma once
// What the param_server strategy decides before it emits ops, for the engines' and the
// executor's use and for tests: the server, the workers and each worker's samples per round.
#include <cstdint>
#include <vector>

#include "model/network.hpp"
#include "model/platform.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::strategies {

/** Images of the per-sample probe (at most the workers' share of the batch). */
inline constexpr std::int64_t kProbeSamples = 8;

struct ServerPlan {
  int server = 0;
  std::vector<int> workers;  ///< every other rank, ascending
  int rounds = 0;            ///< rounds of push and pull (Eq. 6's K' with IDPA)
  /** Samples each worker holds, cumulative, per increment (IDPA: A rows; UDPA: one row); the
   *  last row is the worker's partition. Indexed [row][worker index]. */
  std::vector<std::vector<std::int64_t>> samples;
  std::vector<std::int64_t> offsets;  ///< per worker: its partition's first image of the global batch
  std::vector<double> per_sample_s;   ///< IDPA's t̄_j (seconds per sample), per worker; empty for UDPA

  /** Samples worker index `worker` trains in round `round` (0-based). */
  std::int64_t samples_in_round(int worker, int round) const;
};

/** @throws InputError as the strategy's validate (origin options.origin), and ("/batch", N) when
 *  IDPA leaves a worker no sample. */
ServerPlan param_server_plan(const Network& network, const Platform& platform, const StrategyOptions& options);

/** Eq. 2's nominal speed mu_j of `rank`: its node's peak FLOP/s times its speed factor. */
double nominal_speed(const Platform& platform, int rank);

/** The engines' per-sample time of `rank`: the modelled seconds of one training step (forward,
 *  backward and update of every layer) at `batch` images, divided by `batch`. */
double engine_per_sample_s(const Network& network, const Platform& platform, std::int64_t batch, int rank);

}  // namespace cnnpar::strategies
