#include "sim/simgrid/simgrid_engine.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/forked_calls.hpp"
#include "sim/simgrid/sg_replay.hpp"
#include "sim/simgrid/sg_trace.hpp"

namespace cnnpar {

namespace {

using simgrid_engine::flatten_times;
using simgrid_engine::simulate_here;
using simgrid_engine::trace_skeleton;
using simgrid_engine::unflatten_times;

// What a child writes to its pipe: one tag byte per record.
//   'P'                         the platform was built or loaded
//   'T' u64 count, count × f64  the trace's times (flatten_times order)
//   'X' string                  the whole trace as JSON (a schedule with parameter servers,
//                               whose merge records are made as the pushes arrive)
//   'J' string                  the job's summary (EngineJob::summarize), as JSON text
//   'I' 4 × string              InputError (file, path, value, reason)
//   'F' string                  any other failure
// A string is a u32 length and its bytes.
constexpr char kPlatformReady = 'P', kTimes = 'T', kTraceJson = 'X', kSummary = 'J', kInputError = 'I', kFailure = 'F';

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

/** A child's body: `simulate` writes its result record; failures become records too.
 *  Returns the child's exit status. */
int child_body(int fd, const std::function<void(const std::function<void()>& platform_ready)>& simulate) {
  try {
    simulate([fd] { write_all(fd, &kPlatformReady, 1); });
    return 0;
  } catch (const InputError& e) {
    write_all(fd, &kInputError, 1);
    for (const std::string* s : {&e.file(), &e.json_path(), &e.value(), &e.reason()}) write_string(fd, *s);
    return 2;
  } catch (const std::exception& e) {
    write_all(fd, &kFailure, 1);
    write_string(fd, e.what());
    return 1;
  }
}

/** Parses what a child wrote. */
class ChildReport {
 public:
  explicit ChildReport(const std::string& bytes) : bytes_(bytes) {}

  /** Fills `trace` (a skeleton) from a 'T' record, or replaces it by an 'X' record's, or
   *  throws the child's error. */
  void apply(Trace& trace, const SimgridOptions& options, int wait_status) {
    if (next_result(options, wait_status, {kTimes, kTraceJson}) == kTraceJson) {
      trace = trace_from_json(nlohmann::json::parse(string()), "<SimGrid child>");
      return;
    }
    std::uint64_t count = 0;
    read(&count, sizeof count);
    std::vector<double> times(count);
    read(times.data(), count * sizeof(double));
    if (!unflatten_times(times, trace)) throw InternalError("SimGrid child returned a trace of the wrong shape");
    simgrid_engine::annotate(trace, options);
  }

  /** The summary of a 'J' record, or throws the child's error. */
  nlohmann::json summary(const SimgridOptions& options, int wait_status) {
    next_result(options, wait_status, {kSummary});
    return nlohmann::json::parse(string());
  }

 private:
  /** Skips to a result record of one of the `expected` tags and returns its tag; throws what
   *  the child reported instead. */
  char next_result(const SimgridOptions& options, int wait_status, std::initializer_list<char> expected) {
    bool platform_ready = false;
    while (pos_ < bytes_.size()) {
      const char tag = bytes_[pos_++];
      if (tag == kPlatformReady) {
        platform_ready = true;
      } else if (std::find(expected.begin(), expected.end(), tag) != expected.end()) {
        return tag;
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

void check_options(const SimgridOptions& options) {
  if (options.network_model != "CM02" && options.network_model != "LV08")
    throw InputError("<options>", "/network_model", options.network_model,
                     "SimGrid network model must be CM02 or LV08");
}

int cores() {
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? int(online) : 1;
}

/** Whole traces of schedules built here, one forked child each, `width` at once. */
std::vector<Trace> run_forked(const std::vector<std::pair<const Schedule*, const Platform*>>& jobs,
                              const SimgridOptions& options, int width, const std::function<void(int, int)>& progress) {
  std::vector<std::optional<Trace>> results(jobs.size());
  std::vector<std::exception_ptr> errors(jobs.size());
  int done = 0;
  run_forked_calls(
      jobs.size(), width,
      [&](std::size_t j, int fd) {
        return child_body(fd, [&](const std::function<void()>& platform_ready) {
          const Trace trace = simulate_here(*jobs[j].first, *jobs[j].second, options, platform_ready);
          if (!jobs[j].first->serves.empty()) {
            write_all(fd, &kTraceJson, 1);
            write_string(fd, to_json(trace).dump());
            return;
          }
          const std::vector<double> times = flatten_times(trace);
          const auto count = std::uint64_t(times.size());
          write_all(fd, &kTimes, 1);
          write_all(fd, &count, sizeof count);
          write_all(fd, times.data(), times.size() * sizeof(double));
        });
      },
      [&](ForkedCall&& call) {
        const auto& [schedule, platform] = jobs[call.index];
        try {
          Trace trace = trace_skeleton(*schedule, *platform);
          ChildReport(call.bytes).apply(trace, options, call.wait_status);
          results[call.index] = std::move(trace);
        } catch (...) {
          errors[call.index] = std::current_exception();
        }
        if (progress) progress(++done, int(jobs.size()));
      });
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
    return std::move(run_forked({{&schedule, &platform}}, options_, 1, {}).front());
  }

  /** Each job builds, simulates and summarises in its own forked child. */
  std::vector<nlohmann::json> run_all(const std::vector<EngineJob>& jobs, const BatchOptions& batch) override {
    BatchLedger ledger(jobs.size(), batch);
    run_forked_calls(
        jobs.size(), ledger.workers(),
        [&](std::size_t j, int fd) {
          return child_body(fd, [&](const std::function<void()>& platform_ready) {
            const EngineJob& job = jobs[j];
            const std::shared_ptr<const Schedule> schedule = job.schedule();
            const std::string summary = job.summarize(simulate_here(*schedule, *job.platform, options_, platform_ready)).dump();
            write_all(fd, &kSummary, 1);
            write_string(fd, summary);
          });
        },
        [&](ForkedCall&& call) {
          try {
            ledger.succeeded(call.index, ChildReport(call.bytes).summary(options_, call.wait_status));
          } catch (...) {
            ledger.failed(call.index, std::current_exception());
          }
        },
        [&] { return ledger.stopping(); });
    return ledger.finish();
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
  return run_forked(jobs, options, cores(), progress);
}

}  // namespace cnnpar
