// What exists of a testbed, read from the system: namespaces, addresses, qdiscs, processes.
#include <algorithm>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/units.hpp"
#include "testbed/system.hpp"
#include "testbed/testbed.hpp"

namespace cnnpar::testbed {

namespace fs = std::filesystem;
using namespace detail;

namespace {

nlohmann::json parsed_or_null(const CapturedOutput& output) {
  if (output.status != 0) return nullptr;
  return nlohmann::json::parse(output.out, nullptr, /*allow_exceptions=*/false);
}

/** The IPv4 address of `device` in `ns` (`ip -j addr`), "" when none. */
std::string ipv4_address(const std::string& ns, const std::string& device) {
  const nlohmann::json links = parsed_or_null(run_captured({"ip", "-n", ns, "-j", "addr", "show", "dev", device}));
  if (!links.is_array()) return "";
  for (const nlohmann::json& link : links)
    for (const nlohmann::json& address : link.value("addr_info", nlohmann::json::array()))
      if (address.value("family", "") == "inet") return address.value("local", "");
  return "";
}

/** tbf rate and burst, netem delay of `device` in `ns` (`tc -j qdisc`: tbf's rate in bytes/s,
 *  netem's delay in seconds). */
Shaping shaping_of(const std::string& ns, const std::string& device) {
  Shaping shaping;
  const nlohmann::json qdiscs = parsed_or_null(run_captured({"tc", "-n", ns, "-j", "qdisc", "show", "dev", device}));
  if (!qdiscs.is_array()) return shaping;
  for (const nlohmann::json& qdisc : qdiscs) {
    const nlohmann::json options = qdisc.value("options", nlohmann::json::object());
    const std::string kind = qdisc.value("kind", "");
    if (kind == "tbf") {
      shaping.rate_Bps = options.value("rate", 0.0);
      shaping.burst_bytes = options.value("burst", 0.0);
    } else if (kind == "netem" && options.contains("delay")) {
      const nlohmann::json& delay = options.at("delay");
      shaping.delay_s = delay.is_object() ? delay.value("delay", 0.0) : delay.is_number() ? delay.get<double>() : 0.0;
    }
  }
  return shaping;
}

std::string bridge_mark(const std::string& ns) {
  const nlohmann::json links = parsed_or_null(run_captured({"ip", "-n", ns, "-j", "link", "show", "dev", kBridge}));
  if (!links.is_array() || links.empty()) return "";
  return links.front().value("ifalias", "");
}

std::string rate_text(double rate_Bps) {
  if (rate_Bps <= 0) return "unshaped";
  const double bits = rate_Bps * 8;
  return bits >= 1e9 ? fmt::format("{:.3f} Gbit/s", bits / 1e9) : fmt::format("{:.3f} Mbit/s", bits / 1e6);
}

std::string processes_text(const std::vector<Process>& processes) {
  if (processes.empty()) return "none";
  std::vector<std::string> texts;
  for (const Process& p : processes) {
    std::string program = p.command.substr(0, p.command.find(' '));
    program = program.substr(program.rfind('/') == std::string::npos ? 0 : program.rfind('/') + 1);
    texts.push_back(fmt::format("{} {}", p.pid, program));
  }
  return fmt::format("{}", fmt::join(texts, ", "));
}

nlohmann::json to_json(const Shaping& s) {
  return {{"rate_Bps", s.rate_Bps}, {"burst_bytes", s.burst_bytes}, {"delay_s", s.delay_s}};
}

nlohmann::json to_json(const std::vector<Process>& processes) {
  nlohmann::json list = nlohmann::json::array();
  for (const Process& p : processes) list.push_back({{"pid", p.pid}, {"command", p.command}});
  return list;
}

}  // namespace

Status status(const std::string& name) {
  check_name(name, "testbed", "/name");
  Status s;
  s.name = name;
  s.netem_available = netem_available();
  std::error_code ec;
  s.state_folder = fs::is_directory(detail::state_folder(name), ec);
  const std::string state_file = detail::state_folder(name) + "/state.json";
  if (fs::exists(state_file, ec)) {
    try {
      const nlohmann::json state = read_json_file(state_file);
      s.spec = spec_from_json(state.at("spec"), state_file, "/spec");
      s.complete = state.value("complete", false);
      s.latency_shaped = state.value("latency_shaped", false);
    } catch (const std::exception&) {
      // A damaged state file: the status shows what exists without it.
    }
  }
  const std::vector<std::string> namespaces = testbed_namespaces(name);
  const std::map<std::string, std::vector<Process>> processes = processes_in(namespaces);
  const std::string sw = detail::switch_namespace(name);
  s.switch_namespace = std::find(namespaces.begin(), namespaces.end(), sw) != namespaces.end();
  if (s.switch_namespace) {
    s.switch_address = ipv4_address(sw, kBridge);
    s.switch_processes = processes.at(sw);
  }
  for (const std::string& ns : namespaces) {
    const int k = node_index(name, ns);
    if (k < 0) continue;
    NodeStatus node;
    node.index = k;
    node.namespace_name = ns;
    node.address = ipv4_address(ns, kNodeDevice);
    node.upload = shaping_of(ns, kNodeDevice);
    if (s.switch_namespace) node.download = shaping_of(sw, switch_port(k));
    node.processes = processes.at(ns);
    s.nodes.push_back(node);
  }
  std::sort(s.nodes.begin(), s.nodes.end(), [](const NodeStatus& a, const NodeStatus& b) { return a.index < b.index; });
  return s;
}

nlohmann::json to_json(const Status& s) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeStatus& n : s.nodes)
    nodes.push_back({{"index", n.index},
                     {"namespace", n.namespace_name},
                     {"address", n.address},
                     {"upload", to_json(n.upload)},
                     {"download", to_json(n.download)},
                     {"processes", to_json(n.processes)}});
  return {{"name", s.name},
          {"exists", s.exists()},
          {"complete", s.complete},
          {"spec", s.spec ? to_json(*s.spec) : nlohmann::json(nullptr)},
          {"state_folder", s.state_folder ? nlohmann::json(detail::state_folder(s.name)) : nlohmann::json(nullptr)},
          {"netem_available", s.netem_available},
          {"latency_shaped", s.latency_shaped},
          {"switch",
           {{"namespace", s.switch_namespace ? nlohmann::json(detail::switch_namespace(s.name)) : nlohmann::json(nullptr)},
            {"address", s.switch_address},
            {"processes", to_json(s.switch_processes)}}},
          {"nodes", nodes}};
}

std::string format_status(const Status& s) {
  if (!s.exists()) return fmt::format("testbed {}: none\n", s.name);
  std::string text = fmt::format("testbed {}: {}", s.name, s.complete ? "complete" : "INCOMPLETE (destroy it)");
  if (s.spec)
    text += fmt::format(", {} nodes, {} each way, burst {}, TCP {}{}", s.spec->nodes, rate_text(s.spec->bandwidth_Bps),
                        format_bytes(s.spec->burst_bytes), kTcpCongestionControl,
                        kTcpSlowStartAfterIdle ? "" : " without slow start after idle");
  text += s.state_folder ? fmt::format(", state in {}\n", detail::state_folder(s.name)) : ", no state folder\n";
  std::string latency = "veth's own";
  if (s.spec && s.spec->latency_s > 0)
    latency = s.latency_shaped ? format_seconds(s.spec->latency_s) + " added each way (netem)"
                               : format_seconds(s.spec->latency_s) + " asked, not shaped: veth's own (no netem in this kernel)";
  else if (!s.netem_available)
    latency += " (no netem in this kernel)";
  text += "latency: " + latency + "\n";
  if (s.switch_namespace)
    text += fmt::format("switch {}: br0 {}, processes: {}\n", detail::switch_namespace(s.name),
                        s.switch_address.empty() ? "(no address)" : s.switch_address, processes_text(s.switch_processes));
  else
    text += fmt::format("switch {}: missing\n", detail::switch_namespace(s.name));
  text += fmt::format("{:<5} {:<20} {:<12} {:<15} {:<15} {}\n", "node", "namespace", "address", "upload", "download",
                      "processes");
  for (const NodeStatus& n : s.nodes) {
    std::string up = rate_text(n.upload.rate_Bps), down = rate_text(n.download.rate_Bps);
    if (n.upload.delay_s > 0) up += " +" + format_seconds(n.upload.delay_s);
    if (n.download.delay_s > 0) down += " +" + format_seconds(n.download.delay_s);
    text += fmt::format("{:<5} {:<20} {:<12} {:<15} {:<15} {}\n", n.index, n.namespace_name,
                        n.address.empty() ? "-" : n.address, up, down, processes_text(n.processes));
  }
  return text;
}

std::vector<std::string> list() {
  std::set<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(kStateRoot, ec))
    if (entry.is_directory(ec) && valid_name(entry.path().filename().string()))
      names.insert(entry.path().filename().string());
  // Switch namespaces whose bridge carries the mark: found even without the state folder.
  for (const std::string& ns : all_namespaces()) {
    if (ns.size() <= 3 || ns.compare(ns.size() - 3, 3, "-sw") != 0) continue;
    const std::string name = ns.substr(0, ns.size() - 3);
    if (valid_name(name) && bridge_mark(ns) == kBridgeMark + name) names.insert(name);
  }
  return {names.begin(), names.end()};
}

}  // namespace cnnpar::testbed
