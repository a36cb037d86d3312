// cnnpar-run, the MPI executor mpiexec/srun starts: MPI and signal set-up, the options, then
// training or --calibrate. Exit status: 0 ok, 1 failure (incl. a stalled or dead rank), 2 bad
// input.
#include <sys/prctl.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "apps/cnnpar-run/calibration.hpp"
#include "apps/cnnpar-run/failure.hpp"
#include "apps/cnnpar-run/finalize.hpp"
#include "apps/cnnpar-run/options.hpp"
#include "apps/cnnpar-run/training.hpp"
#include "apps/common/strategy_flags.hpp"
#include "base/error.hpp"
#include "base/freed_memory.hpp"
#include "base/output_files.hpp"
#include "real/mpi_wrap.hpp"

namespace {

using namespace cnnpar;
using namespace cnnpar::real;
using namespace cnnpar::executor;

/** SIGINT/SIGTERM: remove the temporary file of an output being written, then die of the
 *  signal as without a handler (mpiexec reports it and ends the other ranks). Outputs are
 *  renamed into place, so none is ever half-written. */
extern "C" void on_terminate_signal(int signal) {
  remove_pending_temporary();
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

bool wants_thread_multiple(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--comm-progress=thread") == 0) return true;
    if (std::strcmp(argv[i], "--comm-progress") == 0 && i + 1 < argc && std::strcmp(argv[i + 1], "thread") == 0) return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  // Sleeps (sleep compute, polling, the communication thread) end when asked, not up to the
  // default 50 us timer slack later (threads inherit it). Measured: 65-86 us late -> 15-36 us.
  ::prctl(PR_SET_TIMERSLACK, 1UL);
  // What the set-up and the start-up probes free returns to the system, instead of staying in
  // the heap once glibc's sliding threshold has grown past it. Measured on resnet-18-32, batch
  // 64: 30 MB less peak memory. Once set up, freed_memory_once_set_up (setup.hpp) decides.
  set_freed_memory(FreedMemory::returned);
  std::unique_ptr<mpi::Environment> environment;
  try {
    environment = std::make_unique<mpi::Environment>(&argc, &argv, wants_thread_multiple(argc, argv));
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnnpar-run: {}\n", e.what());
    return 1;
  }
  // After MPI_Init, so these handlers are the ones that stay.
  struct sigaction terminate {};
  terminate.sa_handler = on_terminate_signal;
  sigemptyset(&terminate.sa_mask);
  ::sigaction(SIGINT, &terminate, nullptr);
  ::sigaction(SIGTERM, &terminate, nullptr);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  Options options;
  CLI::App app;
  cli::set_one_line_failure_message(app, "cnnpar-run");
  add_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Every rank sees the same arguments, so every rank stops here; rank 0 speaks.
    if (rank == 0) app.exit(e);
    return e.get_exit_code() == 0 ? 0 : 2;
  }
  try {
    apply_run_spec(app, options);
    check_numbers(app, options);
  } catch (const InputError& e) {
    // Every rank reads the same spec and fails alike; rank 0 speaks.
    if (rank == 0) fmt::print(stderr, "cnnpar-run: {}\n", e.what());
    return 2;
  }

  try {
    const int status = options.calibrate ? run_calibration(options, rank, size, app.count("--max-message") > 0) : run_training(options, rank, size);
    if (status == 0) finish_after_final_barrier(std::move(environment), rank, options.timeout_s);
    return status;
  } catch (const std::exception& e) {
    // After set-up a failure is local to this rank: say which, and take the job down so no
    // rank is left waiting in a collective.
    const int status = status_of(std::current_exception());
    const std::string message = e.what();
    if (message.rfind("rank ", 0) == 0) {  // stall and timeout messages already name the rank
      fmt::print(stderr, "cnnpar-run: {}\n", message);
    } else {
      fmt::print(stderr, "cnnpar-run: rank {}: {}\n", rank, message);
    }
    mpi::abort_world(status);
  }
}
