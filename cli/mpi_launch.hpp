#pragma once
// Starting `mpiexec -n P cnnpar-run ...` from `cnnpar run` / `cnnpar calibrate`. cnnpar never
// links MPI (libsimgrid exports MPI_* symbols; FINDINGS.md), so the executor is a separate
// program found beside the running cnnpar binary. Header-only: used by cmd_run.cpp and
// cmd_calibrate.cpp.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

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

/** "mpiexec -n P <cnnpar-run> args..." with `mpiexec` split on spaces (e.g. "srun --mpi=pmi2"
 *  is not supported: pass a plain launcher path and use --mpiexec-arg for extras). */
inline std::vector<std::string> command(const std::string& mpiexec, const std::vector<std::string>& mpiexec_args,
                                        int ranks, const std::string& executor, const std::vector<std::string>& args) {
  std::vector<std::string> out{mpiexec};
  out.insert(out.end(), mpiexec_args.begin(), mpiexec_args.end());
  out.push_back("-n");
  out.push_back(std::to_string(ranks));
  out.push_back(executor);
  out.insert(out.end(), args.begin(), args.end());
  return out;
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
