#pragma once
// Starting cnnpar-run from `cnnpar` (run, calibrate, validate): under mpiexec, a cluster's
// launcher (srun) or a testbed's. cnnpar never links MPI (libsimgrid exports MPI_* symbols), so
// the executor is a separate program found beside the running cnnpar binary.
#include <optional>
#include <string>
#include <vector>

namespace cnnpar::launch {

/** Path of cnnpar-run: $CNNPAR_RUN, else next to /proc/self/exe (same folder, bin/, ../bin,
 *  real/, ../real). @throws std::runtime_error naming the places searched. */
std::string find_executor();

/** When OPENBLAS_NUM_THREADS is unset, sets it for the child: inside a Slurm allocation to
 *  the CPUs Slurm gives each task (SLURM_CPUS_PER_TASK, when set), else to the cores this
 *  machine has per rank (at least 1): P ranks on one host each running all-core BLAS
 *  oversubscribe the cores. Returns the value the child will see. */
std::string default_blas_threads(int ranks);

/** The default rank count of `cnnpar run` and `cnnpar calibrate`: the allocation's node count
 *  inside a Slurm allocation (SLURM_JOB_NUM_NODES, one rank per node), else 2. */
std::string default_rank_count();

/** Splits a launcher command the way a POSIX shell splits words: blanks separate words,
 *  '...' keeps everything literally, "..." keeps everything but \\, \" and \$ escapes, and a
 *  backslash outside quotes escapes the next character. Nothing is expanded ($VAR, globs).
 *  @throws InputError("command line", option, text, reason) for an unterminated quote or
 *  an empty command. */
std::vector<std::string> split_command(const std::string& text, const std::string& option = "--mpiexec");

/** LAUNCHER... [-f HOSTFILE] -n P <cnnpar-run> args..., the launcher given as its words.
 *  @throws InputError for a host file that does not exist, or a host file with srun (Slurm
 *  takes the hosts from the allocation). */
std::vector<std::string> command(const std::vector<std::string>& launcher, const std::string& hostfile, int ranks,
                                 const std::string& executor, const std::vector<std::string>& args);

/** The same with the launcher as one command line (--mpiexec), split by split_command.
 *  @throws InputError also for a launcher that does not split. */
std::vector<std::string> command(const std::string& launcher, const std::string& hostfile, int ranks,
                                 const std::string& executor, const std::vector<std::string>& args);

/** The launcher words of --testbed NAME for `ranks` ranks (one per node).
 *  @throws InputError("command line", FLAG, VALUE, reason) with --mpiexec (`mpiexec`, when
 *  given) or --hostfile given too, when not root, when no testbed NAME exists, or for more
 *  ranks (--nodes) than it has nodes. @throws std::runtime_error for a damaged testbed. */
std::vector<std::string> testbed_launcher(const std::string& name, const std::optional<std::string>& mpiexec,
                                          const std::string& hostfile, int ranks);

/** Where and how `cnnpar run` and `cnnpar calibrate` start cnnpar-run (their shared flags). */
struct ExecutorLaunch {
  int ranks = 1;
  std::string mpiexec = "mpiexec";
  bool mpiexec_given = false;  ///< --mpiexec on the command line (refused with --testbed)
  std::string hostfile;
  std::string testbed;
  int threads = 0;  ///< BLAS threads per rank; 0 = OPENBLAS_NUM_THREADS, else the cores per rank
};

/** The launcher words: the testbed's, or --mpiexec split. Call it before any work, so bad
 *  input is reported before mpiexec starts. @throws InputError as split_command and
 *  testbed_launcher. */
std::vector<std::string> launcher_words(const ExecutorLaunch& launch);

/** Runs cnnpar-run with `args` through `launcher` on launch.ranks ranks, the BLAS threads set
 *  first; prints "WHO: OPENBLAS_NUM_THREADS=N COMMAND" on standard output unless `quiet`.
 *  Returns cnnpar-run's exit status. @throws InputError for a bad host file; InterruptedError
 *  on SIGINT or SIGTERM (forwarded to the launcher). */
int run_executor(const ExecutorLaunch& launch, const std::vector<std::string>& launcher,
                 const std::vector<std::string>& args, const std::string& who, bool quiet);

/** A file path in the temporary folder, removed when this object goes out of scope. */
class TemporaryPath {
 public:
  explicit TemporaryPath(const std::string& stem);
  ~TemporaryPath();
  TemporaryPath(const TemporaryPath&) = delete;
  TemporaryPath& operator=(const TemporaryPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace cnnpar::launch
