#pragma once
// cnnpar-run's options: the flags, and the run-spec JSON (from `cnnpar run`) they may come
// from; flags given as well win.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/common/strategy_flags.hpp"
#include "model/inner_mode.hpp"
#include "workload/run_spec.hpp"

namespace CLI {
class App;
}

namespace cnnpar::executor {


struct Options {
  std::string spec;  // a run-spec JSON (from `cnnpar run`); flags given as well win
  std::string network;
  std::string platform = "local";
  cli::StrategyFlags strategy;
  nlohmann::json spec_strategy_values = nlohmann::json::object();  // the run-spec's strategy options
  std::int64_t batch = 64;
  int iterations = kDefaultMeasuredRunIterations;
  int warmup = 1;
  std::uint64_t seed = 1;
  std::string seed_text = "1";  // parsed by parse_seed (CLI11 would wrap "-1")
  double lr = kDefaultLearningRate;  // the update runs in FP32 (SgdSettings)
  double momentum = kDefaultMomentum;
  double weight_decay = kDefaultWeightDecay;
  std::string dataset = "synthetic";
  std::string compute = "real";
  std::string comm_progress = "poll";
  bool progress = false;  // per-iteration lines on stderr (rank 0); also when stderr is a terminal
  bool quiet = false;
  std::string collectives = "mpi";
  double poll_interval_us = kDefaultPollIntervalUs;
  std::int64_t gemm_tile_columns = -1;  // -1: 4096 when polling, else no split
  int threads = 0;                      // 0: OPENBLAS_NUM_THREADS, else 1
  std::string gemm = kDefaultGemmBackend;
  std::string inner = "gemm";           // conv forward and weight gradient: gemm | dag (BPT-CNN Sec. 4)
  int collective_concurrency = 0;       // 0: the platform's value
  std::string trace;
  std::string weights_out;
  std::string checkpoint;
  int checkpoint_every = 0;  // iterations; 0 = only at the end
  bool resume = false;
  double timeout_s = 60;
  std::vector<std::string> slowdown_texts;  // --slowdown RANK:FACTOR
  Slowdowns slowdown;                       // parsed from them (or the run-spec)
  // calibration
  bool calibrate = false;
  std::string out;
  int repeats = 3;
  double max_message_bytes = 256.0 * 1024 * 1024;
  bool op_seconds = false;
  std::string calibrate_parts = kAllCalibrationParts;
  // test hooks (hidden)
  int debug_stall_rank = -1;
  int debug_exit_rank = -1;
};

/** Registers every flag on `app`, bound to `o` (the order is the --help order). */
void add_options(CLI::App& app, Options& o);

/** Takes what the run-spec says for every option not given as a flag.
 *  @throws InputError naming the spec file, the JSON path and the value. */
void apply_run_spec(const CLI::App& app, Options& o);

/** The numbers with a range (workload/run_spec.hpp), checked before any MPI call uses them
 *  (a --timeout-s of 0 would otherwise end the first collective as a "stall"), and --inner
 *  with its thread count (inner_mode).
 *  @throws InputError("command line", "/flag", value, reason). */
void check_numbers(const CLI::App& app, Options& o);

/** --inner as a mode. @throws InputError naming /inner for an unknown mode, and /threads for
 *  --inner dag with --threads below 1. */
InnerMode inner_mode(const CLI::App& app, const Options& o);

}  // namespace cnnpar::executor
