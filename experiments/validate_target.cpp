#include "experiments/validate_target.hpp"

#include <optional>

#include <fmt/format.h>

#include "base/error.hpp"
#include "launch/launcher.hpp"
#include "testbed/testbed.hpp"

namespace cnnpar {

namespace {

/** Ranks started by a launcher command or a host file; the links are the cluster's own. */
class ClusterTarget : public RunTarget {
 public:
  ClusterTarget(std::string mpiexec, std::string hostfile) : mpiexec_(std::move(mpiexec)), hostfile_(std::move(hostfile)) {
    (void)launch::command(mpiexec_, hostfile_, 1, "cnnpar-run", {});  // refuses a bad launcher or host file now
  }
  void start() override {}
  void set_link(const LinkSetting&) override {}
  std::vector<std::string> command(int ranks, const std::vector<std::string>& program) const override {
    return launch::command(mpiexec_, hostfile_, ranks, program.front(),
                               std::vector<std::string>(program.begin() + 1, program.end()));
  }
  void finish() override {}
  nlohmann::json describe() const override {
    return {{"kind", "cluster"}, {"launcher", mpiexec_}, {"hostfile", hostfile_}};
  }
  double link_burst_bytes() const override { return 0; }

 private:
  std::string mpiexec_, hostfile_;
};

/** The namespace testbed of this machine, one node per rank, every link shaped per setting. */
class TestbedTarget : public RunTarget {
 public:
  TestbedTarget(const ValidationGrid& grid, std::string name, bool keep) : grid_(grid), name_(std::move(name)), keep_(keep) {
    testbed::check_name(name_, "command line", "--testbed");
    testbed::require_root(grid.file, "/bandwidths");
    for (const LinkSetting& link : grid.links)
      if (link.latency_s > 0 && !testbed::netem_available())
        throw InputError(grid.file, fmt::format("/latencies/{}", link.latency_index), link.latency_text,
                         "this kernel has no netem qdisc, so the testbed cannot add latency (its links keep the "
                         "veth's own, about 10 us): give \"native\"");
  }

  void start() override {
    testbed::Spec spec;
    spec.name = name_;
    spec.nodes = grid_.testbed_nodes;
    spec.bandwidth_Bps = bandwidth_of(grid_.links.front());
    spec.latency_s = grid_.links.front().latency_s;
    spec.burst_bytes = grid_.burst_bytes;
    // A testbed of that name that is up already is used as it is (and left up); else one is made.
    const bool exists = testbed::Testbed::attach(name_).has_value();
    session_.emplace(spec, exists ? testbed::Session::IfExists::reuse : testbed::Session::IfExists::replace, keep_);
    if (session_->testbed().spec().nodes < grid_.testbed_nodes)
      throw InputError("command line", "--testbed", name_,
                       fmt::format("testbed {} has {} nodes, the grid's ranks need {} (testbed.nodes)", name_,
                                   session_->testbed().spec().nodes, grid_.testbed_nodes));
  }

  void set_link(const LinkSetting& link) override {
    session_->testbed().reshape(bandwidth_of(link), link.latency_s);
  }

  std::vector<std::string> command(int ranks, const std::vector<std::string>& program) const override {
    std::vector<std::string> out = session_->testbed().launcher();
    out.push_back("-n");
    out.push_back(std::to_string(ranks));
    out.insert(out.end(), program.begin(), program.end());
    return out;
  }

  void finish() override { session_.reset(); }

  double link_burst_bytes() const override { return grid_.burst_bytes; }

  nlohmann::json describe() const override {
    return {{"kind", "testbed"},
            {"name", name_},
            {"nodes", grid_.testbed_nodes},
            {"burst_bytes", grid_.burst_bytes},
            {"netem_available", testbed::netem_available()},
            {"native_bandwidth_Bps", testbed::kMaxBandwidth_Bps},
            {"shaping", "tbf on both ends of every node link (upload and download)"},
            {"tcp_congestion_control", testbed::kTcpCongestionControl},
            {"tcp_slow_start_after_idle", testbed::kTcpSlowStartAfterIdle}};
  }

 private:
  /** "native" on the testbed is its largest rate: the veths unshaped in practice. */
  static double bandwidth_of(const LinkSetting& link) {
    return link.bandwidth_Bps > 0 ? link.bandwidth_Bps : testbed::kMaxBandwidth_Bps;
  }

  const ValidationGrid& grid_;
  std::string name_;
  bool keep_;
  std::optional<testbed::Session> session_;
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
  return std::make_unique<TestbedTarget>(grid, testbed_name, keep);
}

}  // namespace cnnpar
