#include "testbed/testbed.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/output_files.hpp"
#include "base/units.hpp"
#include "testbed/system.hpp"

namespace cnnpar::testbed {

namespace fs = std::filesystem;
using namespace detail;

namespace {

/** tbf's queue bound: a packet waits at most this long for tokens (the prototype's value). */
constexpr const char* kTbfQueueLatency = "100ms";
/** netem holds delayed packets in a queue of this many: 1 ms at 100 Gbit/s of 1500-byte frames
 *  is ~8,300, and the default 1,000 would drop at high rate x delay. */
constexpr int kNetemLimitPackets = 100000;
constexpr double kTermGrace_s = 2;

std::string found_on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream folders(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const fs::path candidate = fs::path(folder.empty() ? "." : folder) / program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

/** The words of a /proc/sys file (none when it cannot be read). */
std::vector<std::string> proc_words(const std::string& file) {
  std::ifstream in(file);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

/** Lets node namespaces select kTcpCongestionControl. Only the initial namespace may make a
 *  congestion control that is not in the host's tcp_allowed_congestion_control the default,
 *  and a fresh boot of this machine allows only "reno bbr" (the node's write then fails with
 *  EIO). Adding it to the allowed list leaves the host's own default as it was. */
void allow_congestion_control_in_namespaces() {
  const std::string allowed_file = "/proc/sys/net/ipv4/tcp_allowed_congestion_control";
  const std::string available_file = "/proc/sys/net/ipv4/tcp_available_congestion_control";
  std::vector<std::string> allowed = proc_words(allowed_file);
  const auto has = [](const std::vector<std::string>& words) {
    return std::find(words.begin(), words.end(), kTcpCongestionControl) != words.end();
  };
  if (has(allowed)) return;
  const std::vector<std::string> available = proc_words(available_file);
  if (!available.empty() && !has(available))
    throw std::runtime_error(fmt::format("the testbed runs TCP {} in its nodes, and this kernel does not offer it "
                                         "({} lists: {})",
                                         kTcpCongestionControl, available_file, fmt::join(available, " ")));
  allowed.push_back(kTcpCongestionControl);
  std::ofstream out(allowed_file);
  out << fmt::format("{}\n", fmt::join(allowed, " "));
  out.close();
  if (!out || !has(proc_words(allowed_file)))
    throw std::runtime_error(fmt::format("could not add TCP {} to {} (the testbed's nodes run it)",
                                         kTcpCongestionControl, allowed_file));
}

/** The qdiscs that shape one veth end: [netem delay D] above tbf rate R. Replaces what is there. */
void shape(const std::string& ns, const std::string& device, double bandwidth_Bps, double burst_bytes,
           double latency_s, bool with_netem) {
  const std::vector<std::string> tc = {"tc", "-n", ns, "qdisc"};
  const auto command = [&](std::vector<std::string> rest) {
    std::vector<std::string> argv = tc;
    argv.insert(argv.end(), rest.begin(), rest.end());
    return argv;
  };
  run_captured(command({"del", "dev", device, "root"}));  // fails when there is none: fine
  // tc's "bit" is bits per second ("bps" would be bytes); a bare burst is bytes.
  std::vector<std::string> tbf = {"tbf", "rate", fmt::format("{}bit", std::llround(bandwidth_Bps * 8)),
                                  "burst", fmt::format("{}", std::llround(burst_bytes)), "latency", kTbfQueueLatency};
  if (with_netem) {
    run_ok(command({"add", "dev", device, "root", "handle", "1:", "netem", "delay", fmt::format("{:.3f}us", latency_s * 1e6),
                    "limit", std::to_string(kNetemLimitPackets)}));
    std::vector<std::string> child = {"add", "dev", device, "parent", "1:1", "handle", "10:"};
    child.insert(child.end(), tbf.begin(), tbf.end());
    run_ok(command(child));
  } else {
    std::vector<std::string> root = {"add", "dev", device, "root", "handle", "1:"};
    root.insert(root.end(), tbf.begin(), tbf.end());
    run_ok(command(root));
  }
}

std::string launcher_script_text(const Spec& spec, const std::string& ip) {
  std::string cases;
  for (int k = 0; k < spec.nodes; ++k)
    cases += fmt::format("  {}) node={} ;;\n", node_address(k), node_namespace(spec.name, k));
  return fmt::format(
      "#!/bin/sh\n"
      "# Hydra's ssh launcher for cnnpar testbed {name} (written by cnnpar testbed create).\n"
      "# Hydra calls it as: SCRIPT -x HOST COMMAND...; COMMAND runs in HOST's node namespace, under\n"
      "# that node's own hostname (MPICH tells hosts apart by name).\n"
      "while [ $# -gt 0 ]; do case \"$1\" in -*) shift ;; *) break ;; esac; done\n"
      "host=$1; shift\n"
      "case \"$host\" in\n"
      "{cases}"
      "  *) echo \"cnnpar testbed {name}: no node has the address $host\" >&2; exit 255 ;;\n"
      "esac\n"
      "exec {ip} netns exec \"$node\" unshare --uts sh -c \"hostname $node && exec $*\"\n",
      fmt::arg("name", spec.name), fmt::arg("cases", cases), fmt::arg("ip", ip));
}

void check_range(double value, double least, double most, const std::string& origin, const std::string& path,
                 const std::string& text, const std::string& range) {
  if (!(value >= least && value <= most)) throw InputError(origin, path, text, "must lie in " + range);
}

}  // namespace

void check_name(const std::string& name, const std::string& origin, const std::string& path) {
  if (!valid_name(name))
    throw InputError(origin, path, name,
                     fmt::format("a testbed name is 1 to {} letters, digits, '-' or '_', starting with a letter or digit",
                                 kMaxNameLength));
}

void check_spec(const Spec& spec, const std::string& origin, const std::string& key_prefix) {
  check_name(spec.name, origin, key_prefix + "name");
  if (spec.nodes < 1 || spec.nodes > kMaxNodes)
    throw InputError(origin, key_prefix + "nodes", std::to_string(spec.nodes),
                     fmt::format("a testbed has 1 to {} nodes", kMaxNodes));
  check_range(spec.bandwidth_Bps, kMinBandwidth_Bps, kMaxBandwidth_Bps, origin, key_prefix + "bandwidth",
              fmt::format("{}Bps", spec.bandwidth_Bps), "1Mbps .. 100Gbps");
  check_range(spec.latency_s, 0, kMaxLatency_s, origin, key_prefix + "latency", fmt::format("{}s", spec.latency_s),
              "0s .. 1s");
  check_range(spec.burst_bytes, kMinBurst_bytes, kMaxBurst_bytes, origin, key_prefix + "burst",
              fmt::format("{}B", spec.burst_bytes), "2KiB .. 64MiB");
}

nlohmann::json to_json(const Spec& spec) {
  return {{"name", spec.name},
          {"nodes", spec.nodes},
          {"bandwidth", fmt::format("{}Bps", spec.bandwidth_Bps)},
          {"latency", fmt::format("{}s", spec.latency_s)},
          {"burst", fmt::format("{}B", spec.burst_bytes)}};
}

Spec spec_from_json(const nlohmann::json& document, const std::string& origin, const std::string& path) {
  const JsonNode node(document, origin, path);
  node.check_keys({"name", "nodes", "bandwidth", "latency", "burst"});
  Spec spec;
  spec.name = node.at("name").as_string();
  spec.nodes = int(node.at("nodes").as_int_in(1, kMaxNodes));
  spec.bandwidth_Bps = node.at("bandwidth").as_quantity(Unit::bandwidth_Bps);
  spec.latency_s = node.at("latency").as_quantity(Unit::time_s, true);
  spec.burst_bytes = node.at("burst").as_quantity(Unit::size_bytes);
  check_spec(spec, origin, path + "/");
  return spec;
}

bool netem_available() {
  static std::once_flag probed;
  static bool available = false;
  std::call_once(probed, [] {
    try {
      // An unnamed namespace of its own, gone when unshare exits: nothing global is touched.
      available = run_captured({"unshare", "--net", "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"})
                      .status == 0;
    } catch (const std::runtime_error&) {
      available = false;  // no unshare or tc
    }
  });
  return available;
}

void require_root(const std::string& origin, const std::string& path) {
  const unsigned uid = ::geteuid();
  if (uid != 0)
    throw InputError(origin, path, fmt::format("uid {}", uid),
                     "the testbed makes and removes network namespaces and qdiscs: run as root");
  for (const char* tool : {"ip", "tc", "unshare"})
    if (found_on_path(tool).empty())
      throw InputError(origin, path, tool, "not found on PATH: the testbed needs iproute2's ip and tc, and unshare");
}

std::vector<Node> Testbed::nodes() const {
  std::vector<Node> nodes;
  for (int k = 0; k < spec_.nodes; ++k)
    nodes.push_back({k, node_namespace(spec_.name, k), node_address(k), node_namespace(spec_.name, k), switch_port(k)});
  return nodes;
}

std::string Testbed::switch_namespace() const { return detail::switch_namespace(spec_.name); }
std::string Testbed::state_folder() const { return detail::state_folder(spec_.name); }
std::string Testbed::hosts_file() const { return state_folder() + "/hosts"; }
std::string Testbed::launcher_script() const { return state_folder() + "/launch.sh"; }

std::vector<std::string> Testbed::launcher() const {
  return {"ip",     "netns", "exec",         switch_namespace(), "mpiexec", "-launcher", "ssh",
          "-launcher-exec", launcher_script(), "-iface", kBridge, "-f", hosts_file(),
          "-genv",  "UCX_TLS", "tcp,self", "-genv", "UCX_RNDV_THRESH", "inf"};
}

void Testbed::write_state(bool complete) const {
  const nlohmann::json state = {{"spec", to_json(spec_)}, {"latency_shaped", latency_shaped_}, {"complete", complete}};
  write_file_atomic(state_folder() + "/state.json", state.dump(2) + "\n");
}

Testbed Testbed::create(const Spec& spec) {
  check_spec(spec, "testbed", "/");
  require_root("testbed", "/name");
  DeferredInterrupts deferred;
  testbed::destroy(spec.name);  // a stale one
  allow_congestion_control_in_namespaces();
  const bool with_netem = spec.latency_s > 0 && netem_available();
  Testbed bed(spec, with_netem);
  try {
    // The state folder first and gone last: whatever exists of a testbed is found by list().
    fs::create_directories(bed.state_folder());
    bed.write_state(false);
    const std::string sw = bed.switch_namespace();
    run_ok({"ip", "netns", "add", sw});
    run_ok({"ip", "-n", sw, "link", "add", kBridge, "type", "bridge"});
    run_ok({"ip", "-n", sw, "link", "set", kBridge, "alias", kBridgeMark + spec.name});
    run_ok({"ip", "-n", sw, "addr", "add", fmt::format("{}/{}", kSwitchAddress, kPrefixLength), "dev", kBridge});
    run_ok({"ip", "-n", sw, "link", "set", "lo", "up"});
    run_ok({"ip", "-n", sw, "link", "set", kBridge, "up"});
    std::string hosts;
    for (const Node& node : bed.nodes()) {
      const std::string& ns = node.namespace_name;
      run_ok({"ip", "netns", "add", ns});
      // Both ends made in their namespaces: nothing ever appears in the root namespace.
      run_ok({"ip", "link", "add", kNodeDevice, "netns", ns, "type", "veth", "peer", "name", node.switch_port, "netns", sw});
      run_ok({"ip", "-n", sw, "link", "set", node.switch_port, "master", kBridge, "up"});
      run_ok({"ip", "-n", ns, "link", "set", "lo", "up"});
      run_ok({"ip", "netns", "exec", ns, "sh", "-c",
              fmt::format("echo {} > /proc/sys/net/ipv4/tcp_congestion_control", kTcpCongestionControl)});
      run_ok({"ip", "netns", "exec", ns, "sh", "-c",
              fmt::format("echo {} > /proc/sys/net/ipv4/tcp_slow_start_after_idle", kTcpSlowStartAfterIdle ? 1 : 0)});
      run_ok({"ip", "-n", ns, "addr", "add", fmt::format("{}/{}", node.address, kPrefixLength), "dev", kNodeDevice});
      run_ok({"ip", "-n", ns, "link", "set", kNodeDevice, "up"});
      shape(ns, kNodeDevice, spec.bandwidth_Bps, spec.burst_bytes, spec.latency_s, with_netem);  // upload
      shape(sw, node.switch_port, spec.bandwidth_Bps, spec.burst_bytes, spec.latency_s, with_netem);  // download
      hosts += node.address + ":1\n";
    }
    write_file_atomic(bed.hosts_file(), hosts);
    std::string ip = found_on_path("ip");
    write_file_atomic(bed.launcher_script(), launcher_script_text(spec, ip.empty() ? "ip" : ip));
    fs::permissions(bed.launcher_script(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                               fs::perms::others_read | fs::perms::others_exec);
    bed.write_state(true);
    if (const int signal = deferred.take(); signal != 0) throw InterruptedError(signal);
  } catch (...) {
    try {
      testbed::destroy(spec.name);
    } catch (const std::exception& e) {
      fmt::print(stderr, "cnnpar: could not remove the half-made testbed {}: {}\n", spec.name, e.what());
    }
    throw;
  }
  return bed;
}

std::optional<Testbed> Testbed::attach(const std::string& name) {
  check_name(name, "testbed", "/name");
  const std::string state_file = detail::state_folder(name) + "/state.json";
  std::error_code ec;
  if (!fs::exists(state_file, ec)) return std::nullopt;
  const std::string advice = fmt::format("; remove it with `cnnpar testbed destroy --name {}`", name);
  nlohmann::json state;
  Spec spec;
  try {
    state = read_json_file(state_file);
    spec = spec_from_json(state.at("spec"), state_file, "/spec");
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("testbed {} has a damaged state file ({}){}", name, e.what(), advice));
  }
  if (!state.value("complete", false))
    throw std::runtime_error(fmt::format("testbed {} is incomplete (its creation did not finish){}", name, advice));
  if (spec.name != name)
    throw std::runtime_error(fmt::format("testbed {}: its state file names {}{}", name, spec.name, advice));
  Testbed bed(spec, state.value("latency_shaped", false));
  const std::vector<std::string> present = testbed_namespaces(name);
  std::vector<std::string> wanted = {bed.switch_namespace()};
  for (const Node& node : bed.nodes()) wanted.push_back(node.namespace_name);
  for (const std::string& ns : wanted)
    if (std::find(present.begin(), present.end(), ns) == present.end())
      throw std::runtime_error(fmt::format("testbed {} is damaged: its namespace {} is missing{}", name, ns, advice));
  return bed;
}

void Testbed::reshape(double bandwidth_Bps, double latency_s) {
  Spec wanted = spec_;
  wanted.bandwidth_Bps = bandwidth_Bps;
  wanted.latency_s = latency_s;
  check_spec(wanted, "testbed " + spec_.name, "/");
  DeferredInterrupts deferred;
  const bool with_netem = latency_s > 0 && netem_available();
  for (const Node& node : nodes()) {
    shape(node.namespace_name, kNodeDevice, bandwidth_Bps, wanted.burst_bytes, latency_s, with_netem);
    shape(switch_namespace(), node.switch_port, bandwidth_Bps, wanted.burst_bytes, latency_s, with_netem);
  }
  spec_ = wanted;
  latency_shaped_ = with_netem;
  write_state(true);
  if (const int signal = deferred.take(); signal != 0) throw InterruptedError(signal);
}

void Testbed::destroy() { testbed::destroy(spec_.name); }

void destroy(const std::string& name) {
  check_name(name, "testbed", "/name");
  DeferredInterrupts deferred;  // not cut half-way; a Ctrl-C meanwhile is delivered afterwards
  const std::vector<std::string> namespaces = testbed_namespaces(name);
  end_processes(namespaces, kTermGrace_s);
  for (const std::string& ns : namespaces) {
    const CapturedOutput result = run_captured({"ip", "netns", "delete", ns});
    std::error_code ec;
    if (result.status != 0 && fs::exists("/run/netns/" + ns, ec))
      throw std::runtime_error(fmt::format("`ip netns delete {}` failed: {}", ns, result.err));
  }
  std::error_code ec;
  fs::remove_all(detail::state_folder(name), ec);
  if (ec) throw std::runtime_error(fmt::format("cannot remove {}: {}", detail::state_folder(name), ec.message()));
}

Session::Session(const Spec& spec, IfExists if_exists, bool keep) : keep_(keep) {
  if (if_exists == IfExists::reuse) testbed_ = Testbed::attach(spec.name);
  if (testbed_) {
    keep_ = true;
    return;
  }
  testbed_ = Testbed::create(spec);
  created_ = true;
}

Session::~Session() {
  if (!created_ || keep_ || !testbed_) return;
  try {
    testbed_->destroy();
  } catch (const std::exception& e) {
    fmt::print(stderr, "cnnpar: could not remove testbed {0}: {1} (run `cnnpar testbed destroy --name {0}`)\n",
               testbed_->spec().name, e.what());
  }
}

}  // namespace cnnpar::testbed
