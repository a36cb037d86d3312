#pragma once
// Platform description: nodes, network and compute model.
// Quantities are read from unit strings in SimGrid's spelling; stored in SI units.
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/inner_mode.hpp"

namespace cnnpar {

class GemmGrid;  // model/gemm_grid.hpp

enum class Topology { crossbar, star, fat_tree, torus, dragonfly };
/** Collective algorithms; `automatic` lets the engine pick (JSON spelling "auto"), `mpich`
 *  picks what MPICH 4.0's default selection runs (system/collective_algorithm.hpp). */
enum class Algorithm {
  automatic,
  ring,
  recursive_doubling,
  binomial,
  direct,
  reduce_scatter_allgather,  ///< allreduce: recursive halving, then recursive doubling (Rabenseifner)
  recursive_halving,         ///< reduce_scatter
  pairwise,                  ///< reduce_scatter: P - 1 rounds, each a block to member + k
  mpich
};

const char* to_string(Topology topology);
const char* to_string(Algorithm algorithm);
Topology topology_from_string(const std::string& text);    ///< @throws std::invalid_argument
Algorithm algorithm_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** Kernel families with their own efficiency (fraction of peak) in the roofline model. `conv`
 *  is a direct convolution (forward, backward data or weights of a conv layer without a column
 *  matrix: `--conv direct`), `winograd` the same work by Winograd's F(4x4, 3x3) transforms
 *  (`--conv winograd`; its FLOPs are still the direct convolution's, so its rate is an
 *  effective one). */
enum class KernelClass { gemm, im2col, col2im, pool, eltwise, lrn, softmax, update, other, conv, winograd };
inline constexpr KernelClass kKernelClasses[] = {KernelClass::gemm,    KernelClass::im2col, KernelClass::col2im,
                                                 KernelClass::pool,    KernelClass::eltwise, KernelClass::lrn,
                                                 KernelClass::softmax, KernelClass::update, KernelClass::other,
                                                 KernelClass::conv,    KernelClass::winograd};
const char* to_string(KernelClass kernel);
KernelClass kernel_class_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** One processor in the roofline model: a node's CPU or a device attached to it. */
struct Processor {
  double peak_flops = 1e12;           ///< peak FP32 FLOP/s of one node or device
  double memory_bandwidth_Bps = 1e11; ///< bytes per second of one node or device
  /** fraction of peak per kernel class (roofline); missing classes use default_efficiency */
  std::map<KernelClass, double> efficiency;
  double default_efficiency = 0.5;
  /** bytes per second per kernel class where it differs from memory_bandwidth_Bps: a strided
   *  gather (im2col) streams slower than an element-wise pass (calibration fits each class
   *  it times). JSON `kernel_memory_bandwidth`. */
  std::map<KernelClass, double> kernel_memory_bandwidth_Bps;

  /** efficiency[kernel], else default_efficiency (conv and winograd: else the gemm one). */
  double efficiency_for(KernelClass kernel) const;
  /** kernel_memory_bandwidth_Bps of the class, else memory_bandwidth_Bps (bytes per second). */
  double memory_bandwidth_for(KernelClass kernel) const;
  /** Roofline seconds on a node of relative speed `speed`:
   *  max(flops / (peak · efficiency · speed), bytes / (memory_bandwidth_for(kernel) · speed)). */
  double roofline_s(KernelClass kernel, double flops, double bytes, double speed = 1) const;
};

/** Where a device's layers keep their tensors. `resident`: weights, activations and gradients
 *  stay in device memory (cuDNN, cuBLAS frameworks); an op of a class the device does not run
 *  moves its operands over the host link. `host`: they live in host memory and every device op
 *  moves its operands over the host link (a framework that copies per call, as Matlab's GPU
 *  arrays around one convolution). */
enum class DeviceTensors { resident, host };
/** How messages of a rank whose tensors are resident reach the network. `staged`: the MPI
 *  library sees host memory, so every collective and send is copied device -> host before and
 *  host -> device after. `direct`: GPU-aware MPI or peer-to-peer copies; the network's links are
 *  the device-to-device path and the host link is not paid. */
enum class DeviceMessages { staged, direct };
const char* to_string(DeviceTensors tensors);
const char* to_string(DeviceMessages messages);

/** An accelerator of a node kind (Marques et al.'s GPUs, Veeriah and Modi's): the kernel
 *  classes in `kernels` run on it. */
struct DeviceSpec {
  Processor processor;
  double host_link_Bps = 1e10;        ///< host <-> device bytes per second (PCIe)
  std::vector<KernelClass> kernels;   ///< classes that run on the device, sorted, no repeats
  DeviceTensors tensors = DeviceTensors::resident;
  DeviceMessages messages = DeviceMessages::staged;  ///< used with resident tensors only
  /** seconds every op on the device pays on top of its roofline: the kernel's launch and the
   *  library call around it. JSON `call_overhead`. */
  double call_overhead_s = 0;
  bool runs(KernelClass kernel) const;
  /** Tensors resident and messages staged: collectives pay the host link. */
  bool stages_messages() const { return tensors == DeviceTensors::resident && messages == DeviceMessages::staged; }
};

/** Some of the nodes with their own processor (Marques et al. mix CPU and GPU laptops). Ranks
 *  map to kinds in list order: the first `count` ranks are kind 0, the next kind 1, ... */
struct NodeKind {
  std::string name;
  int count = 1;
  Processor host;                     ///< fields a kind leaves out are the nodes.* ones
  std::optional<DeviceSpec> device;
};

/** How the nodes run a conv layer's forward and weight-gradient GEMM ops (cnnpar-run --inner,
 *  --threads) and what calibration measured of each mode. With threads > 0 those ops take
 *  flops / (peak · threads / cores · conv_efficiency[mode][threads - 1] · speed) + call
 *  overhead, and with dag the conv layers' im2col ops take 0 s (the tasks extract their own
 *  areas, inside the GEMM ops); threads 0 = priced as every other GEMM. JSON `inner`. */
struct InnerThreads {
  InnerMode mode = InnerMode::gemm;
  int threads = 0;  ///< T, the threads of one rank (1..cores); 0 = not priced this way
  /** Per mode, entry T - 1: the fraction of T cores' peak (peak · T / cores) a conv layer's
   *  forward and weight-gradient work reaches on T threads (with dag, its area extraction
   *  included), in (0, 1]. */
  std::map<InnerMode, std::vector<double>> conv_efficiency;
};

/** The nodes; the Processor part is the nominal node (peak, memory bandwidth, efficiencies). */
struct NodeSpec : Processor {
  int count = 1;                      ///< nodes available
  int cores = 1;                      ///< cores per node
  /** relative speed of each node (1 = nominal); empty = all 1 */
  std::vector<double> speed_factors;
  /** Marques et al.: per-node speeds drawn from N(1, speed_stddev) with this seed, clipped to
   *  [speed_min, speed_max] */
  double speed_stddev = 0;
  std::uint64_t speed_seed = 1;
  double speed_min = 0.05;
  double speed_max = std::numeric_limits<double>::infinity();
  /** empty = every node is the one above; else their counts sum to `count` */
  std::vector<NodeKind> kinds;
  /** seconds every compute op priced by the roofline pays on top of it (library call, thread
   *  fork/join, packing); calibrated or measured rates already include it. JSON `call_overhead`. */
  double call_overhead_s = 0;
  /** The node's software runs the non-GEMM kernels (im2col, col2im, pooling, element-wise;
   *  not the update, a loop over parameters) as a loop over the op's images, one core each (Lee et al.: "non-kernel loops are
   *  parallelized using OpenMP"): an op of b < cores images gets b/cores of the node.
   *  JSON `image_parallel_kernels`. */
  bool image_parallel_kernels = false;
  /** Bytes per second one core streams on its own (a single-thread STREAM figure); 0 = the
   *  node's memory bandwidth divided evenly, memory_bandwidth / cores. An op on k of the
   *  node's cores (min(images, cores) for image-parallel kernels, else all) gets
   *  min(memory_bandwidth, k · core_bandwidth): a few busy cores are held back by their own
   *  concurrency, all of them by the node's DRAM. JSON `core_bandwidth`. */
  double core_bandwidth_Bps = 0;
  InnerThreads inner;
};

/** One piece of a size-dependent message model, like SMPI's calibrated `lat-factor` and
 *  `bw-factor`: a message of n >= from_bytes bytes (up to the next piece's from_bytes) takes
 *  latency·latency_factor + n / (bandwidth·bandwidth_factor) seconds. */
struct MessageFactor {
  double from_bytes = 0;
  double latency_factor = 1;
  double bandwidth_factor = 1;
};

/** One point of a collective kind's size factor: the steps of a collective of that kind and
 *  `bytes` bytes (Collective::bytes) are priced as messages `factor` times their own size,
 *  each started `step_overhead_s` later. A kind's implementation (MPI's, or the executor's
 *  own point-to-point steps) moves its bytes more or less efficiently than one link model
 *  prices its steps, and its small sizes start up slower than one message does (MPICH's
 *  allgather of 1-16 KiB on 4 ranks over TCP: 1.13 ms, flat, where two messages take 0.4-0.6);
 *  calibration measures by how much, kind by kind. */
struct KindSizeFactor {
  double bytes = 0;            ///< collective size (bytes)
  double factor = 1;           ///< multiplier on the bytes of every step
  double step_overhead_s = 0;  ///< seconds added to every step's start-up, >= 0
};
/** How the steps of one collective are priced: its kind's size factor and step overhead at
 *  its size (NetworkSpec::kind_step_pricing). */
struct StepPricing {
  double size_factor = 1;      ///< multiplier on the bytes of every step
  double step_overhead_s = 0;  ///< seconds added to every step's start-up
};
/** The range a platform file accepts for KindSizeFactor::factor. */
inline constexpr double kMinKindSizeFactor = 0.01, kMaxKindSizeFactor = 100;

struct NetworkSpec {
  Topology topology = Topology::crossbar;
  double bandwidth_Bps = 1.25e9;  ///< bandwidth of one node link (bytes per second)
  double latency_s = 1e-6;        ///< one-way latency of a link (seconds)
  double overhead_s = 0;          ///< per-message software overhead (seconds), added to latency
  /** collective algorithm per kind name ("allreduce", "allgather", ...); missing = automatic */
  std::map<std::string, Algorithm> algorithms;
  int collective_concurrency = 1;  ///< collectives a rank's communication engine runs at once
  /** bytes of one element as the platform's software sends it (the Marques et al. code sends
   *  doubles: 8); prices volumes stated in elements, e.g. Eq. 2's upload */
  int element_bytes = 4;  ///< see kExecutorElementBytes
  // Topology parameters (SimGrid spellings); unused for crossbar/star.
  std::string fat_tree;    ///< e.g. "2;16,8;1,4;1,1" (levels;down;up;parallel links)
  std::string torus;       ///< e.g. "4,4,8"
  std::string dragonfly;   ///< e.g. "3,4;4,3;5,1;2"
  /** Sorted by from_bytes, the first at 0; empty = factors of 1 (pure α-β). */
  std::vector<MessageFactor> message_factors;
  /** Per kind name ("allreduce", ...): points sorted by bytes. Between two points the factor
   *  and the step overhead are linear in log2(bytes); before the first and after the last they
   *  are theirs. A kind not listed has factor 1 and no step overhead. */
  std::map<std::string, std::vector<KindSizeFactor>> kind_size_factors;
  /** Bytes per second a rank adds when a collective step reduces what it received
   *  (allreduce, reduce_scatter, reduce); 0 = the arithmetic is free. */
  double reduction_rate_Bps = 0;
  /** Fraction of its bandwidth a collective gets while one of its members computes: a
   *  polling executor advances posted collectives only at its poll points (1 = progress at
   *  full speed, as with a communication thread; see comm_compute_slowdown for its cost). */
  double busy_bandwidth_fraction = 1;
  /** Concurrent collectives of a rank (collective_concurrency > 1) share its injection link:
   *  each gets bandwidth / (collectives transferring) when it starts (analytic engine; the
   *  SimGrid engine always shares links). */
  bool injection_contention = false;
  /** Depth (bytes) of the token bucket shaping each node link in each direction, as `tc tbf`
   *  does (the validation testbed: 256 KiB); 0 = a plain link. A link idle for t seconds
   *  passes min(link_burst, left + t·bandwidth) bytes as a burst before its rate applies
   *  (system/link_bucket.hpp). JSON `link_burst`. */
  double link_burst_bytes = 0;
  /** Bytes per second the bucket's bytes pass at: the unshaped path beneath the shaper (on
   *  the testbed the veths and bridge, bound by the cores); 0 = at once. JSON
   *  `link_peak_bandwidth`. A burst saves time only where this is faster than the bandwidth. */
  double link_peak_bandwidth_Bps = 0;
  /** Seconds `passed_bytes` of a message take as a burst: passed_bytes / link_peak_bandwidth. */
  double burst_time_s(double passed_bytes) const;
  /** Start-up cost of one point-to-point message: alpha = latency + overhead. */
  double alpha_s() const { return latency_s + overhead_s; }
  /** The piece of message_factors for an `bytes`-byte message (factors of 1 when empty). */
  MessageFactor message_factor(double bytes) const;
  /** Seconds of one `bytes`-byte message: alpha·latency_factor + transfer_time_s(bytes). */
  double message_time_s(double bytes) const;
  /** The part of message_time_s that grows with the bytes: bytes/(bandwidth·bandwidth_factor). */
  double transfer_time_s(double bytes) const;
  /** The size factor and step overhead of a collective of kind `kind` ("allreduce", ...) and
   *  `bytes` bytes (kind_size_factors; factor 1 and no overhead for a kind not listed). */
  StepPricing kind_step_pricing(const std::string& kind, double bytes) const;
};

/** The MPI executor trains FP32 and sends FP32: cnnpar-run and `cnnpar run` set a loaded
 *  platform's network.element_bytes to this, so their schedules size what they really move. */
inline constexpr int kExecutorElementBytes = 4;

struct Platform {
  std::string name;
  std::string source;  ///< where the numbers come from
  NodeSpec nodes;
  NetworkSpec network;
  /** compute runs this many times slower while the rank's communication progresses (0 = none) */
  double comm_compute_slowdown = 0;
  /** Seconds (at most) a collective posted to an idle progress thread waits for a core while
   *  its rank goes on computing: the thread starts it when the rank's next compute op ends or
   *  when the OS scheduler hands it a slice after this long, whichever comes first
   *  (system/op_time.hpp: comm_start_wait_s). 0 = the thread has a core of its own.
   *  JSON `comm_start_wait_max`. */
  double comm_start_wait_max_s = 0;
  /** seconds every rank spends at the start of each iteration outside the schedule's ops
   *  (framework bookkeeping, data loading); JSON `iteration_overhead`. */
  double iteration_overhead_s = 0;
  /** seconds every rank spends per image it reads from the dataset at the start of each
   *  iteration, on top of iteration_overhead (system/op_time.hpp: iteration_overhead_s);
   *  JSON `input_per_image` */
  double input_per_image_s = 0;
  /** measured seconds per op label (`cnnpar calibrate --op-seconds`, or by hand): an explicit
   *  override of the op's modelled time, whatever its batch */
  std::map<std::string, double> measured_op_s;
  /** measured GEMM rate (FLOP/s) per key "gemm MxNxK" or "gemm MxNxK phase" (the grid of
   *  `cnnpar calibrate`, interpolated by system/gemm_rate.hpp) */
  std::map<std::string, double> measured_gemm_flops;
  /** measured rate (FLOP/s) of direct convolutions (kernel class conv), keyed like
   *  measured_gemm_flops by the GEMM shape of the same work ("gemm MxNxK phase"): the
   *  `calibration.conv_flops` grid of `cnnpar calibrate --conv` */
  std::map<std::string, double> measured_conv_flops;
  /** the same for Winograd convolutions (kernel class winograd): `calibration.winograd_flops` */
  std::map<std::string, double> measured_winograd_flops;

  /** Speed factor of `rank`'s node (heterogeneity); 1 when none is given. */
  double speed_factor(int rank) const;
  /** Index into nodes.kinds of `rank`'s node; -1 without kinds (or past the last node). */
  int kind_of(int rank) const;
  /** True when `kernel` runs on a device on `rank`'s node. */
  bool runs_on_device(KernelClass kernel, int rank) const;
  /** The device of `rank`'s node, or nullptr. */
  const DeviceSpec* device_of(int rank) const;
  /** Roofline time (seconds) of `flops` FLOPs touching `bytes` bytes of memory on `rank`'s
   *  node, divided by its speed factor. `host_link_bytes` more cross the host link when the op
   *  runs on the other side of it from the tensors: on a device whose tensors live on the
   *  host, or on the host of a node whose device keeps them resident (the 4-argument form
   *  moves `bytes`). */
  double kernel_time_s(KernelClass kernel, double flops, double bytes, int rank) const;
  double kernel_time_s(KernelClass kernel, double flops, double bytes, int rank, double host_link_bytes) const;
  /** Algorithm configured for a collective kind ("allreduce", ...). */
  Algorithm algorithm_for(const std::string& collective_kind) const;

 private:
  friend Platform parse_platform(const nlohmann::json&, const std::string&);
  std::vector<double> resolved_speed_factors_;  ///< filled on parse from factors or stddev
 public:
  /** Recomputes per-node speed factors (call after changing nodes.* by hand). */
  void resolve_speed_factors();
  /** Rebuilds the interpolation grids of measured_gemm_flops, _conv_flops and _winograd_flops
   *  (parse_platform calls it; call it after changing a table by hand, else only exact keys
   *  are found).
   *  @throws std::invalid_argument for a key that is not "gemm MxNxK[ phase]" or a rate <= 0. */
  void resolve_gemm_grid();
  /** The grid of measured_gemm_flops as last resolved; nullptr when none. */
  const GemmGrid* gemm_grid() const { return gemm_grid_.get(); }
  /** The grid of measured_conv_flops as last resolved (by resolve_gemm_grid); nullptr when none. */
  const GemmGrid* conv_grid() const { return conv_grid_.get(); }
  /** The grid of measured_winograd_flops as last resolved; nullptr when none. */
  const GemmGrid* winograd_grid() const { return winograd_grid_.get(); }

 private:
  std::shared_ptr<const GemmGrid> gemm_grid_;  ///< immutable, shared by copies of the platform
  std::shared_ptr<const GemmGrid> conv_grid_;
  std::shared_ptr<const GemmGrid> winograd_grid_;
 public:
  /** Makes node `rank` (< nodes.count) `factor` times slower: its speed factor is divided by
   *  `factor` (a run's --slowdown). The other nodes keep theirs, Gaussian-drawn ones included. */
  void slow_down(int rank, double factor);
};

/** @throws InputError naming file, JSON path and value. */
Platform parse_platform(const nlohmann::json& document, const std::string& file);
nlohmann::json to_json(const Platform& platform);

}  // namespace cnnpar
