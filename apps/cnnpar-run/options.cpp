// cnnpar-run's flags (their order is the --help order), the run-spec they override, and the
// range checks of the numbers.
#include "apps/cnnpar-run/options.hpp"

#include <string>

#include <CLI/CLI.hpp>

#include "apps/common/flags.hpp"
#include "base/error.hpp"
#include "base/json_node.hpp"
#include "real/kernels.hpp"
#include "workload/strategy.hpp"

namespace cnnpar::executor {

using namespace cnnpar::real;

void add_options(CLI::App& app, Options& o) {
  app.description("cnnpar-run: the MPI executor of cnnpar (start it with mpiexec -n P)");
  app.set_version_flag("--version", std::string("cnnpar-run ") + CNNPAR_VERSION);
  app.add_option("--spec", o.spec,
                 "run-spec JSON written by `cnnpar run` (flags given as well override it); without it, --network is "
                 "required");
  cli::flags::network(app, o.network);
  cli::flags::platform(app, o.platform);
  o.strategy.add(app, kMeasuredDefaultStrategy, kExecutorRecomputesColumns);
  cli::flags::batch(app, o.batch);
  cli::flags::iterations(app, o.iterations);
  cli::flags::warmup(app, o.warmup);
  cli::flags::seed(app, o.seed_text);
  cli::flags::learning_rate(app, o.lr);
  cli::flags::momentum(app, o.momentum);
  cli::flags::weight_decay(app, o.weight_decay);
  cli::flags::dataset(app, o.dataset);
  cli::flags::compute(app, o.compute);
  cli::flags::comm_progress(app, o.comm_progress);
  cli::flags::collectives(app, o.collectives);
  cli::flags::poll_interval_us(app, o.poll_interval_us);
  app.add_option("--gemm-tile-columns", o.gemm_tile_columns,
                 "GEMM column tile between polls (0 = no split; default 4096 when polling)");
  cli::flags::threads(app, o.threads);
  cli::flags::gemm(app, o.gemm);
  cli::flags::inner(app, o.inner);
  cli::flags::concurrency(app, o.collective_concurrency);
  cli::flags::trace_out(app, o.trace);
  cli::flags::weights_out(app, o.weights_out);
  cli::flags::checkpoint(app, o.checkpoint);
  cli::flags::checkpoint_every(app, o.checkpoint_every);
  cli::flags::resume(app, o.resume);
  cli::flags::timeout_s(app, o.timeout_s);
  cli::flags::slowdown(app, o.slowdown_texts);
  cli::flags::progress(app, o.progress);
  cli::flags::quiet(app, o.quiet);
  app.add_flag("--calibrate", o.calibrate, "measure this machine and write a platform JSON (--out)");
  app.add_option("--out", o.out, "write the calibrated platform JSON here (with --calibrate)");
  cli::flags::repeats(app, o.repeats);
  cli::flags::max_message(app, o.max_message_bytes);
  cli::flags::op_seconds(app, o.op_seconds);
  cli::flags::calibrate_parts(app, o.calibrate_parts);
  app.add_option("--debug-stall-rank", o.debug_stall_rank)->group("");  // test hook: rank hangs mid-run
  app.add_option("--debug-exit-rank", o.debug_exit_rank)->group("");    // test hook: rank dies mid-run
}

void apply_run_spec(const CLI::App& app, Options& o) {
  if (o.spec.empty()) {
    if (o.network.empty()) throw InputError("command line", "/network", "", "give --network (or --spec FILE)");
    return;
  }
  const RunSpec spec = run_spec_from_json(read_json_file(o.spec), o.spec);
  const auto unset = [&](const char* flag) { return app.count(flag) == 0; };
  if (unset("--network")) o.network = spec.network;
  if (unset("--platform")) o.platform = spec.platform;
  if (unset("--strategy")) o.strategy.set_strategy(spec.strategy.name);
  o.spec_strategy_values = spec.strategy.values;
  if (unset("--batch")) o.batch = spec.strategy.global_batch;
  if (unset("--iterations")) o.iterations = spec.strategy.iterations;
  if (unset("--warmup")) o.warmup = spec.strategy.warmup_iterations;
  if (unset("--seed")) o.seed = spec.seed;
  if (unset("--lr") && spec.learning_rate) o.lr = *spec.learning_rate;
  if (unset("--momentum") && spec.momentum) o.momentum = *spec.momentum;
  if (unset("--weight-decay") && spec.weight_decay) o.weight_decay = *spec.weight_decay;
  if (unset("--dataset")) o.dataset = spec.dataset;
  if (unset("--compute")) o.compute = spec.compute;
  if (unset("--comm-progress")) o.comm_progress = spec.comm_progress;
  if (unset("--progress")) o.progress = spec.progress;
  if (unset("--collectives")) o.collectives = spec.collectives;
  if (unset("--poll-interval-us") && spec.poll_interval_us) o.poll_interval_us = *spec.poll_interval_us;
  if (unset("--timeout-s")) o.timeout_s = spec.timeout_s;
  if (unset("--concurrency")) o.collective_concurrency = int(spec.collective_concurrency);
  if (unset("--trace")) o.trace = spec.trace;
  if (unset("--weights-out")) o.weights_out = spec.weights_out;
  if (unset("--checkpoint")) o.checkpoint = spec.checkpoint;
  if (unset("--checkpoint-every")) o.checkpoint_every = int(spec.checkpoint_every);
  if (unset("--resume")) o.resume = spec.resume;
  if (unset("--threads")) o.threads = int(spec.threads);
  if (unset("--inner")) o.inner = spec.inner;
  if (unset("--slowdown")) o.slowdown = spec.slowdown;
  if (unset("--gemm")) {
    o.gemm = spec.gemm;
    parse_gemm_backend(o.gemm, o.spec, "/gemm");  // a back-end this build lacks: name the spec
  }
  if (!o.strategy.columns_given()) o.strategy.set_recompute_columns(spec.strategy.recompute_columns);
  if (!o.strategy.conv_given()) o.strategy.set_conv(spec.strategy.conv);
}

void check_numbers(const CLI::App& app, Options& o) {
  const std::string file = "command line";
  if (app.count("--seed") > 0) o.seed = parse_seed(o.seed_text, file, "/seed");
  check_run_numbers({o.lr, o.momentum, o.weight_decay, o.timeout_s, o.poll_interval_us,
                     double(o.collective_concurrency), double(o.checkpoint_every), double(o.threads)},
                    file);
  if (app.count("--gemm-tile-columns") > 0)
    check_run_number(RunNumber::gemm_tile_columns, double(o.gemm_tile_columns), file, "/gemm-tile-columns");
  check_run_number(RunNumber::repeats, o.repeats, file, "/repeats");
  if (app.count("--slowdown") > 0) {
    o.slowdown.clear();
    for (const std::string& text : o.slowdown_texts) add_slowdown(o.slowdown, text, file, "/slowdown");
  }
  if (o.batch < 1) throw InputError(file, "/batch", std::to_string(o.batch), "must be an integer >= 1");
  inner_mode(app, o);
}

InnerMode inner_mode(const CLI::App& app, const Options& o) {
  const InnerMode mode = parse_inner_mode(o.inner, "command line", "/inner");
  // 0 means "OPENBLAS_NUM_THREADS, else 1" for the GEMMs; the task graph wants a count.
  if (mode == InnerMode::dag && app.count("--threads") > 0 && o.threads < 1)
    throw InputError("command line", "/threads", std::to_string(o.threads),
                     "--inner dag runs its tasks on --threads threads: give 1 or more");
  return mode;
}

}  // namespace cnnpar::executor
