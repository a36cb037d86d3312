#include "testbed/system.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"

namespace cnnpar::testbed::detail {

namespace fs = std::filesystem;

namespace {

constexpr const char* kNamespaceFolder = "/run/netns";

std::string first_line(const std::string& text) {
  const std::size_t begin = text.find_first_not_of(" \t\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find('\n', begin) - begin);
}

std::string command_line(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && text.back() == '\0') text.pop_back();
  for (char& c : text)
    if (c == '\0') c = ' ';
  return text;
}

}  // namespace

bool valid_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (!std::isalnum(static_cast<unsigned char>(name.front()))) return false;
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
  return true;
}

std::string switch_namespace(const std::string& name) { return name + "-sw"; }
std::string node_namespace(const std::string& name, int index) { return fmt::format("{}-n{}", name, index); }
std::string node_address(int index) { return fmt::format("{}{}", kSubnetPrefix, index + 1); }
std::string switch_port(int index) { return fmt::format("p{}", index); }
std::string state_folder(const std::string& name) { return fmt::format("{}/{}", kStateRoot, name); }

CapturedOutput run_ok(const std::vector<std::string>& argv) {
  CapturedOutput result = run_captured(argv);
  if (result.status != 0)
    throw std::runtime_error(
        fmt::format("`{}` failed (status {}): {}", fmt::join(argv, " "), result.status, first_line(result.err)));
  return result;
}

std::vector<std::string> all_namespaces() {
  // The folder ip netns keeps its mounts in: what `ip netns list` prints, without a process.
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(kNamespaceFolder, ec))
    names.push_back(entry.path().filename().string());
  return names;
}

int node_index(const std::string& name, const std::string& namespace_name) {
  const std::string prefix = name + "-n";
  if (namespace_name.size() <= prefix.size() || namespace_name.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string digits = namespace_name.substr(prefix.size());
  if (digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  if (digits.size() > 1 && digits.front() == '0') return -1;
  return std::stoi(digits);
}

std::vector<std::string> testbed_namespaces(const std::string& name) {
  std::vector<std::string> found;
  for (const std::string& ns : all_namespaces())
    if (ns == switch_namespace(name) || node_index(name, ns) >= 0) found.push_back(ns);
  return found;
}

std::map<std::string, std::vector<Process>> processes_in(const std::vector<std::string>& namespaces) {
  // A process is in a namespace when its /proc/PID/ns/net is the same nsfs inode as the
  // namespace's mount under /run/netns (what `ip netns pids` compares).
  std::map<std::pair<dev_t, ino_t>, std::string> by_inode;
  std::map<std::string, std::vector<Process>> found;
  for (const std::string& ns : namespaces) {
    struct stat info {};
    if (::stat((std::string(kNamespaceFolder) + "/" + ns).c_str(), &info) != 0) continue;
    by_inode[{info.st_dev, info.st_ino}] = ns;
    found[ns];
  }
  if (by_inode.empty()) return found;
  const int self = ::getpid();
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    const std::string pid_text = entry.path().filename().string();
    if (pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(pid_text);
    if (pid == self) continue;
    struct stat info {};
    if (::stat(("/proc/" + pid_text + "/ns/net").c_str(), &info) != 0) continue;  // gone, or a zombie
    const auto it = by_inode.find({info.st_dev, info.st_ino});
    if (it != by_inode.end()) found[it->second].push_back({pid, command_line(pid)});
  }
  return found;
}

void end_processes(const std::vector<std::string>& namespaces, double grace_s) {
  using Clock = std::chrono::steady_clock;
  const auto alive = [&] {
    std::set<int> pids;
    for (const auto& [ns, processes] : processes_in(namespaces))
      for (const Process& p : processes) pids.insert(p.pid);
    return pids;
  };
  constexpr auto kPoll = std::chrono::milliseconds(50);
  constexpr double kKillWait_s = 5;  // SIGKILL cannot be refused; this is for exits in the kernel
  std::set<int> left = alive();
  const auto signal_all = [&](int signal) {
    for (const int pid : left) ::kill(pid, signal);
  };
  const auto wait_until = [&](double seconds, int signal) {
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    while (!left.empty() && Clock::now() < end) {
      std::this_thread::sleep_for(kPoll);
      left = alive();
      signal_all(signal);  // also to processes started meanwhile
    }
  };
  if (left.empty()) return;
  signal_all(SIGTERM);
  wait_until(grace_s, SIGTERM);
  if (left.empty()) return;
  signal_all(SIGKILL);
  wait_until(kKillWait_s, SIGKILL);
  if (left.empty()) return;
  throw std::runtime_error(
      fmt::format("processes survived SIGKILL in the testbed's namespaces: {}", fmt::join(left, ", ")));
}

}  // namespace cnnpar::testbed::detail
