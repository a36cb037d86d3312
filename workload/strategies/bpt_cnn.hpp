#pragma once
// BPT-CNN's closed forms (Chen et al., "A Bi-layered Parallel Training Architecture for
// Large-scale Convolutional Neural Networks", IEEE TPDS), Section 3.3: the incremental data
// partitioning of Eq. 2-6 (Algorithm 3.1), the synchronous and asynchronous global weight
// updates of Eq. 7-10 (Algorithm 3.2) and the parameter server's traffic of Eq. 11. Pure
// functions: the bpt strategy, the engines and the executor build on them.
//
// Notation: N samples, m workers (computing nodes C_1..C_m, here indices 0..m-1), A increments
// (the paper's "batches" of partitioning), K iterations, floor(N/A) the samples of one increment.
//
// Conventions the paper leaves open, fixed here (each is tested in tests/workload/test_bpt_cnn.cpp):
//  - Floors of Eq. 2 and Eq. 5 forgive floating-point rounding: a quotient within 1e-9
//    (relative) of an integer counts as that integer, so 750 computed as 749.9999999999 is 750.
//  - Eq. 5 can ask for a negative n_j^(a) (worker j already holds more than T_a / t̄_j): it is
//    clamped at 0 (no sample is taken back: the paper migrates no data). The paper's T_a (Eq. 3,
//    the arithmetic mean of t̄) makes Σ_j n'_j exceed floor(N/A)·a whenever the t̄_j differ, so
//    the first m-1 workers can also ask for more than floor(N/A) together; then their requests
//    are scaled down in proportion, n_j = floor(request_j · floor(N/A) / Σ requests), and the
//    last worker takes the rest (0 up to m-2 samples of rounding). Every n_j^(a) >= 0 and each
//    increment sums to floor(N/A).
//  - The N mod A samples left over by floor(N/A) are never allocated (the paper's scheme:
//    A · floor(N/A) samples in all).
//  - Eq. 6 rounds A/2 up: K' = K + ceil(A/2) - 1 (see idpa_total_iterations).
//  - Eq. 7 with every accuracy 0: equal weights 1/m.
//  - Eq. 9 at the first merge (latest version i-1 = 0, so k/(i-1) is 0/0): every exponent is 1.
//    With one worker (no other workers, an empty sum): gamma = 1.
//
// Bad input (it comes from the user) throws InputError with file "command line" and path
// "/increments", "/workers", "/workers/J/speed", "/workers/J/per_sample_s" or "/iterations";
// a broken internal assumption (a measured accuracy outside [0, 1], mismatched sizes) is a
// CNNPAR_ASSERT.
#include <cstdint>
#include <span>
#include <vector>

namespace cnnpar::bpt {

/** The InputError file of every check here: these values come from the command line. */
inline constexpr const char* kInputOrigin = "command line";

/** Checks N, A and m for the partitioning functions.
 *  @throws InputError("command line", "/workers", m) for m < 1 or N < m;
 *          InputError("command line", "/increments", A) for A < 1 or A > N ("A beyond the data"). */
void check_partition(std::int64_t samples, int increments, int workers);

/** Eq. 2 (Algorithm 3.1 lines 2-4): the first increment's floor(N/A) samples split by nominal
 *  speed mu_j (> 0, any unit, e.g. GHz): n_j = floor(mu_j / sum(mu) * floor(N/A)) for j < m,
 *  the last worker the rest. Samples. Computed as floor(mu_j * floor(N/A) / sum(mu)).
 *  @throws InputError as check_partition (m = speeds.size()), or ("/workers/J/speed", mu_j) for a
 *          speed that is not a finite number > 0. */
std::vector<std::int64_t> idpa_first_increment(std::int64_t samples, int increments, const std::vector<double>& speeds);

/** Eq. 3-5 (Algorithm 3.1 lines 6-12) for increment a >= 2: per_sample_s[j] = t̄_j (seconds per
 *  sample, > 0, measured), allocated[j] = samples worker j holds before increment a. Returns the new
 *  samples n_j^(a) of increment a: T_a = floor(N/A)*a*mean(t̄)/m (Eq. 3, seconds), n'_j = T_a / t̄_j
 *  (Eq. 4, samples), n_j^(a) = floor(n'_j) - allocated[j] for j < m (Eq. 5), the last worker
 *  floor(N/A) - sum of the others. A negative n_j^(a) is clamped at 0 and over-subscribed requests
 *  are scaled down (see the header comment), so every n_j^(a) >= 0 and they sum to floor(N/A).
 *  @throws InputError as check_partition (m = per_sample_s.size()), or ("/workers/J/per_sample_s",
 *          t̄_j) for a time that is not a finite number > 0.
 *  Asserts 2 <= a <= A, allocated.size() == m, allocated[j] >= 0 and sum(allocated) = (a-1)*floor(N/A). */
std::vector<std::int64_t> idpa_next_increment(std::int64_t samples, int increments, int increment,
                                              const std::vector<double>& per_sample_s,
                                              const std::vector<std::int64_t>& allocated);

/** Algorithm 3.1 run A times: per increment a (0-based index a-1) the samples each worker holds
 *  after it (cumulative), with t̄ fixed for every a >= 2 (the engines' modelled per-sample time, or
 *  the executor's measured one; seconds per sample). Row a-1 sums to a*floor(N/A).
 *  @throws InputError as idpa_first_increment and idpa_next_increment. Asserts
 *          speeds.size() == per_sample_s.size(). */
std::vector<std::vector<std::int64_t>> idpa_allocation(std::int64_t samples, int increments,
                                                       const std::vector<double>& speeds,
                                                       const std::vector<double>& per_sample_s);

/** UDPA: N split uniformly over m workers, the first N % m workers one sample more. Samples.
 *  @throws InputError("command line", "/workers", m) for m < 1 or N < m. */
std::vector<std::int64_t> udpa_allocation(std::int64_t samples, int workers);

/** Eq. 6: total iterations K' = A + ΔK = K + A/2 - 1, ΔK = floor((N*K - N(A+1)/2) / N) =
 *  floor(K - (A+1)/2). For even A that is K + A/2 - 1 exactly; for odd A, (A+1)/2 is an integer
 *  and the floor does nothing, so ΔK = K - (A+1)/2 and K' = K + (A+1)/2 - 1: A/2 is rounded UP,
 *  K' = K + ceil(A/2) - 1 (A = 1 gives K' = K). Iterations.
 *  @throws InputError("command line", "/iterations", K) for K < 1;
 *          InputError("command line", "/increments", A) for A < 1 or A >= K (the paper's A < K). */
int idpa_total_iterations(int iterations, int increments);

/** Eq. 7: each worker's merge weight Q_j / sum(Q) (dimensionless, summing to 1). Q_j is worker j's
 *  measured accuracy, a fraction in [0, 1] (asserted). Every Q_j = 0: equal weights 1/m.
 *  Asserts a non-empty list. */
std::vector<double> sgwu_weights(const std::vector<double>& accuracies);

/** Eq. 8: T_SGWU = sum over iterations i and workers j of (max_j' t_j'^(i) - t_j^(i)), seconds;
 *  iteration_s[i][j] = t_j^(i) (seconds). An empty table waits 0 s. Asserts every row non-empty
 *  and every time finite and >= 0. */
double sgwu_waiting_s(const std::vector<std::vector<double>>& iteration_s);

/** Eq. 9: gamma_j^(k) = e^{k/(i-1)} / sum over the other workers j' of e^{k'/(i-1)}: `base` = k, the
 *  global version the pushed local weights were trained from; `latest` = i-1, the newest global
 *  version; `other_bases` = k' of every other worker (the version each is training from).
 *  Dimensionless. latest == 0 (the first merge, 0/0): every exponent k/(i-1) is taken as 1.
 *  No other workers: gamma = 1. Asserts 0 <= base <= latest and 0 <= k' <= latest. */
double agwu_attenuation(int base, int latest, const std::vector<int>& other_bases);

/** Eq. 10 applied to one weight vector: global += gamma * accuracy * increment, where increment =
 *  W_j^(k) - W^(k) (the worker sends its increment, so the server keeps no old versions).
 *  The product is formed in double and rounded to float once per element.
 *  Asserts equal sizes, gamma finite and >= 0, accuracy in [0, 1]. */
void agwu_merge(std::span<float> global, std::span<const float> increment, double gamma, double accuracy);

/** Eq. 7 applied to increments from a common base: global += sum_j weight_j * increment_j.
 *  Equal to Eq. 7's sum_j weight_j * W_j only when the weights sum to 1 (asserted within 1e-6,
 *  as sgwu_weights gives). Summed in double, rounded to float once per element.
 *  Asserts as many weights as increments (at least one) and every increment global's size. */
void sgwu_merge(std::span<float> global, const std::vector<std::span<const float>>& increments,
                const std::vector<double>& weights);

/** Eq. 11: C = 2 * c_w * m * K (bytes, c_w = the weight set's bytes): every iteration each worker
 *  pushes its weights and pulls the global ones.
 *  @throws InputError("command line", "/workers", m) for m < 1; ("/iterations", K) for K < 0.
 *  Asserts c_w finite and >= 0. */
double ps_volume_bytes(double weight_bytes, int workers, int iterations);

}  // namespace cnnpar::bpt
