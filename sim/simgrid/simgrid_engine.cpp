#include "sim/simgrid/simgrid_engine.hpp"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "sim/simgrid/sg_replay.hpp"

namespace cnnpar {

namespace {

using simgrid_engine::flatten_times;
using simgrid_engine::simulate_here;
using simgrid_engine::trace_skeleton;
using simgrid_engine::unflatten_times;

// What a child writes to its pipe: one tag byte per record.
//   'P'                         the platform was built or loaded
//   'T' u64 count, count × f64  the trace's times (flatten_times order)
//   'I' 4 × string              InputError (file, path, value, reason)
//   'F' string                  any other failure
// A string is a u32 length and its bytes.
constexpr char kPlatformReady = 'P', kTimes = 'T', kInputError = 'I', kFailure = 'F';

void write_all(int fd, const void* data, std::size_t size) {
  const char* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;  // the parent is gone; nothing useful left to do
    }
    bytes += written;
    size -= std::size_t(written);
  }
}

void write_string(int fd, const std::string& text) {
  const auto length = std::uint32_t(text.size());
  write_all(fd, &length, sizeof length);
  write_all(fd, text.data(), text.size());
}

/** Body of a forked child: simulate, write the outcome to `fd`, never return. */
[[noreturn]] void run_child(int fd, const Schedule& schedule, const Platform& platform,
                            const SimgridOptions& options) {
  int status = 0;
  try {
    const Trace trace = simulate_here(schedule, platform, options, [fd] { write_all(fd, &kPlatformReady, 1); });
    const std::vector<double> times = flatten_times(trace);
    const auto count = std::uint64_t(times.size());
    write_all(fd, &kTimes, 1);
    write_all(fd, &count, sizeof count);
    write_all(fd, times.data(), times.size() * sizeof(double));
  } catch (const InputError& e) {
    write_all(fd, &kInputError, 1);
    for (const std::string* s : {&e.file(), &e.json_path(), &e.value(), &e.reason()}) write_string(fd, *s);
    status = 2;
  } catch (const std::exception& e) {
    write_all(fd, &kFailure, 1);
    write_string(fd, e.what());
    status = 1;
  }
  ::close(fd);
  std::fflush(nullptr);
  ::_exit(status);  // skip atexit handlers and static destructors inherited from the parent
}

/** Parses what a child wrote. */
class ChildReport {
 public:
  explicit ChildReport(const std::string& bytes) : bytes_(bytes) {}

  /** Fills `trace` (a skeleton) or throws the child's error. */
  void apply(Trace& trace, const SimgridOptions& options, int wait_status) {
    bool platform_ready = false;
    while (pos_ < bytes_.size()) {
      const char tag = bytes_[pos_++];
      if (tag == kPlatformReady) {
        platform_ready = true;
      } else if (tag == kTimes) {
        std::uint64_t count = 0;
        read(&count, sizeof count);
        std::vector<double> times(count);
        read(times.data(), count * sizeof(double));
        if (!unflatten_times(times, trace))
          throw InternalError("SimGrid child returned a trace of the wrong shape");
        simgrid_engine::annotate(trace, options);
        return;
      } else if (tag == kInputError) {
        std::string file = string(), path = string(), value = string(), reason = string();
        throw InputError(std::move(file), std::move(path), std::move(value), std::move(reason));
      } else if (tag == kFailure) {
        throw std::runtime_error("SimGrid simulation failed: " + string());
      } else {
        throw InternalError("SimGrid child wrote an unknown record");
      }
    }
    // No result: the child died (SimGrid aborts on some inputs instead of throwing).
    const std::string how = WIFSIGNALED(wait_status) ? fmt::format("was killed by signal {} ({})",
                                                                   WTERMSIG(wait_status),
                                                                   strsignal(WTERMSIG(wait_status)))
                                                     : fmt::format("exited with status {}", WEXITSTATUS(wait_status));
    if (!platform_ready && !options.platform_xml.empty())
      throw InputError(options.platform_xml, "", options.platform_xml,
                       "SimGrid could not load this platform file (the simulation " + how +
                           "; SimGrid's message is above)");
    if (!platform_ready)
      throw InputError("<platform>", "/network", "", "SimGrid could not build this platform (the simulation " +
                                                         how + "; SimGrid's message is above)");
    throw std::runtime_error("the SimGrid simulation " + how + " before returning its trace");
  }

 private:
  void read(void* out, std::size_t size) {
    if (bytes_.size() - pos_ < size) throw InternalError("SimGrid child's report is truncated");
    std::memcpy(out, bytes_.data() + pos_, size);
    pos_ += size;
  }
  std::string string() {
    std::uint32_t length = 0;
    read(&length, sizeof length);
    if (bytes_.size() - pos_ < length) throw InternalError("SimGrid child's report is truncated");
    std::string text = bytes_.substr(pos_, length);
    pos_ += length;
    return text;
  }
  const std::string& bytes_;
  std::size_t pos_ = 0;
};

struct Child {
  pid_t pid = -1;
  int fd = -1;
  std::size_t job = 0;
  std::string bytes;
};

Child start_child(std::size_t job, const Schedule& schedule, const Platform& platform,
                  const SimgridOptions& options) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error(fmt::format("pipe() failed: {}", std::strerror(errno)));
  std::fflush(nullptr);  // or buffered output would be written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw std::runtime_error(fmt::format("fork() failed: {}", std::strerror(errno)));
  }
  if (pid == 0) {
    ::close(fds[0]);
    run_child(fds[1], schedule, platform, options);
  }
  ::close(fds[1]);
  return Child{pid, fds[0], job, {}};
}

void check_options(const SimgridOptions& options) {
  if (options.network_model != "CM02" && options.network_model != "LV08")
    throw InputError("<options>", "/network_model", options.network_model,
                     "SimGrid network model must be CM02 or LV08");
}

int parallel_children() {
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return cores > 0 ? int(cores) : 1;
}

std::vector<Trace> run_forked(const std::vector<std::pair<const Schedule*, const Platform*>>& jobs,
                              const SimgridOptions& options, const std::function<void(int, int)>& progress) {
  std::vector<std::optional<Trace>> results(jobs.size());
  std::vector<std::exception_ptr> errors(jobs.size());
  std::deque<Child> running;
  std::size_t next = 0;
  int done = 0;
  const std::size_t width = std::size_t(parallel_children());
  while (next < jobs.size() || !running.empty()) {
    while (next < jobs.size() && running.size() < width) {
      running.push_back(start_child(next, *jobs[next].first, *jobs[next].second, options));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const Child& child : running) fds.push_back(pollfd{child.fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("poll() failed: {}", std::strerror(errno)));
    }
    for (std::size_t k = fds.size(); k-- > 0;) {
      if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& child = running[k];
      char buffer[65536];
      const ssize_t got = ::read(child.fd, buffer, sizeof buffer);
      if (got > 0) {
        child.bytes.append(buffer, std::size_t(got));
        continue;
      }
      if (got < 0 && errno == EINTR) continue;
      ::close(child.fd);
      int status = 0;
      while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
      }
      const auto& [schedule, platform] = jobs[child.job];
      try {
        Trace trace = trace_skeleton(*schedule, *platform);
        ChildReport(child.bytes).apply(trace, options, status);
        results[child.job] = std::move(trace);
      } catch (...) {
        errors[child.job] = std::current_exception();
      }
      running.erase(running.begin() + std::ptrdiff_t(k));
      ++done;
      if (progress) progress(done, int(jobs.size()));
    }
  }
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
  std::vector<Trace> traces;
  traces.reserve(jobs.size());
  for (auto& result : results) traces.push_back(std::move(*result));
  return traces;
}

class SimgridEngine final : public Engine {
 public:
  explicit SimgridEngine(SimgridOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "simgrid"; }
  Trace run(const Schedule& schedule, const Platform& platform) override {
    if (!options_.fork_per_run) return simulate_here(schedule, platform, options_);
    return std::move(run_forked({{&schedule, &platform}}, options_, {}).front());
  }

 private:
  SimgridOptions options_;
};

}  // namespace

std::unique_ptr<Engine> make_simgrid_engine(const SimgridOptions& options) {
  check_options(options);
  return std::make_unique<SimgridEngine>(options);
}

std::vector<Trace> simulate_many(const std::vector<std::pair<const Schedule*, const Platform*>>& jobs,
                                 const SimgridOptions& options, std::function<void(int done, int total)> progress) {
  check_options(options);
  if (!options.fork_per_run && jobs.size() == 1) {
    std::vector<Trace> traces;
    traces.push_back(simulate_here(*jobs[0].first, *jobs[0].second, options));
    if (progress) progress(1, 1);
    return traces;
  }
  return run_forked(jobs, options, progress);
}

}  // namespace cnnpar
