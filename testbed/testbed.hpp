#pragma once
// A real, bandwidth-shaped cluster on this machine: one network namespace per node, joined by a
// bridge in a "switch" namespace, each node's link shaped in both directions with tbf (and, where
// the kernel has netem, delayed). MPI ranks started through launcher() run one per node and talk
// TCP across the shaped links. Needs root; starts ip, tc and mpiexec as child processes.
//
//   switch namespace <name>-sw: bridge br0 (10.87.0.254/24), veths p0 .. p<N-1> on it
//   node namespace  <name>-n<K>: eth0 (10.87.0.<K+1>/24), hostname <name>-n<K> for its ranks
//   tbf rate R on eth0 (upload) and on p<K> (download); netem delay D above each when asked
//
// State lives in /run/cnnpar-testbed/<name>/ (state.json, hosts, launch.sh), created before the
// first namespace and removed after the last, so every testbed that exists is found by list().
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/child_process.hpp"

namespace cnnpar::testbed {

inline constexpr int kMaxNodes = 64;  ///< one /24 of addresses, and more than 2 cores can drive
inline constexpr std::size_t kMaxNameLength = 32;  ///< <name>-n63 stays a short hostname
inline constexpr const char* kStateRoot = "/run/cnnpar-testbed";
inline constexpr double kMinBandwidth_Bps = 125e3;  ///< 1 Mbit/s
inline constexpr double kMaxBandwidth_Bps = 12.5e9;  ///< 100 Gbit/s
/** TCP congestion control of every node namespace, whatever the host's default. A new
 *  namespace takes the host's, and this machine's is bbr: through `tbf` with its 256 KiB
 *  bucket, bbr's transfers both ways at once stalled now and then (chained 8 MiB allreduces at
 *  100 Mbit/s: 0.70 s at best, 0.80 s mean; allgather 0.85 s), and with cubic every one took
 *  0.70 s, the rate. Linux's default, and what a cluster runs unless tuned. */
inline constexpr const char* kTcpCongestionControl = "cubic";
/** Every node namespace keeps a TCP connection's window across idle periods
 *  (net.ipv4.tcp_slow_start_after_idle = 0). With the restart on, each step of a collective
 *  that turns to another peer starts that connection from 10 segments again, and tbf's queue
 *  holds its RTT at 15-50 ms, so the ramp costs a share that changes from launch to launch:
 *  chained 32 MiB allreduces on 4 nodes at 100 Mbit/s took 4.21-4.67 s after a launch's first
 *  call (7 of 15 above 4.3 s); without it every one took 4.203-4.219 s, the rate. A cluster's
 *  microsecond RTTs make that ramp negligible there. */
inline constexpr bool kTcpSlowStartAfterIdle = false;
inline constexpr double kMaxLatency_s = 1;
inline constexpr double kMinBurst_bytes = 2048;  ///< more than one 1500-byte frame
inline constexpr double kMaxBurst_bytes = 64.0 * 1024 * 1024;

struct Spec {
  std::string name = "cnnpar";      ///< namespaces <name>-sw, <name>-n0 .. <name>-n<N-1>
  int nodes = 2;                    ///< 1 .. kMaxNodes
  double bandwidth_Bps = 125e6;     ///< per direction of every node link (bytes/s)
  double latency_s = 0;             ///< one-way latency added per link end; 0 = the veth's own (> 0 needs netem)
  double burst_bytes = 256 * 1024;  ///< tbf bucket (64 KiB stalls TCP with 64 KiB GSO packets)
};

/** @throws InputError(origin, path, name, reason) unless `name` is 1 to kMaxNameLength letters,
 *  digits, '-' or '_' starting with a letter or digit (it becomes namespace names and hostnames). */
void check_name(const std::string& name, const std::string& origin, const std::string& path);
/** Checks every field of `spec`. Its keys are name, nodes, bandwidth, latency and burst, as in
 *  state.json and on the command line, so `key_prefix` "--" names flags and "/testbed/" JSON
 *  paths. @throws InputError(origin, key_prefix + key, value, reason). */
void check_spec(const Spec& spec, const std::string& origin, const std::string& key_prefix);
/** {"name", "nodes", "bandwidth": "125000000Bps", "latency": "0s", "burst": "262144B"}: unit
 *  strings that parse back to the same doubles. */
nlohmann::json to_json(const Spec& spec);
/** The inverse of to_json, checked with check_spec. @throws InputError(origin, path + "/KEY", ...). */
Spec spec_from_json(const nlohmann::json& document, const std::string& origin, const std::string& path = "");

/** True when this kernel has the netem qdisc (probed once per process in an unnamed network
 *  namespace of its own, so nothing global is touched). */
bool netem_available();
/** @throws InputError(origin, path, "uid N", reason) unless running as root (euid 0);
 *  InputError(origin, path, TOOL, reason) when ip, tc or unshare is not on PATH. */
void require_root(const std::string& origin, const std::string& path);

/** One node as the testbed made it. */
struct Node {
  int index = 0;
  std::string namespace_name;  ///< <name>-n<K>
  std::string address;         ///< 10.87.0.<K+1>
  std::string hostname;        ///< what its ranks see (MPICH tells hosts apart by it)
  std::string switch_port;     ///< p<K>, the veth end in the switch namespace
};

class Testbed {
 public:
  /** Makes the testbed `spec` describes, after destroying any testbed of that name. A latency
   *  without netem is not an error: it is recorded and latency_shaped() says false. On any
   *  failure, and on SIGINT or SIGTERM meanwhile (InterruptedError), everything made so far is
   *  destroyed before the exception leaves.
   *  @throws InputError for a bad spec ("testbed", "/KEY") or when not root;
   *  @throws std::runtime_error naming the ip or tc command that failed. */
  static Testbed create(const Spec& spec);
  /** The complete testbed named `name`, from its state file; nullopt when there is none.
   *  @throws std::runtime_error for one that is incomplete or damaged (destroy it). */
  static std::optional<Testbed> attach(const std::string& name);

  /** Reshapes every link, both ends: each end's qdiscs are removed and added anew, so no run
   *  should be in flight. A latency without netem is recorded as in create(). On SIGINT or
   *  SIGTERM meanwhile, every link is reshaped first, then InterruptedError is thrown.
   *  @throws InputError("testbed <name>", "/bandwidth" or "/latency", ...) for values out of range. */
  void reshape(double bandwidth_Bps, double latency_s);

  const Spec& spec() const { return spec_; }
  /** spec().latency_s is on the links (false when it is 0 or the kernel has no netem). */
  bool latency_shaped() const { return latency_shaped_; }
  std::vector<Node> nodes() const;
  std::string switch_namespace() const;
  std::string state_folder() const;
  std::string hosts_file() const;      ///< "ADDRESS:1" per node, in node order
  std::string launcher_script() const; ///< Hydra's ssh stand-in: "-x ADDRESS CMD..." -> CMD on that node

  /** argv prefix that starts ranks on the nodes; the caller appends "-n P prog args...":
   *  {ip netns exec <sw> mpiexec -launcher ssh -launcher-exec <script> -iface br0 -f <hosts>
   *   -genv UCX_TLS tcp,self -genv UCX_RNDV_THRESH inf}. Ranks fill the nodes in order, one per
   *  node, so P must not exceed spec().nodes. UCX_TLS keeps UCX off shared memory (which would
   *  bypass the shaping); UCX_RNDV_THRESH=inf avoids UCX's half-duplex rendezvous over TCP. */
  std::vector<std::string> launcher() const;

  /** Removes everything: processes in its namespaces (SIGTERM, SIGKILL after a grace), the
   *  namespaces (their veths and qdiscs go with them) and the state folder. Idempotent. */
  void destroy();

 private:
  Testbed(Spec spec, bool latency_shaped) : spec_(std::move(spec)), latency_shaped_(latency_shaped) {}
  void write_state(bool complete) const;
  Spec spec_;
  bool latency_shaped_ = false;
};

/** Destroys whatever exists of the testbed named `name` (as Testbed::destroy), with or without
 *  a state file: for what a SIGKILL left behind. Idempotent. @throws InputError for a bad name. */
void destroy(const std::string& name);

/** Owns a testbed for a scope: creates it on construction and destroys it on destruction, also
 *  when unwinding from an exception or from InterruptedError after Ctrl-C. While it lives,
 *  SIGINT and SIGTERM are deferred (DeferredInterrupts, base/child_process.hpp): the children
 *  of run_child still get them and report InterruptedError, nothing else is cut half-way, and
 *  one that arrived between children surfaces at the next run_child or, once the testbed is
 *  gone, when the Session ends. Construct and destroy it on one thread. */
class Session {
 public:
  enum class IfExists {
    replace,  ///< destroy a testbed of that name and create `spec` afresh
    reuse,    ///< attach to it as it is (its spec may differ from `spec`) and keep it afterwards
  };
  /** `keep`: leave a testbed this session created in place afterwards.
   *  @throws as Testbed::create and Testbed::attach. */
  explicit Session(const Spec& spec, IfExists if_exists = IfExists::replace, bool keep = false);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Testbed& testbed() { return *testbed_; }
  const Testbed& testbed() const { return *testbed_; }
  /** False when an existing testbed was reused. */
  bool created() const { return created_; }

 private:
  DeferredInterrupts deferred_;  ///< first made, last ended: Ctrl-C waits until the testbed is gone
  std::optional<Testbed> testbed_;
  bool created_ = false;
  bool keep_ = false;
};

/** A process inside one of a testbed's namespaces. */
struct Process {
  int pid = 0;
  std::string command;  ///< its command line, arguments separated by blanks
};

/** One direction of a link as the kernel holds it; rate 0 = not shaped. */
struct Shaping {
  double rate_Bps = 0;   ///< tbf rate
  double burst_bytes = 0;
  double delay_s = 0;    ///< netem delay, 0 = none
};

struct NodeStatus {
  int index = 0;
  std::string namespace_name;
  std::string address;   ///< of eth0, "" when none
  Shaping upload;        ///< eth0 in the node namespace
  Shaping download;      ///< p<K> in the switch namespace
  std::vector<Process> processes;
};

/** What exists of a testbed, read from the system (not from its state file alone). */
struct Status {
  std::string name;
  std::optional<Spec> spec;  ///< from state.json, when readable
  bool complete = false;     ///< state.json says creation finished
  bool latency_shaped = false;
  bool state_folder = false;
  bool switch_namespace = false;
  std::string switch_address;  ///< of br0
  std::vector<Process> switch_processes;
  std::vector<NodeStatus> nodes;  ///< every <name>-n<K> namespace found, by K
  bool netem_available = false;
  /** Anything of it is left: a namespace or the state folder. */
  bool exists() const { return state_folder || switch_namespace || !nodes.empty(); }
};

/** @throws InputError("testbed", "/name", name, reason) for a name that is not a testbed name. */
Status status(const std::string& name);
nlohmann::json to_json(const Status& status);
/** A human table: nodes, addresses, shaped rate each way, latency, processes inside. */
std::string format_status(const Status& status);

/** Names of the testbeds on this machine: state folders, and switch namespaces whose bridge
 *  carries the testbed's mark (found even when its state folder was removed by hand). */
std::vector<std::string> list();

}  // namespace cnnpar::testbed
