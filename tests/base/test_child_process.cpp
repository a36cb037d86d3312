// run_captured and DeferredInterrupts (base/child_process.hpp): the ip and tc calls of the
// testbed read their output through run_captured; setting a testbed up defers Ctrl-C.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>

#include <catch2/catch.hpp>

#include "base/child_process.hpp"
#include "base/error.hpp"

using namespace cnnpar;

TEST_CASE("run_captured returns the status and both outputs", "[child]") {
  const CapturedOutput r = run_captured({"sh", "-c", "echo out; echo err >&2; exit 3"});
  CHECK(r.status == 3);
  CHECK(r.out == "out\n");
  CHECK(r.err == "err\n");
  CHECK(run_captured({"sh", "-c", "kill -KILL $$"}).status == 128 + SIGKILL);
  CHECK(run_captured({"sh", "-c", "read line; echo \"[$line]\""}).out == "[]\n");  // stdin is /dev/null
  CHECK_THROWS_AS(run_captured({"/nonexistent/tool"}), std::runtime_error);
}

TEST_CASE("run_captured reads both pipes at once so outputs larger than a pipe do not deadlock", "[child]") {
  // 1 MiB to each stream, stderr first: a reader that drained stdout alone would block for ever
  // while the child blocks on a full stderr pipe (64 KiB on Linux).
  const CapturedOutput r =
      run_captured({"sh", "-c", "head -c 1048576 /dev/zero >&2; head -c 1048576 /dev/zero; exit 0"});
  CHECK(r.status == 0);
  CHECK(r.out.size() == 1048576);
  CHECK(r.err.size() == 1048576);
}

TEST_CASE("DeferredInterrupts holds a SIGTERM until take() consumes it", "[child]") {
  {
    DeferredInterrupts deferred;
    CHECK(deferred.take() == 0);
    ::kill(::getpid(), SIGTERM);  // would end the test process if it were not held
    CHECK(deferred.take() == SIGTERM);
    CHECK(deferred.take() == 0);
  }
  SUCCEED("the process is still alive");
}

TEST_CASE("a SIGINT held by DeferredInterrupts makes the next run_child report an interruption at once", "[child]") {
  DeferredInterrupts deferred;
  ::kill(::getpid(), SIGINT);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_child({"sleep", "20"});
    FAIL("no interruption reported");
  } catch (const InterruptedError& e) {
    CHECK(e.signal() == SIGINT);
  }
  // Not after the child's 20 s (a generous bound for a loaded machine).
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
  CHECK(deferred.take() == 0);  // consumed by run_child, not pending any more
}

TEST_CASE("run_child ends a child past its time limit with SIGTERM, then SIGKILL", "[child]") {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  ChildOptions options;
  options.time_limit_s = 0.5;
  // Within the limit: its status, as without one.
  CHECK(run_child({"sh", "-c", "exit 3"}, options) == 3);

  // sleep ends at SIGTERM: the error comes after the limit, long before the child's 30 s.
  Clock::time_point start = Clock::now();
  CHECK_THROWS_AS(run_child({"sleep", "30"}, options), ChildTimeLimitError);
  double took_s = seconds_since(start);
  INFO("ended after " << took_s << " s");
  CHECK(took_s >= options.time_limit_s);
  CHECK(took_s < options.time_limit_s + kKillGrace_s);

  // A child that ignores SIGTERM (an ignored signal stays ignored across exec) is killed
  // kKillGrace_s later: expected 0.5 + 10 s, bounded above by the child's own 30 s.
  start = Clock::now();
  CHECK_THROWS_AS(run_child({"sh", "-c", "trap '' TERM; exec sleep 30"}, options), ChildTimeLimitError);
  took_s = seconds_since(start);
  INFO("killed after " << took_s << " s");
  CHECK(took_s >= options.time_limit_s + kKillGrace_s);
  CHECK(took_s < 25);
}
