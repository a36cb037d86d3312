#pragma once
// What the real executor (cnnpar-run --compute real) can train, known below the apps, so that
// `cnnpar run` and `cnnpar calibrate` refuse a network before they start mpiexec.
#include <string>

#include "model/network.hpp"

namespace cnnpar {

/** Refuses a network the executor cannot train with real kernels: a ceil-mode average pool; conv,
 *  pool, batchnorm, add or concat on an fc layer's (n, K) rows; softmax not last, or a softmax
 *  without an fc layer before it (the loss needs (n, classes) logits). Sleep-compute runs take
 *  any network.
 *  @throws InputError(file, "/layers/I", layer name or kind, reason). */
void check_executor_network(const Network& network, const std::string& file);

}  // namespace cnnpar
