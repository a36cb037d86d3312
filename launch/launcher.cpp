#include "launch/launcher.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "testbed/testbed.hpp"

namespace cnnpar::launch {

std::string find_executor() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("CNNPAR_RUN"); env && *env) {
    if (fs::exists(env)) return env;
    throw std::runtime_error(std::string("CNNPAR_RUN names ") + env + ", which does not exist");
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path dir = ec ? fs::current_path() : self.parent_path();
  std::vector<std::string> searched;
  for (const fs::path& candidate : {dir / "cnnpar-run", dir / "bin" / "cnnpar-run", dir / ".." / "bin" / "cnnpar-run",
                                    dir / "real" / "cnnpar-run", dir / ".." / "real" / "cnnpar-run"}) {
    if (fs::exists(candidate)) return fs::weakly_canonical(candidate).string();
    searched.push_back(candidate.string());
  }
  throw std::runtime_error(fmt::format("cannot find cnnpar-run (searched {}); build it with CNNPAR_WITH_MPI=ON or set CNNPAR_RUN",
                                       fmt::join(searched, ", ")));
}

namespace {
/** A Slurm variable holding a whole number >= 1, else empty. */
std::string slurm_count(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0' || std::string(value).find_first_not_of("0123456789") != std::string::npos ||
      std::string(value).size() > 6 || std::atoi(value) < 1)
    return "";
  return value;
}
}  // namespace

std::string default_blas_threads(int ranks) {
  if (const char* set = std::getenv("OPENBLAS_NUM_THREADS"); set && *set) return set;
  std::string value = slurm_count("SLURM_CPUS_PER_TASK");
  if (value.empty()) value = std::to_string(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN) / std::max(1, ranks)));
  ::setenv("OPENBLAS_NUM_THREADS", value.c_str(), 1);
  return value;
}

std::string default_rank_count() {
  const std::string nodes = slurm_count("SLURM_JOB_NUM_NODES");
  return nodes.empty() ? "2" : nodes;
}

std::vector<std::string> split_command(const std::string& text, const std::string& option) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const std::size_t close = text.find('\'', i + 1);
      if (close == std::string::npos) throw InputError("command line", option, text, "unterminated ' quote");
      word += text.substr(i + 1, close - i - 1);
      i = close;
      in_word = true;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() && std::string("\\\"$`").find(text[j + 1]) != std::string::npos) ++j;
        word += text[j];
      }
      if (j >= text.size()) throw InputError("command line", option, text, "unterminated \" quote");
      i = j;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size()) throw InputError("command line", option, text, "a backslash ends the command");
      word += text[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(word);
  if (words.empty()) throw InputError("command line", option, text, "the launcher command is empty");
  return words;
}

std::vector<std::string> command(const std::vector<std::string>& launcher, const std::string& hostfile,
                                        int ranks, const std::string& executor, const std::vector<std::string>& args) {
  std::vector<std::string> out = launcher;
  if (!hostfile.empty()) {
    if (std::filesystem::path(out.front()).filename() == "srun")
      throw InputError("command line", "--hostfile", hostfile,
                       "srun takes its hosts from the Slurm allocation (give srun's --nodelist in --mpiexec instead)");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(hostfile, ec)) throw InputError("command line", "--hostfile", hostfile, "no such file");
    out.push_back("-f");
    out.push_back(hostfile);
  }
  out.push_back("-n");
  out.push_back(std::to_string(ranks));
  out.push_back(executor);
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

std::vector<std::string> command(const std::string& launcher, const std::string& hostfile, int ranks,
                                        const std::string& executor, const std::vector<std::string>& args) {
  return command(split_command(launcher), hostfile, ranks, executor, args);
}

std::vector<std::string> testbed_launcher(const std::string& name, const std::optional<std::string>& mpiexec,
                                                 const std::string& hostfile, int ranks) {
  if (mpiexec)
    throw InputError("command line", "--mpiexec", *mpiexec, "--testbed brings its own mpiexec: give one of the two");
  if (!hostfile.empty())
    throw InputError("command line", "--hostfile", hostfile, "--testbed brings its own host file: give one of the two");
  testbed::check_name(name, "command line", "--testbed");
  testbed::require_root("command line", "--testbed");
  const std::optional<testbed::Testbed> bed = testbed::Testbed::attach(name);
  if (!bed)
    throw InputError("command line", "--testbed", name,
                     "no such testbed (make it with `cnnpar testbed create --name " + name + "`)");
  if (ranks > bed->spec().nodes)
    throw InputError("command line", "--nodes", std::to_string(ranks),
                     "testbed " + name + " has " + std::to_string(bed->spec().nodes) + " nodes, one rank each");
  return bed->launcher();
}

std::vector<std::string> launcher_words(const ExecutorLaunch& launch) {
  if (launch.testbed.empty()) return split_command(launch.mpiexec);
  return testbed_launcher(launch.testbed, launch.mpiexec_given ? std::optional(launch.mpiexec) : std::nullopt,
                          launch.hostfile, launch.ranks);
}

int run_executor(const ExecutorLaunch& launch, const std::vector<std::string>& launcher,
                 const std::vector<std::string>& args, const std::string& who, bool quiet) {
  const std::vector<std::string> argv = command(launcher, launch.hostfile, launch.ranks, find_executor(), args);
  if (launch.threads > 0) ::setenv("OPENBLAS_NUM_THREADS", std::to_string(launch.threads).c_str(), 1);
  std::string shown = "OPENBLAS_NUM_THREADS=" + default_blas_threads(launch.ranks);
  for (const std::string& part : argv) shown += " " + part;
  if (!quiet) fmt::print("{}: {}\n", who, shown);
  std::fflush(stdout);
  return run_child(argv);
}

TemporaryPath::TemporaryPath(const std::string& stem) {
  path_ = (std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(::getpid()) + ".json")).string();
}

TemporaryPath::~TemporaryPath() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace cnnpar::launch
