// The launcher command of `cnnpar run` / `cnnpar calibrate` (--mpiexec) is split into words the
// way a POSIX shell splits them; /bin/sh itself is the reference.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "base/error.hpp"
#include "launch/launcher.hpp"

namespace {

// The words /bin/sh makes of `text` (printf prints each argument on its own line, ending in '|'
// so that empty words and trailing blanks show).
std::vector<std::string> shell_words(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  const std::string command = "sh -c 'eval \"set -- $1\"; printf \"%s|\\n\" \"$@\"' sh " + quoted;
  std::FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  REQUIRE(WEXITSTATUS(::pclose(pipe)) == 0);
  std::vector<std::string> words;
  std::size_t start = 0;
  for (std::size_t end; (end = output.find("|\n", start)) != std::string::npos; start = end + 2)
    words.push_back(output.substr(start, end - start));
  return words;
}

}  // namespace

TEST_CASE("a launcher command splits into the words /bin/sh makes of it", "[cli][launcher]") {
  for (const std::string text : {"mpiexec", "srun --mpi=pmi2", "  mpiexec   -f hosts  ", "mpiexec -f 'my hosts'",
                                 "mpiexec -genv X \"a b\"", "a\\ b c", "'x\"y'", "\"a\\\"b\"", "\"a\\\\b\"",
                                 "\"a\\nb\"", "x''y", "'' z", "\"$HOME\"x"}) {
    INFO(text);
    // $ is the one difference by design: cnnpar expands nothing.
    if (text.find('$') != std::string::npos) {
      CHECK(cnnpar::launch::split_command(text) == std::vector<std::string>{"$HOMEx"});
      continue;
    }
    CHECK(cnnpar::launch::split_command(text) == shell_words(text));
  }
}

TEST_CASE("a launcher command that does not split is bad input naming --mpiexec", "[cli][launcher]") {
  for (const std::string text : {"", "   ", "mpiexec 'open", "mpiexec \"open", "mpiexec \\"}) {
    INFO(text);
    CHECK_THROWS_AS(cnnpar::launch::split_command(text), cnnpar::InputError);
  }
  CHECK_THROWS_WITH(cnnpar::launch::split_command("srun 'x"), Catch::Contains("--mpiexec"));
}

TEST_CASE("the command appends the host file, -n P and the executor", "[cli][launcher]") {
  using cnnpar::launch::command;
  CHECK(command("srun --mpi=pmi2", "", 4, "/bin/cnnpar-run", {"--spec", "s.json"}) ==
        std::vector<std::string>{"srun", "--mpi=pmi2", "-n", "4", "/bin/cnnpar-run", "--spec", "s.json"});
  CHECK(command("mpiexec", "/etc/hostname", 2, "x", {}) ==
        std::vector<std::string>{"mpiexec", "-f", "/etc/hostname", "-n", "2", "x"});
  CHECK_THROWS_WITH(command("/usr/bin/srun", "/etc/hostname", 2, "x", {}), Catch::Contains("Slurm allocation"));
  CHECK_THROWS_WITH(command("mpiexec", "/nonexistent/hosts", 2, "x", {}), Catch::Contains("--hostfile"));
}

namespace {
/** Sets (or with nullptr unsets) an environment variable for one scope. */
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) ::setenv(name_.c_str(), old_.c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};
}  // namespace

TEST_CASE("inside a Slurm allocation the ranks and threads default to the allocation's", "[cli][launcher]") {
  using cnnpar::launch::default_blas_threads;
  using cnnpar::launch::default_rank_count;
  const ScopedEnv no_blas("OPENBLAS_NUM_THREADS", nullptr);
  {
    const ScopedEnv nodes("SLURM_JOB_NUM_NODES", "4"), cpus("SLURM_CPUS_PER_TASK", "3");
    CHECK(default_rank_count() == "4");
    CHECK(default_blas_threads(4) == "3");  // the task's CPUs, not this machine's cores / 4
    CHECK(std::string(std::getenv("OPENBLAS_NUM_THREADS")) == "3");
  }
  ::unsetenv("OPENBLAS_NUM_THREADS");
  for (const char* junk : {"", "0", "two", "-1", "4x"}) {
    INFO(junk);
    const ScopedEnv nodes("SLURM_JOB_NUM_NODES", junk), cpus("SLURM_CPUS_PER_TASK", junk);
    CHECK(default_rank_count() == "2");
    // Not Slurm's: this machine's cores over the ranks, at least 1.
    const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    CHECK(default_blas_threads(1) == std::to_string(std::max(1L, cores)));
    ::unsetenv("OPENBLAS_NUM_THREADS");
  }
  const ScopedEnv outside("SLURM_JOB_NUM_NODES", nullptr);
  CHECK(default_rank_count() == "2");
}
