#include "cli/validate_target.hpp"

#include <fmt/format.h>

#include "cli/mpi_launch.hpp"
#include "model/error.hpp"

namespace cnnpar::cli {

namespace {

/** Ranks started by a launcher command or a host file; the links are the cluster's own. */
class ClusterTarget : public RunTarget {
 public:
  ClusterTarget(std::string mpiexec, std::string hostfile) : mpiexec_(std::move(mpiexec)), hostfile_(std::move(hostfile)) {
    (void)mpi_launch::command(mpiexec_, hostfile_, 1, "cnnpar-run", {});  // refuses a bad launcher or host file now
  }
  void start() override {}
  void set_link(const LinkSetting&) override {}
  std::vector<std::string> command(int ranks, const std::vector<std::string>& program) const override {
    return mpi_launch::command(mpiexec_, hostfile_, ranks, program.front(),
                               std::vector<std::string>(program.begin() + 1, program.end()));
  }
  void finish() override {}
  nlohmann::json describe() const override {
    return {{"kind", "cluster"}, {"launcher", mpiexec_}, {"hostfile", hostfile_}};
  }

 private:
  std::string mpiexec_, hostfile_;
};

}  // namespace

std::unique_ptr<RunTarget> make_run_target(const ValidationGrid& grid, const std::string& mpiexec,
                                           const std::string& hostfile, const std::string& testbed_name, bool keep) {
  if (!mpiexec.empty() || !hostfile.empty()) {
    for (const LinkSetting& link : grid.links) {
      if (link.bandwidth_Bps > 0)
        throw InputError(grid.file, fmt::format("/bandwidths/{}", link.bandwidth_index), link.bandwidth_text,
                         "a cluster's links cannot be shaped: give \"native\" (shaped bandwidths need the testbed: "
                         "run without --mpiexec and --hostfile)");
      if (link.latency_s > 0)
        throw InputError(grid.file, fmt::format("/latencies/{}", link.latency_index), link.latency_text,
                         "a cluster's links cannot be shaped: give \"native\"");
    }
    return std::make_unique<ClusterTarget>(mpiexec.empty() ? "mpiexec" : mpiexec, hostfile);
  }
  (void)testbed_name, (void)keep;
  throw std::runtime_error("the testbed is not built into this cnnpar yet");
}

}  // namespace cnnpar::cli
