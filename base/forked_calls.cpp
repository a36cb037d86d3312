#include "base/forked_calls.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <stdexcept>

#include "base/pipe_reader.hpp"

namespace cnnpar {

void run_forked_calls(std::size_t count, int width, const std::function<int(std::size_t, int)>& call,
                      const std::function<void(ForkedCall&&)>& ended, const std::function<bool()>& stop) {
  struct Child {
    pid_t pid = -1;
    ForkedCall result;
  };
  std::deque<Child> children;  // stable addresses: the reader's sinks point into them
  PipeReader reader;
  std::size_t running = 0;
  const auto reap = [&](Child& child) {
    while (::waitpid(child.pid, &child.result.wait_status, 0) < 0 && errno == EINTR) {
    }
    --running;
    ended(std::move(child.result));
  };
  std::size_t next = 0;
  try {
    while (next < count || running > 0) {
      while (next < count && running < std::size_t(std::max(1, width)) && !(stop && stop())) {
        int fds[2];
        if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
        std::fflush(nullptr);
        const pid_t pid = ::fork();
        if (pid < 0) {
          ::close(fds[0]);
          ::close(fds[1]);
          throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
        }
        if (pid == 0) {
          ::close(fds[0]);
          const int status = call(next, fds[1]);
          ::close(fds[1]);
          std::fflush(nullptr);
          ::_exit(status);
        }
        ::close(fds[1]);
        Child& child = children.emplace_back();
        child.pid = pid;
        child.result.index = next++;
        ++running;
        reader.add(fds[0], &child.result.bytes, [&reap, &child] { reap(child); });
      }
      if (running == 0) break;  // stopped
      reader.read_some();
    }
  } catch (...) {
    // Do not leave children behind: wait for the ones started (their pipes close as they end).
    while (reader.open_pipes() > 0) {
      try {
        reader.read_some();
      } catch (...) {
        break;
      }
    }
    throw;
  }
}

}  // namespace cnnpar
