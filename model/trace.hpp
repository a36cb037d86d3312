#pragma once
// The Trace every back-end emits (docs/design.md "Trace"): per rank, compute op intervals, collective
// timestamps and iteration marks, in seconds from a common origin. Self-contained: each
// record carries the op's label, layer and phase so traces from different back-ends can
// be compared without the Schedule.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/schedule.hpp"

namespace cnnpar {

struct ComputeRecord {
  int op = -1;          ///< index of the op in the rank's program
  std::string label;
  int layer = -1;
  Phase phase = Phase::forward;
  KernelClass kernel = KernelClass::other;
  double flops = 0;
  double start_s = 0;   ///< seconds from the origin
  double end_s = 0;
};

struct CollectiveRecord {
  int collective = -1;  ///< id in the Schedule
  std::string label;
  CollectiveKind kind = CollectiveKind::allreduce;
  double bytes = 0;
  int iteration = 0;
  double posted_s = 0;      ///< the rank posted it
  double comm_start_s = 0;  ///< the rank's communication engine started it
  double comm_end_s = 0;    ///< it completed on this rank
  double wait_start_s = 0;  ///< the compute stream began waiting for it
  double wait_end_s = 0;    ///< the compute stream resumed
};

struct MarkRecord {
  int iteration = -1;
  double time_s = 0;
};

/** A parameter server's merge of one push (ServeEntry), in the order the server applied them.
 *  The global weights start at version 0; each merge makes the next version (all the pushes of
 *  a `together` serve share one). Staleness = version - 1 - base_version: how many merges of
 *  other pushes the worker's increment missed. */
struct MergeRecord {
  int worker = -1;
  int round = 0;
  int base_version = 0;  ///< the global version the worker's increment was trained from
  int version = 0;       ///< the global version the merge made
  double start_s = 0;
  double end_s = 0;
  int staleness() const { return version - 1 - base_version; }
};

struct RankTrace {
  int rank = 0;
  std::vector<ComputeRecord> compute;        ///< in program order (a server's merges in the order applied)
  std::vector<CollectiveRecord> collectives; ///< in posting order (a server's pushes in arrival order)
  std::vector<MarkRecord> marks;
  std::vector<MergeRecord> merges;           ///< a parameter server's; empty on other ranks
};

struct Trace {
  std::string engine;          ///< "analytic", "simgrid", "real"
  nlohmann::json metadata;     ///< strategy, options, network, platform, batch, ranks, mode...
  int warmup_iterations = 0;
  std::vector<RankTrace> ranks;
};

nlohmann::json to_json(const Trace& trace);
/** @throws InputError naming file, JSON path and value. */
Trace trace_from_json(const nlohmann::json& document, const std::string& file);

/** How much of the schedule a back-end copies into a trace. */
enum class TraceDetail {
  full,    ///< records with their labels, metadata from the schedule
  timing,  ///< no labels, metadata only server_ranks: what metrics without per-layer or
           ///< per-collective detail read (a trace reduced to a sweep row and dropped)
};

/** The record of compute op `op_index` of a program, times left for the back-end to fill. */
ComputeRecord describe_compute(const Op& op, int op_index, TraceDetail detail = TraceDetail::full);
/** The same written into a default record: a trace's vector grown in place, sparing a
 *  temporary's move (measurable in a sweep's replays). */
inline void describe_compute_into(ComputeRecord& record, const Op& op, int op_index, TraceDetail detail) {
  record.op = op_index;
  if (detail == TraceDetail::full) record.label = op.label;
  record.layer = op.layer;
  record.phase = op.phase;
  record.kernel = op.kernel;
  record.flops = op.flops;
}
/** The record of a posted collective, times left for the back-end to fill. */
CollectiveRecord describe_collective(const Collective& collective, TraceDetail detail = TraceDetail::full);
/** The same written into a default record. */
inline void describe_collective_into(CollectiveRecord& record, const Collective& collective, TraceDetail detail) {
  record.collective = collective.id;
  if (detail == TraceDetail::full) record.label = collective.label;
  record.kind = collective.kind;
  record.bytes = collective.bytes;
  record.iteration = collective.iteration;
}

/** The 1-minute load average a measured trace's metadata records for the start of its run
 *  (cnnpar-run's "load_average": [1, 5, 15 min]); none when it records none. */
std::optional<double> run_load_average(const Trace& trace);

/** What one collective id carries: its payload and the network layers it moves. */
struct CollectiveLayers {
  Payload payload = Payload::none;
  std::vector<int> layers;
};
/** metadata.collective_layers, by collective id; empty when the trace records none (traces
 *  written before it). Input from a file, so checked.
 *  @throws InputError naming /metadata/collective_layers/... and the value for a malformed entry,
 *  an unknown payload or a negative layer index (or one from layer_count on, when given). */
std::vector<CollectiveLayers> read_collective_layers(const Trace& trace,
                                                     std::optional<std::int64_t> layer_count = std::nullopt);

/** Helper for back-ends: a Trace with one RankTrace per rank and the schedule's metadata. */
Trace make_empty_trace(const Schedule& schedule, const std::string& engine);
/** make_empty_trace without metadata.collective_layers (an entry per collective), which
 *  add_collective_layers adds: a trace that is only reduced to metrics never reads it. */
Trace make_empty_trace_without_layers(const Schedule& schedule, const std::string& engine,
                                      TraceDetail detail = TraceDetail::full);
void add_collective_layers(Trace& trace, const Schedule& schedule);

}  // namespace cnnpar
