#pragma once
// `cnnpar-run --calibrate`: measures this machine and writes a platform JSON that the
// analytic and SimGrid engines accept (docs/formats.md, "calibration" section):
//  * the sgemm rate (FLOP/s) of every GEMM shape of the network's schedule;
//  * the seconds of every compute op label of that schedule on one rank (real kernels);
//  * point-to-point latency and bandwidth from a ping-pong between ranks 0 and 1 over
//    8 B .. 64 MiB, fitted as t(n) = latency + n / bandwidth (one way);
//  * allreduce times over sizes (printed and returned, for the report).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "model/network.hpp"
#include "model/platform.hpp"

namespace cnnpar::real {

/** Least-squares fit of one-way times t(n) = latency_s + n / bandwidth_Bps. */
struct LinkFit {
  double latency_s = 0;
  double bandwidth_Bps = 0;
};
/** `samples` are (bytes, one-way seconds); needs two distinct sizes. Latency is clamped at
 *  >= 0. @throws std::invalid_argument for fewer than two distinct sizes or a slope <= 0. */
LinkFit fit_link(const std::vector<std::pair<double, double>>& samples);

struct CalibrateOptions {
  std::int64_t batch = 64;            ///< global batch of the calibrated schedule (one rank)
  std::uint64_t seed = 1;
  int repeats = 3;                    ///< timed repetitions per op (fastest kept: noise only adds time)
  double max_message_bytes = 64.0 * 1024 * 1024;
  double timeout_s = 60;
  std::string origin = "command line";  ///< for InputError
};

struct CalibrationResult {
  Platform platform;  ///< the base platform with calibration, network and count filled in
  std::vector<std::pair<double, double>> ping_pong;  ///< (bytes, one-way seconds), rank 0
  std::vector<std::pair<double, double>> allreduce;  ///< (bytes, seconds), max over ranks
};

/** Collective over `comm`: every rank takes part in the network measurements; rank 0 times
 *  the compute ops and GEMMs (the others wait at a barrier). The result is complete on
 *  rank 0 only. */
CalibrationResult calibrate(const Network& network, const Platform& base, const CalibrateOptions& options,
                            MPI_Comm comm);

}  // namespace cnnpar::real
