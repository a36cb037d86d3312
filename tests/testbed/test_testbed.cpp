// The testbed library (testbed/testbed.hpp). The first cases need nothing; the others make
// network namespaces and exit with status 77 (skipped, SKIP_RETURN_CODE) when not run as root.
// Each of those uses its own testbed name (prefix tba-u), so ctest -j runs them side by side.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>

#include "base/child_process.hpp"
#include "base/error.hpp"
#include "testbed/testbed.hpp"

namespace fs = std::filesystem;
using namespace cnnpar;
using namespace cnnpar::testbed;

namespace {

void skip_unless_root() {
  if (::geteuid() == 0) return;
  std::printf("skipped: the testbed needs root\n");
  std::exit(77);
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/** Named network namespaces that belong to testbed `name` (what `ip netns list` shows). */
std::set<std::string> namespaces_of(const std::string& name) {
  std::set<std::string> found;
  const CapturedOutput listed = run_captured({"ip", "netns", "list"});
  std::istringstream lines(listed.out);
  for (std::string line; std::getline(lines, line);) {
    const std::string ns = line.substr(0, line.find(' '));
    if (ns.rfind(name + "-", 0) == 0) found.insert(ns);
  }
  return found;
}

void check_nothing_left(const std::string& name) {
  INFO("testbed " << name);
  CHECK(namespaces_of(name).empty());
  CHECK_FALSE(fs::exists(std::string(kStateRoot) + "/" + name));
  const std::vector<std::string> names = list();
  CHECK(std::find(names.begin(), names.end(), name) == names.end());
  CHECK_FALSE(status(name).exists());
}

Spec spec_named(const std::string& name, int nodes, double bandwidth_Bps) {
  Spec spec;
  spec.name = name;
  spec.nodes = nodes;
  spec.bandwidth_Bps = bandwidth_Bps;
  return spec;
}

// tbf keeps the rate in bytes/s as given; its burst goes through the kernel's time units, so
// it reads back within a few bytes (256 KiB set, 262137 B shown by tc 6.1 at 100 Mbit/s).
constexpr double kBurstReadBack_bytes = 64;

}  // namespace

TEST_CASE("a testbed spec: every field checked and the flag or JSON path named", "[testbed]") {
  CHECK_NOTHROW(check_spec(Spec{}, "command line", "--"));
  const auto refused = [](Spec spec, const std::string& path) {
    INFO(path);
    try {
      check_spec(spec, "grid.json", "/testbed/");
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.file() == "grid.json");
      CHECK(e.json_path() == path);
    }
  };
  Spec s;
  s.nodes = 0;
  refused(s, "/testbed/nodes");
  s.nodes = kMaxNodes + 1;
  refused(s, "/testbed/nodes");
  s = Spec{};
  s.bandwidth_Bps = 1e3;  // 8 kbit/s: below 1 Mbit/s
  refused(s, "/testbed/bandwidth");
  s.bandwidth_Bps = 2e10;  // 160 Gbit/s
  refused(s, "/testbed/bandwidth");
  s = Spec{};
  s.latency_s = -1e-6;
  refused(s, "/testbed/latency");
  s = Spec{};
  s.burst_bytes = 1500;  // one frame: tbf could never send a GSO packet
  refused(s, "/testbed/burst");
  for (const std::string& bad : std::vector<std::string>{"", "a/b", "-x", "a b", "a.b", std::string(kMaxNameLength + 1, 'a')}) {
    s = Spec{};
    s.name = bad;
    refused(s, "/testbed/name");
  }
  s = Spec{};
  s.name = std::string(kMaxNameLength, 'a');
  CHECK_NOTHROW(check_spec(s, "x", "/"));
}

TEST_CASE("a testbed spec survives its JSON form exactly", "[testbed]") {
  // The state file keeps unit strings; a shortest round-trip decimal parses back to the same double.
  for (const double bandwidth_Bps : {125e6, 12.5e6, 1.25e9, 123456789.123}) {
    Spec spec;
    spec.name = "tba-json";
    spec.nodes = 7;
    spec.bandwidth_Bps = bandwidth_Bps;
    spec.latency_s = 50e-6;
    spec.burst_bytes = 256 * 1024;
    const Spec back = spec_from_json(to_json(spec), "state.json");
    CHECK(back.name == spec.name);
    CHECK(back.nodes == spec.nodes);
    CHECK(back.bandwidth_Bps == spec.bandwidth_Bps);
    CHECK(back.latency_s == spec.latency_s);
    CHECK(back.burst_bytes == spec.burst_bytes);
  }
  nlohmann::json document = to_json(Spec{});
  document["bandwidth"] = "fast";
  CHECK_THROWS_WITH(spec_from_json(document, "state.json", "/spec"), Catch::Contains("/spec/bandwidth"));
  document = to_json(Spec{});
  document["bandwith"] = "1Gbps";
  CHECK_THROWS_AS(spec_from_json(document, "state.json", "/spec"), InputError);
}

TEST_CASE("a 2-node testbed has its namespaces and addresses and both ends shaped and destroy leaves nothing", "[testbed][root]") {
  skip_unless_root();
  const std::string name = "tba-u-life";
  destroy(name);
  const Spec spec = spec_named(name, 2, 12.5e6);  // 100 Mbit/s
  Testbed bed = Testbed::create(spec);
  CHECK(namespaces_of(name) == std::set<std::string>{"tba-u-life-sw", "tba-u-life-n0", "tba-u-life-n1"});
  // Nothing in the root namespace: the veth ends were made inside their namespaces.
  CHECK(run_captured({"ip", "link", "show", "dev", "p0"}).status != 0);

  const Status s = status(name);
  CHECK(s.complete);
  REQUIRE(s.spec);
  CHECK(s.spec->bandwidth_Bps == spec.bandwidth_Bps);
  CHECK(s.switch_address == "10.87.0.254");
  REQUIRE(s.nodes.size() == 2);
  for (const NodeStatus& node : s.nodes) {
    INFO("node " << node.index);
    CHECK(node.address == "10.87.0." + std::to_string(node.index + 1));
    CHECK(node.upload.rate_Bps == spec.bandwidth_Bps);
    CHECK(node.download.rate_Bps == spec.bandwidth_Bps);
    CHECK(node.upload.burst_bytes == Approx(spec.burst_bytes).margin(kBurstReadBack_bytes));
    CHECK(node.download.burst_bytes == Approx(spec.burst_bytes).margin(kBurstReadBack_bytes));
    CHECK(node.upload.delay_s == 0);
    CHECK(node.processes.empty());
  }
  const nlohmann::json json = to_json(s);
  CHECK(json.at("nodes").at(1).at("download").at("rate_Bps") == spec.bandwidth_Bps);
  CHECK(format_status(s).find("100.000 Mbit/s") != std::string::npos);

  CHECK(slurp(bed.hosts_file()) == "10.87.0.1:1\n10.87.0.2:1\n");
  const std::vector<std::string> launcher = bed.launcher();
  const std::vector<std::string> expected = {"ip", "netns", "exec", "tba-u-life-sw", "mpiexec", "-launcher", "ssh",
                                             "-launcher-exec", bed.launcher_script(), "-iface", "br0", "-f",
                                             bed.hosts_file(), "-genv", "UCX_TLS", "tcp,self", "-genv",
                                             "UCX_RNDV_THRESH", "inf"};
  CHECK(launcher == expected);
  // The launcher script runs a command on the node whose address Hydra names, under its hostname.
  const CapturedOutput on_node =
      run_captured({bed.launcher_script(), "-x", "10.87.0.2", "echo $(hostname) $(cat /proc/net/dev | grep -c eth0)"});
  CHECK(on_node.status == 0);
  CHECK(on_node.out == "tba-u-life-n1 1\n");
  CHECK(run_captured({bed.launcher_script(), "-x", "10.87.0.9", "true"}).status == 255);

  const std::optional<Testbed> attached = Testbed::attach(name);
  REQUIRE(attached);
  CHECK(attached->spec().nodes == 2);
  CHECK(attached->launcher() == expected);
  const std::vector<std::string> names = list();
  CHECK(std::find(names.begin(), names.end(), name) != names.end());

  bed.destroy();
  check_nothing_left(name);
  CHECK_NOTHROW(bed.destroy());  // idempotent
  CHECK_FALSE(Testbed::attach(name));
}

TEST_CASE("reshape changes the rate on both ends of every link", "[testbed][root]") {
  skip_unless_root();
  const std::string name = "tba-u-reshape";
  Session session(spec_named(name, 2, 125e6));
  session.testbed().reshape(1.25e9, 0);  // 1 -> 10 Gbit/s
  const Status s = status(name);
  REQUIRE(s.nodes.size() == 2);
  for (const NodeStatus& node : s.nodes) {
    CHECK(node.upload.rate_Bps == 1.25e9);
    CHECK(node.download.rate_Bps == 1.25e9);
  }
  CHECK(Testbed::attach(name)->spec().bandwidth_Bps == 1.25e9);  // the state file follows
  CHECK_THROWS_AS(session.testbed().reshape(1, 0), InputError);
}

TEST_CASE("a latency is shaped with netem where the kernel has it and else recorded as not shaped", "[testbed][root]") {
  skip_unless_root();
  const std::string name = "tba-u-latency";
  Spec spec = spec_named(name, 1, 125e6);
  spec.latency_s = 50e-6;
  Session session(spec);
  const Status s = status(name);
  REQUIRE(s.nodes.size() == 1);
  CHECK(session.testbed().latency_shaped() == netem_available());
  CHECK(s.nodes[0].upload.rate_Bps == 125e6);  // bandwidth either way
  if (netem_available()) {
    CHECK(s.nodes[0].upload.delay_s == Approx(50e-6).epsilon(0.01));
    CHECK(s.nodes[0].download.delay_s == Approx(50e-6).epsilon(0.01));
  } else {
    CHECK(s.nodes[0].upload.delay_s == 0);
    CHECK(format_status(s).find("no netem") != std::string::npos);
  }
}

TEST_CASE("a create that fails half-way removes what it made", "[testbed][root]") {
  skip_unless_root();
  const std::string name = "tba-u-fail";
  // A tc that refuses everything comes first on PATH: the first shaping command fails.
  const fs::path bin = fs::temp_directory_path() / ("tba-u-fail-bin-" + std::to_string(::getpid()));
  fs::create_directories(bin);
  std::ofstream(bin / "tc") << "#!/bin/sh\necho 'RTNETLINK answers: refused by the test' >&2\nexit 2\n";
  fs::permissions(bin / "tc", fs::perms::owner_all);
  const std::string path = std::getenv("PATH");
  ::setenv("PATH", (bin.string() + ":" + path).c_str(), 1);
  try {
    Testbed::create(spec_named(name, 2, 125e6));
    FAIL("created with a failing tc");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find("refused by the test") != std::string::npos);
  }
  ::setenv("PATH", path.c_str(), 1);
  fs::remove_all(bin);
  check_nothing_left(name);
}

TEST_CASE("a session removes its testbed when the scope unwinds and keeps one it reused", "[testbed][root]") {
  skip_unless_root();
  const std::string name = "tba-u-session";
  try {
    Session session(spec_named(name, 2, 125e6));
    CHECK(session.created());
    CHECK(namespaces_of(name).size() == 3);
    throw std::runtime_error("a failure inside the session");
  } catch (const std::runtime_error&) {
  }
  check_nothing_left(name);

  Testbed kept = Testbed::create(spec_named(name, 3, 125e6));
  {
    const Session reused(spec_named(name, 2, 1e6), Session::IfExists::reuse);
    CHECK_FALSE(reused.created());
    CHECK(reused.testbed().spec().nodes == 3);  // as it is, not as asked
  }
  CHECK(namespaces_of(name).size() == 4);
  {
    const Session replaced(spec_named(name, 2, 125e6), Session::IfExists::replace);
    CHECK(replaced.created());
    CHECK(namespaces_of(name).size() == 3);
  }
  check_nothing_left(name);
}

TEST_CASE("destroy by name ends the processes inside and finds a testbed by its bridge mark", "[testbed][root]") {
  skip_unless_root();
  const std::string name = "tba-u-mark";
  const Testbed bed = Testbed::create(spec_named(name, 2, 125e6));
  // A process that ignores SIGTERM, in a node namespace: destroy must SIGKILL it after the grace.
  const std::string marker = "tba-u-mark-sleeper-" + std::to_string(::getpid());
  REQUIRE(std::system(("ip netns exec tba-u-mark-n1 bash -c 'trap \"\" TERM; exec -a " + marker +
                       " sleep 300' >/dev/null 2>&1 &").c_str()) == 0);
  std::string sleeping;
  for (int i = 0; i < 100 && sleeping.empty(); ++i) {
    ::usleep(20000);
    sleeping = run_captured({"pgrep", "-f", marker}).out;
  }
  REQUIRE_FALSE(sleeping.empty());
  CHECK(status(name).nodes.at(1).processes.size() == 1);
  // The state folder gone (as after a crash of whoever deleted it): list() still finds the testbed.
  fs::remove_all(bed.state_folder());
  const std::vector<std::string> names = list();
  CHECK(std::find(names.begin(), names.end(), name) != names.end());
  destroy(name);
  check_nothing_left(name);
  CHECK(run_captured({"pgrep", "-f", marker}).status == 1);  // 1 = no process matched
}
