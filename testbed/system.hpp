#pragma once
// Internal to testbed/: the names a testbed gives its parts, and the ip/tc/proc calls that make,
// read and remove them. Not part of the API (testbed.hpp).
#include <map>
#include <string>
#include <vector>

#include "base/child_process.hpp"
#include "testbed/testbed.hpp"

namespace cnnpar::testbed::detail {

inline constexpr const char* kSubnetPrefix = "10.87.0.";  ///< + (K + 1) for node K
inline constexpr const char* kSwitchAddress = "10.87.0.254";
inline constexpr int kPrefixLength = 24;
inline constexpr const char* kBridge = "br0";
inline constexpr const char* kNodeDevice = "eth0";
/** ifalias of a testbed's bridge, + its name: finds a testbed whose state folder is gone. */
inline constexpr const char* kBridgeMark = "cnnpar-testbed:";

/** True for the names check_name accepts. */
bool valid_name(const std::string& name);

std::string switch_namespace(const std::string& name);
std::string node_namespace(const std::string& name, int index);
std::string node_address(int index);
std::string switch_port(int index);
std::string state_folder(const std::string& name);

/** Runs argv; @throws std::runtime_error "`ARGV` failed (status N): STDERR" unless it exits 0. */
CapturedOutput run_ok(const std::vector<std::string>& argv);

/** Every named network namespace (`ip netns list`). */
std::vector<std::string> all_namespaces();
/** The namespaces of testbed `name` that exist: <name>-sw and <name>-n<K>, by name. */
std::vector<std::string> testbed_namespaces(const std::string& name);
/** K of "<name>-n<K>", -1 for any other namespace name. */
int node_index(const std::string& name, const std::string& namespace_name);
/** The processes in each of `namespaces` (by /proc/PID/ns/net), this one excluded. */
std::map<std::string, std::vector<Process>> processes_in(const std::vector<std::string>& namespaces);
/** SIGTERM to every process in `namespaces`, SIGKILL to those left after `grace_s`.
 *  @throws std::runtime_error naming the processes that survived both. */
void end_processes(const std::vector<std::string>& namespaces, double grace_s);

}  // namespace cnnpar::testbed::detail
