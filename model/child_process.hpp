#pragma once
// Starting another program (gnuplot, mpiexec) from cnnpar: fork/exec rather than system(),
// which ignores SIGINT and hides the child's status. While the child runs, SIGINT and SIGTERM
// sent to cnnpar are forwarded to it; once it has ended, run_child throws InterruptedError so
// that callers unwind (removing their temporary files) and main() exits with 128 + signal.
// Should cnnpar die without forwarding (SIGKILL), Linux sends the child SIGTERM
// (PR_SET_PDEATHSIG), so an mpiexec never outlives cnnpar.
#include <string>
#include <vector>

#include "model/error.hpp"

namespace cnnpar {

struct ChildOptions {
  std::string working_directory;  ///< "" = this process's
  bool quiet = false;             ///< child's stdout and stderr to /dev/null
  /** "" = inherited; else the child's stdout and stderr are appended to this file (a log).
   *  @throws std::runtime_error (from run_child) if it cannot be opened. */
  std::string output_file;
};

/** Runs `argv` (argv[0] looked up in PATH) and returns its exit status (a child killed by a
 *  signal gives 128 + signal).
 *  @throws std::runtime_error if it cannot be started;
 *  @throws InterruptedError if cnnpar received SIGINT or SIGTERM meanwhile (forwarded). */
int run_child(const std::vector<std::string>& argv, const ChildOptions& options = {});

}  // namespace cnnpar
