#include "model/platform.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"
#include "model/gemm_grid.hpp"

namespace cnnpar {

const char* to_string(Topology topology) {
  switch (topology) {
    case Topology::crossbar: return "crossbar";
    case Topology::star: return "star";
    case Topology::fat_tree: return "fat_tree";
    case Topology::torus: return "torus";
    case Topology::dragonfly: return "dragonfly";
  }
  return "?";
}

Topology topology_from_string(const std::string& text) {
  for (auto t : {Topology::crossbar, Topology::star, Topology::fat_tree, Topology::torus, Topology::dragonfly})
    if (text == to_string(t)) return t;
  throw std::invalid_argument("unknown topology (expected crossbar, star, fat_tree, torus or dragonfly)");
}

const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::automatic: return "auto";
    case Algorithm::ring: return "ring";
    case Algorithm::recursive_doubling: return "recursive_doubling";
    case Algorithm::binomial: return "binomial";
    case Algorithm::direct: return "direct";
    case Algorithm::reduce_scatter_allgather: return "reduce_scatter_allgather";
    case Algorithm::recursive_halving: return "recursive_halving";
    case Algorithm::pairwise: return "pairwise";
    case Algorithm::mpich: return "mpich";
  }
  return "?";
}

const char* to_string(DeviceTensors tensors) { return tensors == DeviceTensors::resident ? "resident" : "host"; }
const char* to_string(DeviceMessages messages) { return messages == DeviceMessages::staged ? "staged" : "direct"; }

Algorithm algorithm_from_string(const std::string& text) {
  for (auto a : {Algorithm::automatic, Algorithm::ring, Algorithm::recursive_doubling, Algorithm::binomial,
                 Algorithm::direct, Algorithm::reduce_scatter_allgather, Algorithm::recursive_halving, Algorithm::pairwise,
                 Algorithm::mpich})
    if (text == to_string(a)) return a;
  throw std::invalid_argument(
      "unknown algorithm (expected auto, ring, recursive_doubling, binomial, direct, reduce_scatter_allgather, "
      "recursive_halving, pairwise or mpich)");
}

const char* to_string(KernelClass kernel) {
  switch (kernel) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::im2col: return "im2col";
    case KernelClass::col2im: return "col2im";
    case KernelClass::pool: return "pool";
    case KernelClass::eltwise: return "eltwise";
    case KernelClass::lrn: return "lrn";
    case KernelClass::softmax: return "softmax";
    case KernelClass::update: return "update";
    case KernelClass::other: return "other";
    case KernelClass::conv: return "conv";
    case KernelClass::winograd: return "winograd";
  }
  return "?";
}

KernelClass kernel_class_from_string(const std::string& text) {
  for (KernelClass k : kKernelClasses)
    if (text == to_string(k)) return k;
  throw std::invalid_argument(
      "unknown kernel class (expected gemm, im2col, col2im, pool, eltwise, lrn, softmax, update, other, conv or winograd)");
}

double Processor::efficiency_for(KernelClass kernel) const {
  const auto it = efficiency.find(kernel);
  if (it != efficiency.end()) return it->second;
  // A direct convolution does the work of its GEMM: without a figure of its own it reaches the GEMMs'.
  if (kernel == KernelClass::conv || kernel == KernelClass::winograd) return efficiency_for(KernelClass::gemm);
  return default_efficiency;
}

double Processor::memory_bandwidth_for(KernelClass kernel) const {
  const auto it = kernel_memory_bandwidth_Bps.find(kernel);
  return it != kernel_memory_bandwidth_Bps.end() ? it->second : memory_bandwidth_Bps;
}

double Processor::roofline_s(KernelClass kernel, double flops, double bytes, double speed) const {
  const double compute_s = flops / (peak_flops * efficiency_for(kernel) * speed);
  const double memory_s = bytes / (memory_bandwidth_for(kernel) * speed);
  return std::max(compute_s, memory_s);
}

MessageFactor NetworkSpec::message_factor(double bytes) const {
  // The last piece that starts at or below `bytes` (pieces are sorted, the first at 0).
  const auto after = std::upper_bound(message_factors.begin(), message_factors.end(), bytes,
                                      [](double n, const MessageFactor& piece) { return n < piece.from_bytes; });
  return after == message_factors.begin() ? MessageFactor{} : *(after - 1);
}

double NetworkSpec::message_time_s(double bytes) const {
  return alpha_s() * message_factor(bytes).latency_factor + transfer_time_s(bytes);
}

double NetworkSpec::burst_time_s(double passed_bytes) const {
  return link_peak_bandwidth_Bps > 0 ? passed_bytes / link_peak_bandwidth_Bps : 0.0;
}

double NetworkSpec::transfer_time_s(double bytes) const {
  return bytes / (bandwidth_Bps * message_factor(bytes).bandwidth_factor);
}

StepPricing NetworkSpec::kind_step_pricing(const std::string& kind, double bytes) const {
  const auto found = kind_size_factors.find(kind);
  if (found == kind_size_factors.end() || found->second.empty()) return {};
  const std::vector<KindSizeFactor>& points = found->second;
  const auto pricing = [](const KindSizeFactor& point) { return StepPricing{point.factor, point.step_overhead_s}; };
  if (bytes <= points.front().bytes) return pricing(points.front());
  if (bytes >= points.back().bytes) return pricing(points.back());
  const auto upper = std::upper_bound(points.begin(), points.end(), bytes,
                                      [](double n, const KindSizeFactor& point) { return n < point.bytes; });
  const KindSizeFactor& a = *(upper - 1);
  const KindSizeFactor& b = *upper;
  const double t = std::log2(bytes / a.bytes) / std::log2(b.bytes / a.bytes);
  return StepPricing{.size_factor = a.factor + t * (b.factor - a.factor),
                     .step_overhead_s = a.step_overhead_s + t * (b.step_overhead_s - a.step_overhead_s)};
}

bool DeviceSpec::runs(KernelClass kernel) const { return std::binary_search(kernels.begin(), kernels.end(), kernel); }

double Platform::speed_factor(int rank) const {
  if (rank >= 0 && std::size_t(rank) < resolved_speed_factors_.size()) return resolved_speed_factors_[std::size_t(rank)];
  return 1.0;
}

int Platform::kind_of(int rank) const {
  if (rank < 0) return -1;
  int first = 0;  // first rank of kind k
  for (std::size_t k = 0; k < nodes.kinds.size(); ++k) {
    first += nodes.kinds[k].count;
    if (rank < first) return int(k);
  }
  return -1;
}

const DeviceSpec* Platform::device_of(int rank) const {
  const int kind = kind_of(rank);
  if (kind < 0) return nullptr;
  const auto& device = nodes.kinds[std::size_t(kind)].device;
  return device ? &*device : nullptr;
}

bool Platform::runs_on_device(KernelClass kernel, int rank) const {
  const DeviceSpec* device = device_of(rank);
  return device && device->runs(kernel);
}

void Platform::resolve_speed_factors() {
  resolved_speed_factors_.clear();
  if (!nodes.speed_factors.empty()) {
    resolved_speed_factors_ = nodes.speed_factors;
  } else if (nodes.speed_stddev > 0) {
    // Marques et al. draw node speeds from a Gaussian; a fixed seed keeps studies repeatable.
    std::mt19937_64 generator(nodes.speed_seed);
    std::normal_distribution<double> speed(1.0, nodes.speed_stddev);
    resolved_speed_factors_.resize(std::size_t(std::max(nodes.count, 0)));
    for (double& factor : resolved_speed_factors_) factor = std::clamp(speed(generator), nodes.speed_min, nodes.speed_max);
  }
}

void Platform::resolve_gemm_grid() {
  gemm_grid_ = measured_gemm_flops.empty() ? nullptr : std::make_shared<const GemmGrid>(measured_gemm_flops);
  conv_grid_ = measured_conv_flops.empty() ? nullptr : std::make_shared<const GemmGrid>(measured_conv_flops);
  winograd_grid_ =
      measured_winograd_flops.empty() ? nullptr : std::make_shared<const GemmGrid>(measured_winograd_flops);
}

void Platform::slow_down(int rank, double factor) {
  CNNPAR_ASSERT(rank >= 0 && rank < nodes.count && factor > 0, "slow_down: a node of the platform, a factor > 0");
  if (nodes.speed_factors.empty()) {
    nodes.speed_factors.resize(std::size_t(nodes.count));
    for (int r = 0; r < nodes.count; ++r) nodes.speed_factors[std::size_t(r)] = speed_factor(r);
  }
  nodes.speed_factors[std::size_t(rank)] /= factor;
  resolve_speed_factors();
}

double Platform::kernel_time_s(KernelClass kernel, double flops, double bytes, int rank) const {
  return kernel_time_s(kernel, flops, bytes, rank, bytes);
}

double Platform::kernel_time_s(KernelClass kernel, double flops, double bytes, int rank, double host_link_bytes) const {
  const double speed = speed_factor(rank);
  const int kind = kind_of(rank);
  if (kind < 0) return nodes.roofline_s(kernel, flops, bytes, speed);
  const NodeKind& node = nodes.kinds[std::size_t(kind)];
  if (!node.device) return node.host.roofline_s(kernel, flops, bytes, speed);
  // The whole op, operand transfer included, is the node's work: the speed factor scales both.
  const DeviceSpec& device = *node.device;
  const bool on_device = device.runs(kernel);
  const bool crosses = on_device == (device.tensors == DeviceTensors::host);
  const double link_s = crosses ? host_link_bytes / (device.host_link_Bps * speed) : 0.0;
  const Processor& processor = on_device ? device.processor : node.host;
  return processor.roofline_s(kernel, flops, bytes, speed) + link_s;
}

Algorithm Platform::algorithm_for(const std::string& collective_kind) const {
  auto it = network.algorithms.find(collective_kind);
  return it != network.algorithms.end() ? it->second : Algorithm::automatic;
}

namespace {

constexpr const char* kCollectiveKindNames[] = {"allreduce", "allgather", "reduce_scatter", "bcast", "reduce",
                                                "gather",    "scatter",   "alltoall",       "send"};

// Fractions of peak: below 1e-6 a kernel time is no longer a prediction but an overflow.
double efficiency_fraction(const JsonNode& value) {
  const double efficiency = value.as_number();
  if (!(efficiency >= 1e-6 && efficiency <= 1)) value.fail("an efficiency is a fraction of peak in [1e-6, 1]");
  return efficiency;
}

double speed_factor(const JsonNode& value) {
  const double factor = value.as_number();
  if (!(factor >= 1e-3 && factor <= 1e3)) value.fail("a node speed factor must be in [0.001, 1000]");
  return factor;
}

// A table keyed by kernel class (`efficiency`, `kernel_memory_bandwidth`), each value read by
// `read`; an unknown class fails at its own path.
template <typename Read>
std::map<KernelClass, double> parse_kernel_table(const JsonNode& table, Read read) {
  std::map<KernelClass, double> values;
  for (const std::string& key : table.keys()) {
    const JsonNode value = table.at(key);
    KernelClass kernel;
    try {
      kernel = kernel_class_from_string(key);
    } catch (const std::invalid_argument& error) {
      value.fail(error.what());
    }
    values[kernel] = read(value);
  }
  return values;
}

// The roofline fields of a processor; those `node` leaves out keep the values `processor` has
// (defaults, or the nodes' own for a kind). A per-class table replaces the one before.
void parse_processor(const JsonNode& node, Processor& processor, bool peak_required) {
  if (peak_required || node.has("peak")) processor.peak_flops = node.at("peak").as_quantity(Unit::flop_rate);
  processor.memory_bandwidth_Bps = node.quantity_or("memory_bandwidth", Unit::bandwidth_Bps, processor.memory_bandwidth_Bps);
  if (node.has("default_efficiency")) processor.default_efficiency = efficiency_fraction(node.at("default_efficiency"));
  if (node.has("efficiency"))
    processor.efficiency = parse_kernel_table(node.at("efficiency"), [](const JsonNode& v) { return efficiency_fraction(v); });
  if (node.has("kernel_memory_bandwidth"))
    processor.kernel_memory_bandwidth_Bps = parse_kernel_table(
        node.at("kernel_memory_bandwidth"), [](const JsonNode& v) { return v.as_quantity(Unit::bandwidth_Bps); });
}

DeviceSpec parse_device(const JsonNode& node) {
  node.check_keys({"peak", "memory_bandwidth", "kernel_memory_bandwidth", "efficiency", "default_efficiency", "host_link", "kernels",
                   "tensors", "messages", "call_overhead"});
  DeviceSpec device;
  parse_processor(node, device.processor, true);
  device.host_link_Bps = node.at("host_link").as_quantity(Unit::bandwidth_Bps);
  if (node.has("call_overhead")) device.call_overhead_s = node.at("call_overhead").as_quantity(Unit::time_s, true);
  const JsonNode kernels = node.at("kernels");
  for (const JsonNode& item : kernels.items()) {
    KernelClass kernel;
    try {
      kernel = kernel_class_from_string(item.as_string());
    } catch (const std::invalid_argument& error) {
      item.fail(error.what());
    }
    if (std::find(device.kernels.begin(), device.kernels.end(), kernel) != device.kernels.end())
      item.fail("a kernel class is listed twice");
    device.kernels.push_back(kernel);
  }
  if (device.kernels.empty()) kernels.fail("a device runs at least one kernel class (or leave the device out)");
  std::sort(device.kernels.begin(), device.kernels.end());
  if (node.has("tensors")) {
    const JsonNode tensors = node.at("tensors");
    const std::string text = tensors.as_string();
    if (text == "resident") device.tensors = DeviceTensors::resident;
    else if (text == "host") device.tensors = DeviceTensors::host;
    else tensors.fail("expected resident or host");
  }
  if (node.has("messages")) {
    const JsonNode messages = node.at("messages");
    const std::string text = messages.as_string();
    if (device.tensors == DeviceTensors::host)
      messages.fail("messages apply to resident tensors (with tensors host they leave from host memory)");
    if (text == "staged") device.messages = DeviceMessages::staged;
    else if (text == "direct") device.messages = DeviceMessages::direct;
    else messages.fail("expected staged or direct");
  }
  return device;
}

void parse_kinds(const JsonNode& list, NodeSpec& nodes) {
  const std::vector<JsonNode> items = list.items();
  if (items.empty()) list.fail("needs at least one kind (or leave kinds out)");
  int ranks = 0;  // ranks the kinds so far hold
  for (const JsonNode& item : items) {
    item.check_keys({"name", "count", "peak", "memory_bandwidth", "kernel_memory_bandwidth", "efficiency", "default_efficiency", "device"});
    NodeKind kind;
    kind.name = item.at("name").as_string();
    if (kind.name.empty()) item.at("name").fail("a kind needs a name");
    for (const NodeKind& other : nodes.kinds)
      if (other.name == kind.name) item.at("name").fail("two kinds have this name");
    const JsonNode count = item.at("count");
    kind.count = int(count.as_int_in(1, limits::kMaxPlatformNodes));
    ranks += kind.count;
    if (ranks > nodes.count)
      count.fail(fmt::format("the kinds up to this one hold {} nodes, more than nodes.count ({})", ranks, nodes.count));
    if (&item == &items.back() && ranks < nodes.count)
      count.fail(fmt::format("the kinds hold {} nodes, fewer than nodes.count ({})", ranks, nodes.count));
    kind.host = nodes;  // the nominal node's roofline, for the fields the kind leaves out
    parse_processor(item, kind.host, false);
    if (item.has("device")) kind.device = parse_device(item.at("device"));
    nodes.kinds.push_back(std::move(kind));
  }
}

// A speed factor's bound: the range the factors themselves may take.
double speed_bound(const JsonNode& value) {
  const double bound = value.as_number();
  if (!(bound >= 1e-3 && bound <= 1e3)) value.fail("a bound of the node speeds must be in [0.001, 1000]");
  return bound;
}

// nodes.inner: {"mode": "dag", "threads": T, "conv_efficiency": {"gemm": [...], "dag": [...]}}.
void parse_inner(const JsonNode& node, NodeSpec& nodes) {
  node.check_keys({"mode", "threads", "conv_efficiency"});
  InnerThreads& inner = nodes.inner;
  const JsonNode mode = node.at("mode");
  inner.mode = parse_inner_mode(mode.as_string(), mode.file(), mode.path());
  const JsonNode threads = node.at("threads");
  inner.threads = int(threads.as_int_in(1, limits::kMaxDimension));
  if (inner.threads > nodes.cores)
    threads.fail(fmt::format("a rank's threads are at most the node's cores ({})", nodes.cores));
  const JsonNode table = node.at("conv_efficiency");
  for (const std::string& name : table.keys()) {
    const JsonNode list = table.at(name);
    std::vector<double>& efficiency = inner.conv_efficiency[parse_inner_mode(name, list.file(), list.path())];
    for (const JsonNode& value : list.items()) {
      const double fraction = value.as_number();
      if (!(fraction > 0 && fraction <= 1)) value.fail("an efficiency is a fraction of the threads' peak, in (0, 1]");
      efficiency.push_back(fraction);
    }
  }
  const auto found = inner.conv_efficiency.find(inner.mode);
  if (found == inner.conv_efficiency.end() || int(found->second.size()) < inner.threads)
    table.fail(fmt::format("needs an efficiency of mode {} for 1..{} threads", to_string(inner.mode), inner.threads));
}

void parse_nodes(const JsonNode& node, NodeSpec& nodes) {
  node.check_keys({"count", "cores", "peak", "memory_bandwidth", "kernel_memory_bandwidth", "efficiency", "default_efficiency",
                   "speed_factors", "speed_stddev", "speed_seed", "speed_min", "speed_max", "kinds", "call_overhead",
                   "image_parallel_kernels", "core_bandwidth", "inner"});
  nodes.count = int(node.at("count").as_int_in(1, limits::kMaxPlatformNodes));
  nodes.cores = int(node.has("cores") ? node.at("cores").as_int_in(1, limits::kMaxDimension) : 1);
  parse_processor(node, nodes, true);
  if (node.has("speed_factors")) {
    const JsonNode factors = node.at("speed_factors");
    if (factors.raw().is_array() && factors.raw().size() != std::size_t(nodes.count))
      factors.fail(fmt::format("needs one factor per node ({} nodes)", nodes.count));
    for (const JsonNode& factor : factors.items()) nodes.speed_factors.push_back(speed_factor(factor));
    if (int(nodes.speed_factors.size()) != nodes.count)
      node.at("speed_factors").fail(fmt::format("needs one factor per node ({} nodes)", nodes.count));
  }
  if (node.has("speed_stddev")) {
    nodes.speed_stddev = node.at("speed_stddev").as_nonnegative_number();
    if (nodes.speed_stddev > 10) node.at("speed_stddev").fail("speed_stddev must be in [0, 10] (a fraction of the mean speed)");
  }
  if (node.has("speed_seed")) nodes.speed_seed = std::uint64_t(node.at("speed_seed").as_nonnegative_int());
  if (node.has("speed_min")) nodes.speed_min = speed_bound(node.at("speed_min"));
  if (node.has("speed_max")) {
    const JsonNode value = node.at("speed_max");
    nodes.speed_max = speed_bound(value);
    if (nodes.speed_max < nodes.speed_min)
      value.fail(fmt::format("speed_max must be >= speed_min ({})", nodes.speed_min));
  }
  if (node.has("kinds")) parse_kinds(node.at("kinds"), nodes);
  if (node.has("call_overhead")) nodes.call_overhead_s = node.at("call_overhead").as_quantity(Unit::time_s, true);
  if (node.has("image_parallel_kernels")) nodes.image_parallel_kernels = node.at("image_parallel_kernels").as_bool();
  if (node.has("core_bandwidth")) nodes.core_bandwidth_Bps = node.at("core_bandwidth").as_quantity(Unit::bandwidth_Bps, true);
  if (node.has("inner")) parse_inner(node.at("inner"), nodes);
}

double message_factor_value(const JsonNode& value) {
  const double factor = value.as_number();
  if (!(factor >= 1e-3 && factor <= 1e3)) value.fail("a message factor must be in [0.001, 1000]");
  return factor;
}

void parse_message_factors(const JsonNode& list, NetworkSpec& network) {
  for (const JsonNode& item : list.items()) {
    item.check_keys({"from", "latency", "bandwidth"});
    MessageFactor piece;
    piece.from_bytes = item.at("from").as_quantity(Unit::size_bytes, true);
    if (network.message_factors.empty() && piece.from_bytes != 0)
      item.at("from").fail("the first piece must start at 0B");
    if (!network.message_factors.empty() && !(piece.from_bytes > network.message_factors.back().from_bytes))
      item.at("from").fail("pieces must be in increasing order of size");
    if (item.has("latency")) piece.latency_factor = message_factor_value(item.at("latency"));
    if (item.has("bandwidth")) piece.bandwidth_factor = message_factor_value(item.at("bandwidth"));
    network.message_factors.push_back(piece);
  }
}

/** @throws InputError at `value` unless `kind` is a collective kind name (a key of `value`'s table). */
void check_collective_kind(const std::string& kind, const JsonNode& value) {
  const auto* const end = std::end(kCollectiveKindNames);
  if (std::find(std::begin(kCollectiveKindNames), end, kind) == end)
    throw InputError(value.file(), value.path(), kind,
                     "unknown collective kind (expected allreduce, allgather, reduce_scatter, bcast, reduce, "
                     "gather, scatter, alltoall or send)");
}

void parse_kind_size_factors(const JsonNode& table, NetworkSpec& network) {
  for (const std::string& kind : table.keys()) {
    const JsonNode list = table.at(kind);
    check_collective_kind(kind, list);
    std::vector<KindSizeFactor>& points = network.kind_size_factors[kind];
    for (const JsonNode& item : list.items()) {
      item.check_keys({"bytes", "factor", "step_overhead"});
      KindSizeFactor point;
      point.bytes = item.at("bytes").as_quantity(Unit::size_bytes);
      if (!points.empty() && !(point.bytes > points.back().bytes))
        item.at("bytes").fail("points must be in increasing order of size");
      const JsonNode factor = item.at("factor");
      point.factor = factor.as_number();
      if (!(point.factor >= kMinKindSizeFactor && point.factor <= kMaxKindSizeFactor))
        factor.fail(fmt::format("a size factor must be in [{:g}, {:g}]", kMinKindSizeFactor, kMaxKindSizeFactor));
      if (item.has("step_overhead")) point.step_overhead_s = item.at("step_overhead").as_quantity(Unit::time_s, true);
      points.push_back(point);
    }
    if (points.empty()) list.fail("a kind's size factors need at least one point");
  }
}

void parse_network(const JsonNode& node, NetworkSpec& network) {
  node.check_keys({"topology", "bandwidth", "latency", "overhead", "algorithms", "collective_concurrency",
                   "fat_tree", "torus", "dragonfly", "element_bytes", "message_factors", "kind_size_factors",
                   "reduction_rate", "busy_bandwidth_fraction", "injection_contention", "link_burst",
                   "link_peak_bandwidth"});
  if (node.has("topology")) {
    const JsonNode value = node.at("topology");
    try {
      network.topology = topology_from_string(value.as_string());
    } catch (const std::invalid_argument& error) {
      value.fail(error.what());
    }
  }
  network.bandwidth_Bps = node.at("bandwidth").as_quantity(Unit::bandwidth_Bps);
  network.latency_s = node.at("latency").as_quantity(Unit::time_s, true);
  if (node.has("overhead")) network.overhead_s = node.at("overhead").as_quantity(Unit::time_s, true);
  if (node.has("algorithms")) {
    const JsonNode table = node.at("algorithms");
    for (const std::string& key : table.keys()) {
      const JsonNode value = table.at(key);
      check_collective_kind(key, value);
      try {
        network.algorithms[key] = algorithm_from_string(value.as_string());
      } catch (const std::invalid_argument& error) {
        value.fail(error.what());
      }
    }
  }
  if (node.has("collective_concurrency"))
    network.collective_concurrency = int(node.at("collective_concurrency").as_int_in(1, limits::kMaxIndex));
  if (node.has("element_bytes")) network.element_bytes = int(node.at("element_bytes").as_int_in(1, 64));
  if (node.has("message_factors")) parse_message_factors(node.at("message_factors"), network);
  if (node.has("kind_size_factors")) parse_kind_size_factors(node.at("kind_size_factors"), network);
  if (node.has("reduction_rate")) network.reduction_rate_Bps = node.at("reduction_rate").as_quantity(Unit::bandwidth_Bps, true);
  if (node.has("busy_bandwidth_fraction")) {
    const JsonNode value = node.at("busy_bandwidth_fraction");
    network.busy_bandwidth_fraction = value.as_number();
    if (!(network.busy_bandwidth_fraction > 0 && network.busy_bandwidth_fraction <= 1))
      value.fail("busy_bandwidth_fraction must be in (0, 1]");
  }
  if (node.has("injection_contention")) network.injection_contention = node.at("injection_contention").as_bool();
  if (node.has("link_burst")) network.link_burst_bytes = node.at("link_burst").as_quantity(Unit::size_bytes, true);
  if (node.has("link_peak_bandwidth"))
    network.link_peak_bandwidth_Bps = node.at("link_peak_bandwidth").as_quantity(Unit::bandwidth_Bps, true);
  network.fat_tree = node.string_or("fat_tree", "");
  network.torus = node.string_or("torus", "");
  network.dragonfly = node.string_or("dragonfly", "");
  const auto require = [&](const char* key, const std::string& value) {
    if (value.empty())
      throw InputError(node.file(), node.path() + "/" + key, "(missing)",
                       fmt::format("topology {} needs \"{}\"", to_string(network.topology), key));
  };
  if (network.topology == Topology::fat_tree) require("fat_tree", network.fat_tree);
  if (network.topology == Topology::torus) require("torus", network.torus);
  if (network.topology == Topology::dragonfly) require("dragonfly", network.dragonfly);
}

}  // namespace

Platform parse_platform(const nlohmann::json& document, const std::string& file) {
  const JsonNode root(document, file);
  root.check_keys({"name", "source", "nodes", "network", "comm_compute_slowdown", "comm_start_wait_max",
                   "iteration_overhead", "input_per_image", "calibration"});
  Platform platform;
  platform.name = root.at("name").as_string();
  platform.source = root.string_or("source", "");
  parse_nodes(root.at("nodes"), platform.nodes);
  parse_network(root.at("network"), platform.network);
  if (root.has("comm_compute_slowdown"))
    platform.comm_compute_slowdown = root.at("comm_compute_slowdown").as_number_in(0, 100);
  if (root.has("comm_start_wait_max"))
    platform.comm_start_wait_max_s = root.at("comm_start_wait_max").as_quantity(Unit::time_s, true);
  if (root.has("iteration_overhead"))
    platform.iteration_overhead_s = root.at("iteration_overhead").as_quantity(Unit::time_s, true);
  if (root.has("input_per_image"))
    platform.input_per_image_s = root.at("input_per_image").as_quantity(Unit::time_s, true);
  if (root.has("calibration")) {
    const JsonNode calibration = root.at("calibration");
    calibration.check_keys({"op_seconds", "gemm_flops", "conv_flops", "winograd_flops", "notes"});
    if (calibration.has("op_seconds")) {
      const JsonNode table = calibration.at("op_seconds");
      for (const std::string& key : table.keys()) platform.measured_op_s[key] = table.at(key).as_quantity(Unit::time_s, true);
    }
    // Every grid is keyed by GEMM shapes (a convolution by the GEMM of the same work).
    const auto read_grid = [&](const char* name, std::map<std::string, double>& rates) {
      if (!calibration.has(name)) return;
      const JsonNode table = calibration.at(name);
      for (const std::string& key : table.keys()) {
        const JsonNode value = table.at(key);
        const double rate = value.as_quantity(Unit::flop_rate);
        try {
          parse_gemm_key(key, rate);
        } catch (const std::invalid_argument& error) {
          throw InputError(value.file(), value.path(), key, error.what());
        }
        rates[key] = rate;
      }
    };
    read_grid("gemm_flops", platform.measured_gemm_flops);
    read_grid("conv_flops", platform.measured_conv_flops);
    read_grid("winograd_flops", platform.measured_winograd_flops);
  }
  platform.resolve_speed_factors();
  platform.resolve_gemm_grid();
  return platform;
}

namespace {

nlohmann::json processor_to_json(const Processor& processor) {
  nlohmann::json efficiency = nlohmann::json::object();
  for (const auto& [kernel, value] : processor.efficiency) efficiency[to_string(kernel)] = value;
  nlohmann::json out = {{"peak", fmt::format("{}f", processor.peak_flops)},
                         {"memory_bandwidth", fmt::format("{}Bps", processor.memory_bandwidth_Bps)},
                         {"default_efficiency", processor.default_efficiency},
                         {"efficiency", efficiency}};
  if (!processor.kernel_memory_bandwidth_Bps.empty()) {
    nlohmann::json bandwidth = nlohmann::json::object();
    for (const auto& [kernel, value] : processor.kernel_memory_bandwidth_Bps) bandwidth[to_string(kernel)] = fmt::format("{}Bps", value);
    out["kernel_memory_bandwidth"] = bandwidth;
  }
  return out;
}

nlohmann::json kind_to_json(const NodeKind& kind) {
  nlohmann::json out = processor_to_json(kind.host);
  out["name"] = kind.name;
  out["count"] = kind.count;
  if (kind.device) {
    nlohmann::json device = processor_to_json(kind.device->processor);
    device["host_link"] = fmt::format("{}Bps", kind.device->host_link_Bps);
    device["tensors"] = to_string(kind.device->tensors);
    if (kind.device->tensors == DeviceTensors::resident) device["messages"] = to_string(kind.device->messages);
    if (kind.device->call_overhead_s > 0) device["call_overhead"] = fmt::format("{}s", kind.device->call_overhead_s);
    device["kernels"] = nlohmann::json::array();
    for (KernelClass kernel : kind.device->kernels) device["kernels"].push_back(to_string(kernel));
    out["device"] = device;
  }
  return out;
}

}  // namespace

nlohmann::json to_json(const Platform& platform) {
  nlohmann::json nodes = processor_to_json(platform.nodes);
  nodes["count"] = platform.nodes.count;
  nodes["cores"] = platform.nodes.cores;
  if (!platform.nodes.speed_factors.empty()) nodes["speed_factors"] = platform.nodes.speed_factors;
  if (platform.nodes.speed_stddev > 0) {
    nodes["speed_stddev"] = platform.nodes.speed_stddev;
    nodes["speed_seed"] = platform.nodes.speed_seed;
  }
  if (platform.nodes.speed_min != NodeSpec{}.speed_min) nodes["speed_min"] = platform.nodes.speed_min;
  if (std::isfinite(platform.nodes.speed_max)) nodes["speed_max"] = platform.nodes.speed_max;
  if (!platform.nodes.kinds.empty()) {
    nodes["kinds"] = nlohmann::json::array();
    for (const NodeKind& kind : platform.nodes.kinds) nodes["kinds"].push_back(kind_to_json(kind));
  }
  nlohmann::json network = {{"topology", to_string(platform.network.topology)},
                            {"bandwidth", fmt::format("{}Bps", platform.network.bandwidth_Bps)},
                            {"latency", fmt::format("{}s", platform.network.latency_s)},
                            {"overhead", fmt::format("{}s", platform.network.overhead_s)},
                            {"collective_concurrency", platform.network.collective_concurrency}};
  nlohmann::json algorithms = nlohmann::json::object();
  for (const auto& [kind, algorithm] : platform.network.algorithms) algorithms[kind] = to_string(algorithm);
  network["algorithms"] = algorithms;
  if (platform.network.element_bytes != NetworkSpec{}.element_bytes)
    network["element_bytes"] = platform.network.element_bytes;
  if (!platform.network.fat_tree.empty()) network["fat_tree"] = platform.network.fat_tree;
  if (!platform.network.torus.empty()) network["torus"] = platform.network.torus;
  if (!platform.network.dragonfly.empty()) network["dragonfly"] = platform.network.dragonfly;
  if (!platform.network.message_factors.empty()) {
    network["message_factors"] = nlohmann::json::array();
    for (const MessageFactor& piece : platform.network.message_factors)
      network["message_factors"].push_back({{"from", fmt::format("{}B", piece.from_bytes)},
                                            {"latency", piece.latency_factor},
                                            {"bandwidth", piece.bandwidth_factor}});
  }
  if (!platform.network.kind_size_factors.empty()) {
    nlohmann::json table = nlohmann::json::object();
    for (const auto& [kind, points] : platform.network.kind_size_factors) {
      table[kind] = nlohmann::json::array();
      for (const KindSizeFactor& point : points) {
        nlohmann::json item = {{"bytes", fmt::format("{}B", point.bytes)}, {"factor", point.factor}};
        if (point.step_overhead_s > 0) item["step_overhead"] = fmt::format("{}s", point.step_overhead_s);
        table[kind].push_back(std::move(item));
      }
    }
    network["kind_size_factors"] = table;
  }
  if (platform.network.reduction_rate_Bps > 0)
    network["reduction_rate"] = fmt::format("{}Bps", platform.network.reduction_rate_Bps);
  if (platform.network.busy_bandwidth_fraction != 1)
    network["busy_bandwidth_fraction"] = platform.network.busy_bandwidth_fraction;
  if (platform.network.injection_contention) network["injection_contention"] = true;
  if (platform.network.link_burst_bytes > 0) network["link_burst"] = fmt::format("{}B", platform.network.link_burst_bytes);
  if (platform.network.link_peak_bandwidth_Bps > 0)
    network["link_peak_bandwidth"] = fmt::format("{}Bps", platform.network.link_peak_bandwidth_Bps);
  if (platform.nodes.call_overhead_s > 0) nodes["call_overhead"] = fmt::format("{}s", platform.nodes.call_overhead_s);
  if (platform.nodes.image_parallel_kernels) nodes["image_parallel_kernels"] = true;
  if (platform.nodes.core_bandwidth_Bps > 0) nodes["core_bandwidth"] = fmt::format("{}Bps", platform.nodes.core_bandwidth_Bps);
  if (const InnerThreads& inner = platform.nodes.inner; inner.threads > 0) {
    nlohmann::json efficiency = nlohmann::json::object();
    for (const auto& [mode, fractions] : inner.conv_efficiency) efficiency[to_string(mode)] = fractions;
    nodes["inner"] = {{"mode", to_string(inner.mode)}, {"threads", inner.threads}, {"conv_efficiency", efficiency}};
  }
  nlohmann::json document = {{"name", platform.name},
                             {"source", platform.source},
                             {"nodes", nodes},
                             {"network", network},
                             {"comm_compute_slowdown", platform.comm_compute_slowdown}};
  if (platform.comm_start_wait_max_s > 0)
    document["comm_start_wait_max"] = fmt::format("{}s", platform.comm_start_wait_max_s);
  if (platform.iteration_overhead_s > 0) document["iteration_overhead"] = fmt::format("{}s", platform.iteration_overhead_s);
  if (platform.input_per_image_s > 0) document["input_per_image"] = fmt::format("{}s", platform.input_per_image_s);
  if (!platform.measured_op_s.empty() || !platform.measured_gemm_flops.empty() || !platform.measured_conv_flops.empty() ||
      !platform.measured_winograd_flops.empty()) {
    document["calibration"] = {{"gemm_flops", platform.measured_gemm_flops}};
    if (!platform.measured_conv_flops.empty()) document["calibration"]["conv_flops"] = platform.measured_conv_flops;
    if (!platform.measured_winograd_flops.empty())
      document["calibration"]["winograd_flops"] = platform.measured_winograd_flops;
    if (!platform.measured_op_s.empty()) document["calibration"]["op_seconds"] = platform.measured_op_s;
  }
  return document;
}

}  // namespace cnnpar
