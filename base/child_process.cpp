#include "base/child_process.hpp"

#include <fcntl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "base/pipe_reader.hpp"

namespace cnnpar {

namespace {

std::atomic<pid_t> g_child{0};
std::atomic<int> g_received{0};

extern "C" void forward_signal(int signal) {
  g_received.store(signal);
  const pid_t child = g_child.load();
  if (child > 0) ::kill(child, signal);
}

std::vector<char*> exec_arguments(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  return args;
}

// In the forked child, before exec.
void end_with_parent(pid_t parent) {
#ifdef __linux__
  // If cnnpar dies without forwarding (SIGKILL, crash), the child still gets SIGTERM: mpiexec
  // then ends its ranks instead of running on as orphans. The callers block the calling
  // thread until the child ends, so that thread (whose exit would also fire this) outlives it.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) std::_Exit(128 + SIGTERM);  // cnnpar died before prctl
#endif
}

[[noreturn]] void exec_or_exit(const std::vector<char*>& args) {
  ::execvp(args[0], args.data());
  // stdio, not fmt: nothing between fork and exec allocates (another thread may hold malloc's lock).
  std::fprintf(stderr, "cnnpar: cannot start %s: %s\n", args[0], std::strerror(errno));
  std::_Exit(127);
}

/** A waitpid status as a shell tells it: the exit status, or 128 + the signal that ended it. */
int shell_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  return shell_status(status);
}

/** wait_status with a bound: past `limit_s` the child is sent SIGTERM, and SIGKILL
 *  kKillGrace_s later. `ended` tells whether the bound ended it. */
int wait_status_within(pid_t pid, double limit_s, bool& ended) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const auto since_start_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  ended = false;
  bool killed = false;
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done < 0 && errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    if (done == pid) return shell_status(status);
    if (!ended && since_start_s() >= limit_s) {
      ended = true;
      ::kill(pid, SIGTERM);
    } else if (ended && !killed && since_start_s() >= limit_s + kKillGrace_s) {
      killed = true;
      ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the child's end is noticed this late at most
  }
}

}  // namespace

ChildTimeLimitError::ChildTimeLimitError(double limit_s)
    : std::runtime_error(fmt::format("still running after its time limit of {:.3g} s: ended", limit_s)), limit_s_(limit_s) {}

DeferredInterrupts::DeferredInterrupts() {
  sigset_t interrupts;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  ::pthread_sigmask(SIG_BLOCK, &interrupts, &old_mask_);
}

DeferredInterrupts::~DeferredInterrupts() { ::pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr); }

int DeferredInterrupts::take() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return 0;
  for (const int signal : {SIGINT, SIGTERM}) {
    if (sigismember(&pending, signal) != 1) continue;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, signal);
    const timespec now{0, 0};
    if (::sigtimedwait(&one, nullptr, &now) == signal) return signal;
  }
  return 0;
}

int run_child(const std::vector<std::string>& argv, const ChildOptions& options) {
  CNNPAR_ASSERT(!argv.empty(), "run_child needs a program");
  const std::vector<char*> args = exec_arguments(argv);
  std::fflush(stdout);
  std::fflush(stderr);
  // The log is opened here, so a failure is told with its reason rather than as a child status.
  int log = -1;
  if (!options.quiet && !options.output_file.empty()) {
    log = ::open(options.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0) throw std::runtime_error("cannot write the log " + options.output_file + ": " + std::strerror(errno));
  }
  const auto close_log = [&] {
    if (log >= 0) ::close(log);
  };

  struct sigaction forward {}, old_int {}, old_term {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  g_received.store(0);
  ::sigaction(SIGINT, &forward, &old_int);
  ::sigaction(SIGTERM, &forward, &old_term);
  // Deliverable while the child runs, also under DeferredInterrupts: one that waited is
  // delivered here, before the fork, and ends the child at once.
  sigset_t interrupts, old_mask;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  ::pthread_sigmask(SIG_UNBLOCK, &interrupts, &old_mask);
  const auto restore = [&] {
    ::pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);  // before the old handlers return
    g_child.store(0);
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
  };

  if (const int waited = g_received.load(); waited != 0) {  // held by DeferredInterrupts: no child at all
    restore();
    throw InterruptedError(waited);
  }
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    restore();
    close_log();
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    // One that reached the inherited handler before the reset (the parent forwards it as soon
    // as it knows the pid) ends the child here.
    if (const int early = g_received.load(); early != 0) std::_Exit(128 + early);
    end_with_parent(parent);
    if (!options.working_directory.empty() && ::chdir(options.working_directory.c_str()) != 0) std::_Exit(127);
    const int out = options.quiet ? ::open("/dev/null", O_WRONLY) : log;
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    exec_or_exit(args);
  }
  close_log();
  g_child.store(pid);
  if (const int early = g_received.load(); early != 0) ::kill(pid, early);  // arrived before the pid was known
  int status = 0;
  bool past_limit = false;
  try {
    status = options.time_limit_s > 0 ? wait_status_within(pid, options.time_limit_s, past_limit) : wait_status(pid);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  if (const int signal = g_received.load(); signal != 0) throw InterruptedError(signal);
  if (past_limit) throw ChildTimeLimitError(options.time_limit_s);
  if (status == 127) throw std::runtime_error("cannot start " + argv[0]);
  return status;
}

CapturedOutput run_captured(const std::vector<std::string>& argv) {
  CNNPAR_ASSERT(!argv.empty(), "run_captured needs a program");
  const std::vector<char*> args = exec_arguments(argv);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    end_with_parent(parent);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);  // dup2 clears O_CLOEXEC on the copies
    ::dup2(err_pipe[1], STDERR_FILENO);
    exec_or_exit(args);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  CapturedOutput result;
  PipeReader reader;
  reader.add(out_pipe[0], &result.out);
  reader.add(err_pipe[0], &result.err);
  while (reader.read_some()) {
  }
  result.status = wait_status(pid);
  if (result.status == 127 && result.err.find("cannot start") != std::string::npos)
    throw std::runtime_error("cannot start " + argv[0]);
  return result;
}

}  // namespace cnnpar
