#pragma once
// Starting `mpiexec -n P cnnpar-run ...` from `cnnpar run` / `cnnpar calibrate`, or through a
// testbed's launcher (--testbed). cnnpar never links MPI (libsimgrid exports MPI_* symbols), so
// the executor is a separate program found beside the running cnnpar binary. Header-only: used by cmd_run.cpp and
// cmd_calibrate.cpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "testbed/testbed.hpp"

namespace cnnpar::cli::mpi_launch {

/** Path of cnnpar-run: $CNNPAR_RUN, else next to /proc/self/exe (same folder, bin/, ../bin,
 *  real/, ../real). @throws std::runtime_error naming the places searched. */
inline std::string find_executor() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("CNNPAR_RUN"); env && *env) {
    if (fs::exists(env)) return env;
    throw std::runtime_error(std::string("CNNPAR_RUN names ") + env + ", which does not exist");
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  const fs::path dir = ec ? fs::current_path() : self.parent_path();
  std::string searched;
  for (const fs::path& candidate : {dir / "cnnpar-run", dir / "bin" / "cnnpar-run", dir / ".." / "bin" / "cnnpar-run",
                                    dir / "real" / "cnnpar-run", dir / ".." / "real" / "cnnpar-run"}) {
    if (fs::exists(candidate)) return fs::weakly_canonical(candidate).string();
    searched += (searched.empty() ? "" : ", ") + candidate.string();
  }
  throw std::runtime_error("cannot find cnnpar-run (searched " + searched +
                           "); build it with CNNPAR_WITH_MPI=ON or set CNNPAR_RUN");
}

/** When OPENBLAS_NUM_THREADS is unset, sets it for the child to the cores this machine has
 *  per rank (at least 1): P ranks on one host each running all-core BLAS oversubscribe the
 *  cores. Returns the value the child will see. */
inline std::string default_blas_threads(int ranks) {
  if (const char* set = std::getenv("OPENBLAS_NUM_THREADS"); set && *set) return set;
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  const std::string value = std::to_string(std::max(1L, cores / std::max(1, ranks)));
  ::setenv("OPENBLAS_NUM_THREADS", value.c_str(), 1);
  return value;
}

/** Splits a launcher command the way a POSIX shell splits words: blanks separate words,
 *  '...' keeps everything literally, "..." keeps everything but \\, \" and \$ escapes, and a
 *  backslash outside quotes escapes the next character. Nothing is expanded ($VAR, globs).
 *  @throws InputError("command line", option, text, reason) for an unterminated quote or
 *  an empty command. */
inline std::vector<std::string> split_command(const std::string& text, const std::string& option = "--mpiexec") {
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

/** LAUNCHER... [-f HOSTFILE] -n P <cnnpar-run> args..., the launcher given as its words.
 *  @throws InputError for a host file that does not exist, or a host file with srun (Slurm
 *  takes the hosts from the allocation). */
inline std::vector<std::string> command(const std::vector<std::string>& launcher, const std::string& hostfile,
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

/** The same with the launcher as one command line (--mpiexec), split by split_command.
 *  @throws InputError also for a launcher that does not split. */
inline std::vector<std::string> command(const std::string& launcher, const std::string& hostfile, int ranks,
                                        const std::string& executor, const std::vector<std::string>& args) {
  return command(split_command(launcher), hostfile, ranks, executor, args);
}

/** The launcher words of --testbed NAME for `ranks` ranks (one per node).
 *  @throws InputError("command line", FLAG, VALUE, reason) with --mpiexec (`mpiexec`, when
 *  given) or --hostfile given too, when not root, when no testbed NAME exists, or for more
 *  ranks (--nodes) than it has nodes. @throws std::runtime_error for a damaged testbed. */
inline std::vector<std::string> testbed_launcher(const std::string& name, const std::optional<std::string>& mpiexec,
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

/** A file path in the temporary folder, removed when this object goes out of scope. */
class TemporaryPath {
 public:
  explicit TemporaryPath(const std::string& stem) {
    path_ = (std::filesystem::temp_directory_path() / (stem + "-" + std::to_string(::getpid()) + ".json")).string();
  }
  ~TemporaryPath() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace cnnpar::cli::mpi_launch
