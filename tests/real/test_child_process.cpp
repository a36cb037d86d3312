// run_child (model/child_process.hpp), the way `cnnpar run` starts mpiexec: exit statuses pass
// through, and a SIGTERM that reaches cnnpar is forwarded to the child and reported as an
// interruption even when the child then exits 0 (hydra's mpiexec may do so).
#include <catch2/catch.hpp>

#include <csignal>

#include "model/child_process.hpp"
#include "model/error.hpp"

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
