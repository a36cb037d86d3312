// run_child (base/child_process.hpp), the way `cnnpar run` starts mpiexec: exit statuses pass
// through, and a SIGTERM that reaches cnnpar is forwarded to the child and reported as an
// interruption even when the child then exits 0 (hydra's mpiexec may do so).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "base/child_process.hpp"
#include "base/error.hpp"

using namespace cnnpar;

TEST_CASE("run_child: the child's exit status, and 128 + signal for a killed child") {
  CHECK(run_child({"sh", "-c", "exit 3"}) == 3);
  CHECK(run_child({"sh", "-c", "kill -KILL $$"}) == 128 + SIGKILL);
}

TEST_CASE("run_child: SIGTERM to the parent reaches the child and is an interruption though it exits 0") {
  // The child signals its parent (this test), waits for the forwarded SIGTERM and exits 0 on it.
  const std::vector<std::string> child = {
      "sh", "-c", "trap 'echo forwarded; exit 0' TERM; kill -TERM $PPID; i=0; "
                  "while [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done; exit 7"};
  try {
    run_child(child);
    FAIL("no interruption reported");
  } catch (const InterruptedError& e) {
    CHECK(e.signal() == SIGTERM);
  }
  // The handlers are restored: the next child runs normally.
  CHECK(run_child({"sh", "-c", "exit 0"}) == 0);
}

TEST_CASE("run_child: output_file collects the child's stdout and stderr, appended") {
  const std::string log = (std::filesystem::temp_directory_path() / ("cnnpar-child-log-" + std::to_string(::getpid()))).string();
  std::filesystem::remove(log);
  ChildOptions options;
  options.output_file = log;
  CHECK(run_child({"sh", "-c", "echo out; echo err >&2"}, options) == 0);
  CHECK(run_child({"sh", "-c", "echo again; exit 4"}, options) == 4);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "out\nerr\nagain\n");
  std::filesystem::remove(log);
  // A log that cannot be opened is told with its path before anything starts.
  options.output_file = "/nonexistent-folder/log";
  CHECK_THROWS_WITH(run_child({"true"}, options), Catch::Contains("cannot write the log /nonexistent-folder/log"));
}
