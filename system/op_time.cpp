#include "system/op_time.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "system/gemm_rate.hpp"

namespace cnnpar {

namespace {

bool priced_by_rate(KernelClass kernel) {
  return kernel == KernelClass::gemm || kernel == KernelClass::conv || kernel == KernelClass::winograd;
}

/** The measured rates of a rate-priced class and their grid. */
std::pair<const std::map<std::string, double>*, const GemmGrid*> rate_table(const Platform& platform,
                                                                             KernelClass kernel) {
  if (kernel == KernelClass::conv) return {&platform.measured_conv_flops, platform.conv_grid()};
  if (kernel == KernelClass::winograd) return {&platform.measured_winograd_flops, platform.winograd_grid()};
  return {&platform.measured_gemm_flops, platform.gemm_grid()};
}

/** The calibrated FLOP rate of a GEMM op, or of a convolution by the GEMM shape of its work, if
 *  the platform measured one (see op_time_s). */
std::optional<GemmRate> calibrated_gemm_rate(const Platform& platform, const Op& op) {
  const auto [rates, grid] = rate_table(platform, op.kernel);
  if (rates->empty()) return std::nullopt;
  for (const std::string& key : {gemm_key(op.gemm, op.phase), op.gemm.to_string()}) {
    const auto found = rates->find(key);
    if (found != rates->end() && found->second > 0) return GemmRate{found->second, false};
  }
  if (grid) return gemm_rate(*grid, op.gemm, op.phase);
  return std::nullopt;
}

/** The processor of `rank`'s node: its kind's host, else the nominal node. */
const Processor& host_processor(const Platform& platform, int rank) {
  const int kind = platform.kind_of(rank);
  return kind < 0 ? static_cast<const Processor&>(platform.nodes) : platform.nodes.kinds[std::size_t(kind)].host;
}

/** Roofline seconds of `op` on the cores of its node it keeps busy (docs/formats.md "Compute
 *  time of an op"): k = min(images, cores) for an image-parallel kernel, else every core; k/cores
 *  of the peak and min(memory_bandwidth, k · core_bandwidth) bytes/s, divided by the speed. */
double host_roofline_s(const Platform& platform, const Op& op, int rank) {
  const NodeSpec& nodes = platform.nodes;
  // A loop over images keeps only min(images, cores) cores busy.
  const bool image_loop = nodes.image_parallel_kernels && op.kernel != KernelClass::gemm &&
                          op.kernel != KernelClass::update && op.batch > 0 && op.batch < nodes.cores;
  const double idle_factor = image_loop ? double(nodes.cores) / double(op.batch) : 1.0;  // cores / busy cores
  // Without a per-core figure every core streams memory_bandwidth / cores: the whole roofline
  // scales with the busy cores.
  if (!(nodes.core_bandwidth_Bps > 0))
    return platform.kernel_time_s(op.kernel, op.flops, op.bytes, rank, 0.0) * idle_factor;
  const Processor& host = host_processor(platform, rank);
  const double busy_cores = image_loop ? double(op.batch) : double(nodes.cores);
  const double compute_s = platform.kernel_time_s(op.kernel, op.flops, 0, rank) * idle_factor;
  const double memory_Bps = std::min(host.memory_bandwidth_for(op.kernel), busy_cores * nodes.core_bandwidth_Bps);
  return std::max(compute_s, op.bytes / (memory_Bps * platform.speed_factor(rank)));
}

/** A conv layer's forward or weight-gradient op on the run's T threads (nodes.inner), or
 *  nullopt for any other op or without nodes.inner: its GEMM at T/cores of the peak times the
 *  measured efficiency of the mode; with dag its im2col ops are inside the GEMM op's tasks. */
std::optional<double> inner_conv_s(const Platform& platform, const Op& op, int rank) {
  const InnerThreads& inner = platform.nodes.inner;
  if (inner.threads == 0 || !op.conv_layer || (op.phase != Phase::forward && op.phase != Phase::backward_weight))
    return std::nullopt;
  if (op.kernel == KernelClass::im2col) return inner.mode == InnerMode::dag ? std::optional<double>(0.0) : std::nullopt;
  if (op.kernel != KernelClass::gemm) return std::nullopt;
  const Processor& host = host_processor(platform, rank);
  const double efficiency = inner.conv_efficiency.at(inner.mode).at(std::size_t(inner.threads - 1));
  const double threads_peak_flops = host.peak_flops * double(inner.threads) / double(platform.nodes.cores);
  return (op.flops / (threads_peak_flops * efficiency) + platform.nodes.call_overhead_s) / platform.speed_factor(rank);
}

/** Bytes an op's operands take over the host link: a GEMM moves A (m×k), B (k×n) and C (m×n)
 *  in FP32; any other op the bytes it touches. */
double operand_link_bytes(const Op& op) {
  const GemmShape& g = op.gemm;
  const bool has_shape = op.kernel == KernelClass::gemm && g.m > 0 && g.n > 0 && g.k > 0;
  return has_shape ? 4.0 * (double(g.m) * double(g.k) + double(g.k) * double(g.n) + double(g.m) * double(g.n)) : op.bytes;
}

/** Seconds of an op on its node's CPU, its operands in host memory. */
double host_op_s(const Platform& platform, const Op& op, int rank) {
  if (!platform.measured_op_s.empty()) {
    const auto found = platform.measured_op_s.find(op.label);
    if (found != platform.measured_op_s.end()) return found->second / platform.speed_factor(rank);
  }
  if (const auto seconds = inner_conv_s(platform, op, rank)) return *seconds;
  if (priced_by_rate(op.kernel))
    if (const auto rate = calibrated_gemm_rate(platform, op))
      return op.flops / (rate->rate_flops * platform.speed_factor(rank));
  return host_roofline_s(platform, op, rank) + platform.nodes.call_overhead_s / platform.speed_factor(rank);
}

}  // namespace

double op_time_s(const Platform& platform, const Op& op, int rank) {
  // Calibration measures the nodes' CPUs; an op on a device takes the device's roofline.
  const DeviceSpec* device = platform.device_of(rank);
  if (device && device->runs(op.kernel))
    return platform.kernel_time_s(op.kernel, op.flops, op.bytes, rank, operand_link_bytes(op)) +
           device->call_overhead_s / platform.speed_factor(rank);
  const double host_s = host_op_s(platform, op, rank);
  // A host op of a node whose device keeps the tensors reads and writes them over the link.
  if (device && device->tensors == DeviceTensors::resident)
    return host_s + operand_link_bytes(op) / (device->host_link_Bps * platform.speed_factor(rank));
  return host_s;
}

bool input_arrives_by_collective(const Schedule& schedule, int rank) {
  for (const Collective& c : schedule.collectives)
    if (c.payload == Payload::activations && !c.layers.empty() && c.layers.front() == 0 &&
        (c.kind == CollectiveKind::send || c.kind == CollectiveKind::bcast) && c.root != rank &&
        std::find(c.group.begin(), c.group.end(), rank) != c.group.end())
      return true;
  return false;
}

std::int64_t input_images(const Schedule& schedule, int rank) {
  if (input_arrives_by_collective(schedule, rank)) return 0;
  const Program& program = schedule.programs.at(std::size_t(rank));
  if (!program.partitions.empty()) return program.partitions.front().batch.count;
  for (const Op& op : program.ops)
    if (op.kind == OpKind::compute && op.layer >= 0 && op.phase == Phase::forward) return op.batch;
  return schedule.ranks() > 0 ? schedule.global_batch / schedule.ranks() : 0;
}

double iteration_overhead_s(const Platform& platform, std::int64_t images) {
  return std::max(0.0, platform.iteration_overhead_s) + std::max(0.0, platform.input_per_image_s) * double(images);
}

double iteration_overhead_s(const Platform& platform, const Schedule& schedule, int rank) {
  return iteration_overhead_s(platform, input_images(schedule, rank));
}

double comm_start_wait_s(const Platform& platform, const Schedule& schedule, int rank, std::size_t post_index) {
  const double max_s = platform.comm_start_wait_max_s;
  if (!(max_s > 0)) return 0;
  const auto& ops = schedule.programs.at(std::size_t(rank)).ops;
  for (std::size_t i = post_index + 1; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (op.kind == OpKind::wait) return 0;
    if (op.kind == OpKind::compute) return std::min(op_time_s(platform, op, rank), max_s);
    if (op.kind == OpKind::mark && i + 1 < ops.size())
      return std::min(iteration_overhead_s(platform, schedule, rank), max_s);
  }
  return 0;
}

std::vector<std::string> calibration_warnings(const Platform& platform, const Schedule& schedule) {
  std::vector<std::string> warnings;
  if (platform.measured_gemm_flops.empty()) return warnings;
  std::set<std::string> outside, unmeasured_conv;
  for (int rank = 0; rank < schedule.ranks(); ++rank)
    for (const Op& op : schedule.programs[std::size_t(rank)].ops) {
      if (op.kind != OpKind::compute || !priced_by_rate(op.kernel) || platform.runs_on_device(op.kernel, rank))
        continue;
      if (platform.measured_op_s.count(op.label)) continue;
      if (op.kernel != KernelClass::gemm && rate_table(platform, op.kernel).first->empty()) {
        unmeasured_conv.insert(fmt::format("{} ({})", op.label, to_string(op.kernel)));
        continue;
      }
      const auto rate = calibrated_gemm_rate(platform, op);
      if (rate && rate->out_of_range) outside.insert(gemm_key(op.gemm, op.phase));
    }
  if (!unmeasured_conv.empty())
    warnings.push_back(fmt::format(
        "{} convolution op(s) (e.g. {}) have no calibrated rate on {}: the roofline of their kernel class "
        "prices them; calibrate with the same --conv",
        unmeasured_conv.size(), *unmeasured_conv.begin(), platform.name));
  if (!outside.empty())
    warnings.push_back(fmt::format(
        "{} GEMM shape(s) lie outside the calibrated grid of {} (e.g. {}): their rates are those of the nearest "
        "measured shape; calibrate with this network and a global batch at least as large",
        outside.size(), platform.name, *outside.begin()));
  return warnings;
}

}  // namespace cnnpar
