// SimGrid platforms: topologies, XML files, contention, and bad platform input.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "base/error.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "tests/simgrid/fixtures.hpp"

using namespace cnnpar;
using test::latest_end_s;
using test::single_collective;

namespace {

constexpr double kRelTol = 1e-4;  // SimGrid's solver precision, see test_simgrid_collectives
constexpr double kBeta = 1.25e9;

/** A file in a fresh temporary directory, removed with it. */
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& content) {
    char pattern[] = "/tmp/cnnpar-sg-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    path_ = dir_ + "/" + name;
    std::ofstream(path_) << content;
  }
  ~TempFile() { std::filesystem::remove_all(dir_); }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

Platform with_topology(Platform platform, Topology topology) {
  platform.network.topology = topology;
  return platform;
}

/** Two 2-rank allreduces run at once by disjoint rank pairs {a0, a1} and {b0, b1}. */
Schedule two_pairs(int ranks, int a0, int a1, int b0, int b1, double bytes) {
  Schedule schedule = test::empty_schedule(ranks);
  const int a = test::add(schedule, CollectiveKind::allreduce, bytes, {a0, a1}, -1, Algorithm::ring);
  const int b = test::add(schedule, CollectiveKind::allreduce, bytes, {b0, b1}, -1, Algorithm::ring);
  for (Program& program : schedule.programs) {
    const int r = program.rank;
    if (r == a0 || r == a1) program.ops = {Op::post_op(a), Op::wait_op(a)};
    if (r == b0 || r == b1) program.ops = {Op::post_op(b), Op::wait_op(b)};
    program.ops.push_back(Op::mark_op(0));
  }
  return schedule;
}

double mark_s(const Trace& trace) {
  double latest = 0;
  for (const RankTrace& rank : trace.ranks) latest = std::max(latest, rank.marks.at(0).time_s);
  return latest;
}

}  // namespace

TEST_CASE("contention on an oversubscribed fat-tree uplink shows in SimGrid, not in the analytic engine",
          "[simgrid][contention]") {
  // "2;4,2;1,1;1,1": 4 nodes per leaf switch, 2 leaf switches, ONE uplink per leaf switch
  // (4:1 oversubscribed). Pairs {0,4} and {1,5} both cross leaf 0's uplink in each direction,
  // so each gets β/2: a 2-rank ring allreduce of n bytes takes n/(β/2) instead of n/β.
  // Latency 0 keeps the comparison to the bandwidth term.
  Platform platform = test::crossbar(8, 0, 0);
  platform.network.topology = Topology::fat_tree;
  platform.network.fat_tree = "2;4,2;1,1;1,1";
  const double n = 200e6;
  const double contention_free = n / kBeta;  // 2(P-1)/P · n/β with P = 2: 0.16 s

  const Schedule crossing = two_pairs(8, 0, 4, 1, 5, n);
  const Trace simgrid = make_simgrid_engine()->run(crossing, platform);
  CHECK(mark_s(simgrid) == Approx(2 * contention_free).epsilon(kRelTol));  // 0.32 s
  const Trace analytic = make_analytic_engine()->run(crossing, platform);
  CHECK(mark_s(analytic) == Approx(contention_free).epsilon(kRelTol));     // 0.16 s

  // Control: pairs under one leaf switch ({0,1} and {2,3}) never touch the uplink.
  const Trace local = make_simgrid_engine()->run(two_pairs(8, 0, 1, 2, 3, n), platform);
  CHECK(mark_s(local) == Approx(contention_free).epsilon(kRelTol));
}

TEST_CASE("torus links are shared by collectives whose routes overlap", "[simgrid][contention]") {
  // 1-D torus of 4 nodes, ring 0-1-2-3-0. Pairs {0,2} and {1,3} route over two hops each
  // (dimension-order routing goes the same way round), sharing links: slower than n/β.
  Platform platform = test::crossbar(4, 0, 0);
  platform.network.topology = Topology::torus;
  platform.network.torus = "4";
  const double n = 100e6;
  const Trace alone = make_simgrid_engine()->run(single_collective(2, CollectiveKind::allreduce, n), platform);
  CHECK(mark_s(alone) == Approx(n / kBeta).epsilon(kRelTol));  // neighbours 0-1: 0.08 s
  const Trace crossing = make_simgrid_engine()->run(two_pairs(4, 0, 2, 1, 3, n), platform);
  CHECK(mark_s(crossing) > 1.5 * n / kBeta);
}

TEST_CASE("star links are half-duplex: a ring step that sends and receives runs at β/2", "[simgrid][topology]") {
  const int p = 4;
  const double n = 100e6;
  const Platform star = with_topology(test::crossbar(p), Topology::star);
  const Trace trace = make_simgrid_engine()->run(single_collective(p, CollectiveKind::allreduce, n, -1,
                                                                   Algorithm::ring), star);
  // 2(P-1)·α + 2(P-1)/P · n/(β/2), α = 3 µs: 1.8e-5 + 0.24 s
  const double expected = 2 * (p - 1) * 3e-6 + 2.0 * (p - 1) / p * n / (kBeta / 2);
  CHECK(latest_end_s(trace, 0) == Approx(expected).epsilon(kRelTol));
}

TEST_CASE("dragonfly platforms run and agree with the closed form inside one router", "[simgrid][topology]") {
  // "1,1;1,1;1,1;4": one group, one chassis, one router with 4 nodes: a star of links with
  // latency/2 each, so α and β as on the crossbar.
  Platform platform = test::crossbar(4);
  platform.network.topology = Topology::dragonfly;
  platform.network.dragonfly = "1,1;1,1;1,1;4";
  const double n = 10e6;
  const Trace trace = make_simgrid_engine()->run(single_collective(4, CollectiveKind::allreduce, n, -1,
                                                                   Algorithm::ring), platform);
  const double expected = 2 * 3 * 3e-6 + 2.0 * 3 / 4 * n / kBeta;  // 0.012018 s
  CHECK(latest_end_s(trace, 0) == Approx(expected).epsilon(kRelTol));
}

TEST_CASE("a SimGrid XML platform file is loaded directly, hosts in declaration order", "[simgrid][xml]") {
  // Cluster without backbone: private split-duplex links of 1.25 GBps and 1 µs each, so a
  // node-to-node route has α = 2 µs and β = 1.25 GB/s.
  const TempFile xml("cluster.xml", R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-3" speed="1Gf" bw="1.25GBps" lat="1us"
           sharing_policy="SPLITDUPLEX"/>
</platform>
)");
  SimgridOptions options;
  options.platform_xml = xml.path();
  const int p = 4;
  const double n = 50e6;
  const Platform platform = test::crossbar(p, 123.0, 0);  // its network is ignored
  const Trace trace = make_simgrid_engine(options)->run(single_collective(p, CollectiveKind::allreduce, n, -1,
                                                                          Algorithm::ring), platform);
  const double expected = 2 * (p - 1) * 2e-6 + 2.0 * (p - 1) / p * n / kBeta;  // 0.060012 s
  CHECK(latest_end_s(trace, 0) == Approx(expected).epsilon(kRelTol));
  CHECK(trace.metadata.at("simgrid").at("platform_xml") == xml.path());
}

TEST_CASE("bad platform input is an InputError naming the problem", "[simgrid][errors]") {
  const Schedule schedule = single_collective(4, CollectiveKind::allreduce, 1e6);

  SECTION("an unknown topology name is rejected when the platform is parsed") {
    nlohmann::json document = {
        {"name", "bad"},
        {"nodes", {{"count", 4}, {"peak", "1Tf"}}},
        {"network", {{"topology", "hypercube"}, {"bandwidth", "1GBps"}, {"latency", "1us"}}}};
    CHECK_THROWS_AS(parse_platform(document, "bad.json"), InputError);
  }
  SECTION("malformed topology parameters") {
    Platform fat_tree = with_topology(test::crossbar(8), Topology::fat_tree);
    fat_tree.network.fat_tree = "2;4;1,1;1,1";  // one down count for two levels
    CHECK_THROWS_AS(make_simgrid_engine()->run(schedule, fat_tree), InputError);
    try {
      make_simgrid_engine()->run(schedule, fat_tree);
    } catch (const InputError& e) {
      CHECK(e.json_path() == "/network/fat_tree");
      CHECK(e.value() == "2;4;1,1;1,1");
    }
    Platform torus = with_topology(test::crossbar(8), Topology::torus);
    torus.network.torus = "2,x";
    CHECK_THROWS_AS(make_simgrid_engine()->run(schedule, torus), InputError);
    Platform dragonfly = with_topology(test::crossbar(8), Topology::dragonfly);
    dragonfly.network.dragonfly = "1,1;1,1;4";
    CHECK_THROWS_AS(make_simgrid_engine()->run(schedule, dragonfly), InputError);
  }
  SECTION("fewer nodes or topology leaves than ranks") {
    CHECK_THROWS_AS(make_simgrid_engine()->run(schedule, test::crossbar(3)), InputError);
    Platform torus = with_topology(test::crossbar(8), Topology::torus);
    torus.network.torus = "3";  // 3 hosts for 4 ranks
    CHECK_THROWS_AS(make_simgrid_engine()->run(schedule, torus), InputError);
  }
  SECTION("an XML file with fewer hosts than ranks") {
    const TempFile xml("two.xml", R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="node-" suffix="" radical="0-1" speed="1Gf" bw="1GBps" lat="1us"/>
</platform>
)");
    SimgridOptions options;
    options.platform_xml = xml.path();
    try {
      make_simgrid_engine(options)->run(schedule, test::crossbar(4));
      FAIL("no InputError");
    } catch (const InputError& e) {
      CHECK(e.file() == xml.path());
      CHECK(e.value() == "2");
    }
  }
  SECTION("an XML file that SimGrid rejects") {
    const TempFile garbage("garbage.xml", "<platform version=\"4.1\"><host id=\"a\" speed=\"fast\"/>\n");
    SimgridOptions options;
    options.platform_xml = garbage.path();
    try {
      make_simgrid_engine(options)->run(schedule, test::crossbar(4));
      FAIL("no InputError");
    } catch (const InputError& e) {
      CHECK(e.file() == garbage.path());
    }
    const TempFile bad_link("bad-link.xml", R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>
    <route src="a" dst="b"><link_ctn id="no-such-link"/></route>
  </zone>
</platform>
)");
    options.platform_xml = bad_link.path();
    CHECK_THROWS_AS(make_simgrid_engine(options)->run(schedule, test::crossbar(4)), InputError);
  }
  SECTION("a missing XML file") {
    SimgridOptions options;
    options.platform_xml = "/nonexistent/platform.xml";
    CHECK_THROWS_AS(make_simgrid_engine(options)->run(schedule, test::crossbar(4)), InputError);
  }
  SECTION("an unknown network model") {
    SimgridOptions options;
    options.network_model = "IB";
    CHECK_THROWS_AS(make_simgrid_engine(options), InputError);
  }
}

TEST_CASE("a deadlocking schedule is reported, not hung", "[simgrid][errors]") {
  // Ranks 0 and 1 reach two allreduces in opposite orders (what the verifier rejects).
  Schedule schedule = test::empty_schedule(2);
  const int a = test::add(schedule, CollectiveKind::allreduce, 1e6, {0, 1});
  const int b = test::add(schedule, CollectiveKind::allreduce, 1e6, {0, 1});
  schedule.programs[0].ops = {Op::post_op(a), Op::wait_op(a), Op::post_op(b), Op::wait_op(b), Op::mark_op(0)};
  schedule.programs[1].ops = {Op::post_op(b), Op::wait_op(b), Op::post_op(a), Op::wait_op(a), Op::mark_op(0)};
  CHECK_THROWS_AS(make_simgrid_engine()->run(schedule, test::crossbar(2)), InputError);
}

TEST_CASE("XML hosts become ranks in declaration order, not name order", "[simgrid][xml]") {
  // Hosts declared z, a, m. Route z-a is 1 GBps, every other route 1 MBps. Rank 0 sends 1 MB to
  // rank 1: on z -> a (declaration order) it takes 1 ms + 1 us; on a -> m (name order) 1 s.
  const TempFile xml("order.xml", R"(<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z0" routing="Full">
    <host id="z" speed="1Gf"/><host id="a" speed="1Gf"/><host id="m" speed="1Gf"/>
    <link id="fast" bandwidth="1GBps" latency="1us"/>
    <link id="slow1" bandwidth="1MBps" latency="1us"/>
    <link id="slow2" bandwidth="1MBps" latency="1us"/>
    <route src="z" dst="a"><link_ctn id="fast"/></route>
    <route src="a" dst="m"><link_ctn id="slow1"/></route>
    <route src="z" dst="m"><link_ctn id="slow2"/></route>
  </zone>
</platform>
)");
  SimgridOptions options;
  options.platform_xml = xml.path();
  Schedule schedule = test::empty_schedule(2);
  const int id = test::add(schedule, CollectiveKind::send, 1e6, {0, 1}, 0);
  for (Program& program : schedule.programs) program.ops = {Op::post_op(id), Op::wait_op(id), Op::mark_op(0)};
  const Trace trace = make_simgrid_engine(options)->run(schedule, test::crossbar(2, 0, 0));
  CHECK(latest_end_s(trace, id) == Approx(1e-6 + 1e6 / 1e9).epsilon(kRelTol));  // 1.001 ms
}
