#pragma once
// Starting another program (gnuplot, mpiexec; ip and tc with their output captured) from
// cnnpar: fork/exec rather than system(), which ignores SIGINT and hides the child's status.
// While the child runs, SIGINT and SIGTERM sent to cnnpar are forwarded to it; once it has
// ended, run_child throws InterruptedError so that callers unwind (removing their temporary
// files) and main() exits with 128 + signal.
// Should cnnpar die without forwarding (SIGKILL), Linux sends the child SIGTERM
// (PR_SET_PDEATHSIG), so an mpiexec never outlives cnnpar.
#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.hpp"

namespace cnnpar {

struct ChildOptions {
  std::string working_directory;  ///< "" = this process's
  bool quiet = false;             ///< child's stdout and stderr to /dev/null
  /** "" = inherited; else the child's stdout and stderr are appended to this file (a log).
   *  @throws std::runtime_error (from run_child) if it cannot be opened. */
  std::string output_file;
  /** > 0: a child still running after this many seconds is sent SIGTERM, and SIGKILL
   *  kKillGrace_s later; run_child then throws ChildTimeLimitError. */
  double time_limit_s = 0;
};

/** Seconds between the SIGTERM and the SIGKILL of a child past its time limit. */
inline constexpr double kKillGrace_s = 10;

/** A child ended by run_child for outliving ChildOptions::time_limit_s. */
class ChildTimeLimitError : public std::runtime_error {
 public:
  explicit ChildTimeLimitError(double limit_s);
  double limit_s() const noexcept { return limit_s_; }

 private:
  double limit_s_;
};

/** Runs `argv` (argv[0] looked up in PATH) and returns its exit status (a child killed by a
 *  signal gives 128 + signal).
 *  @throws std::runtime_error if it cannot be started;
 *  @throws InterruptedError if cnnpar received SIGINT or SIGTERM meanwhile (forwarded);
 *  @throws ChildTimeLimitError if it outlived options.time_limit_s (it has ended). */
int run_child(const std::vector<std::string>& argv, const ChildOptions& options = {});

/** While it lives, SIGINT and SIGTERM wait (blocked on this thread) instead of ending cnnpar
 *  half-way through work that must not be cut (setting up or removing a testbed), and the
 *  children it starts (ip, tc) inherit the block. run_child unblocks them while its child runs
 *  (forwarding them as always); one that waited makes run_child throw InterruptedError without
 *  starting the child. take() consumes one; what is still pending is delivered when it ends.
 *  Create and destroy it on the same thread. */
class DeferredInterrupts {
 public:
  DeferredInterrupts();
  ~DeferredInterrupts();
  DeferredInterrupts(const DeferredInterrupts&) = delete;
  DeferredInterrupts& operator=(const DeferredInterrupts&) = delete;
  /** The SIGINT or SIGTERM that arrived meanwhile, consumed; 0 when none. */
  int take();

 private:
  sigset_t old_mask_;
};

/** What a short helper program (ip, tc) printed, and how it ended. */
struct CapturedOutput {
  int status = 0;      ///< exit status; 128 + signal for a killed child
  std::string out;     ///< its standard output
  std::string err;     ///< its standard error
};

/** Runs `argv` (argv[0] looked up in PATH) with its standard input from /dev/null and returns
 *  its status and both outputs. Signals are not forwarded (the caller decides what SIGINT
 *  means); PR_SET_PDEATHSIG still ends the child should cnnpar die.
 *  @throws std::runtime_error if it cannot be started (status 127 from exec). */
CapturedOutput run_captured(const std::vector<std::string>& argv);

}  // namespace cnnpar
