#include "model/child_process.hpp"

#include <fcntl.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace cnnpar {

namespace {

std::atomic<pid_t> g_child{0};
std::atomic<int> g_received{0};

extern "C" void forward_signal(int signal) {
  g_received.store(signal);
  const pid_t child = g_child.load();
  if (child > 0) ::kill(child, signal);
}

}  // namespace

int run_child(const std::vector<std::string>& argv, const ChildOptions& options) {
  CNNPAR_ASSERT(!argv.empty(), "run_child needs a program");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
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
  const auto restore = [&] {
    g_child.store(0);
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
  };

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
#ifdef __linux__
    // If cnnpar dies without forwarding (SIGKILL, crash), the child still gets SIGTERM: mpiexec
    // then ends its ranks instead of running on as orphans. run_child blocks the calling
    // thread until the child ends, so that thread (whose exit would also fire this) outlives it.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) std::_Exit(128 + SIGTERM);  // cnnpar died before prctl
#endif
    if (!options.working_directory.empty() && ::chdir(options.working_directory.c_str()) != 0) std::_Exit(127);
    const int out = options.quiet ? ::open("/dev/null", O_WRONLY) : log;
    if (out >= 0) {
      ::dup2(out, STDOUT_FILENO);
      ::dup2(out, STDERR_FILENO);
    }
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cnnpar: cannot start %s: %s\n", args[0], std::strerror(errno));
    std::_Exit(127);
  }
  close_log();
  g_child.store(pid);
  if (const int early = g_received.load(); early != 0) ::kill(pid, early);  // arrived before the pid was known
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      restore();
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
  }
  restore();
  if (const int signal = g_received.load(); signal != 0) throw InterruptedError(signal);
  if (WIFEXITED(status)) {
    if (WEXITSTATUS(status) == 127) throw std::runtime_error("cannot start " + argv[0]);
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace cnnpar
