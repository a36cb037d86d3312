#pragma once
// Per-component times of the two worker-group strategies, from a Trace (any back-end), in the
// split their papers report. Every time is a per-iteration value on the ranks named, then the
// median over the measured iterations (analysis/metrics.hpp: an op belongs to the iteration
// whose [previous mark, mark) holds its start, a collective to the one holding its wait).
//
// veeriah (Veeriah & Modi, Tables 1-5), K conv workers on ranks 0..K-1, fc workers K..2K-1:
//  * conv_iteration_s      Table 1: mark to mark, max over the conv ranks;
//  * fc_pass_s             Table 2: compute seconds, max over the fc ranks;
//  * fc_activation_wait_s  Table 3: wait (wait_end − wait_start) for the conv→fc sends of the
//                          first fc layer's input (kind send, payload activations), summed per
//                          fc rank, max over them;
//  * fc1_merge_s           Table 4: T_c of the fc-group allgather of activations that feeds the
//                          first gathered layer after the first fc layer (the merge of fc1's
//                          outputs), summed per fc rank (one per pass in schemes b/c), max;
//  * fc1_error_reduce_s    Table 5: T_c of the fc-group allreduce of the errors of the layer
//                          before the first fc layer, summed per fc rank, max.
// Collectives are recognised by kind, payload and layers (metadata.collective_layers), never by
// label; the first fc layer is the layer the activation sends carry.
//
// conv_split (Marques et al., Figs. 2 and 4), rank 0 the master:
//  * comm_s                "Comm. time": Σ T_b of the master's collectives (what it waits for
//                          while a transfer is in progress);
//  * conv_s                "Conv. time": per conv layer the slowest rank's seconds in that
//                          layer's forward, backward-data and backward-weight ops, summed
//                          over the conv layers;
//  * comp_s                "Comp. time": the master's other compute (non-conv layers and every
//                          update, the conv layers' included);
//  * conv_per_rank_s       each rank's conv-op seconds;
//  * conv_spread           max/min − 1 of conv_per_rank_s over the ranks with conv work (the
//                          master holds a share too), 0 with fewer than two;
//  * workers_conv_spread   the same over the workers only (ranks 1..P−1): the balance of the
//                          shares without the master, which keeps at least one map of every
//                          layer whatever its share;
//  * upload_elements       Eq. 2 at the trace's global batch (needs the network);
//  * upload_bytes          upload_elements × the platform's network.element_bytes.
// The conv layers are those named in the trace's options.kernel_counts.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"
#include "model/trace.hpp"

namespace cnnpar {

struct VeeriahComponents {
  int conv_workers = 0;
  double conv_iteration_s = 0;
  double fc_pass_s = 0;
  double fc_activation_wait_s = 0;
  double fc1_merge_s = 0;
  double fc1_error_reduce_s = 0;
};

struct ConvSplitComponents {
  double comm_s = 0;
  double conv_s = 0;
  double comp_s = 0;
  std::vector<double> conv_per_rank_s;
  double conv_spread = 0;
  double workers_conv_spread = 0;
  bool has_upload = false;  ///< false without the network
  double upload_elements = 0;
  int element_bytes = 4;
  double upload_bytes = 0;
};

/** param_server (BPT-CNN, Sec. 3.3 and 5.4), over the workers (every rank but the server):
 *  * sync_wait_s        Eq. 8, T_SGWU: over the measured rounds i and workers j, the sum of
 *                       max_j' t_j'^(i) - t_j^(i), t the worker's compute seconds in round i;
 *  * run_s              the execution time: the last worker's last mark (s from the start);
 *  * epoch_s            run_s / K, K the nominal iterations (options.iterations): IDPA's
 *                       K' = K + ceil(A/2) - 1 rounds carry K epochs of samples (Eq. 6), so
 *                       time per round would flatter it;
 *  * workload_balance   Fig. 15(b)'s measure, defined here: per round the mean over the workers
 *                       of their compute seconds divided by the largest, the median over the
 *                       measured rounds (1 = every worker as busy as the busiest);
 *  * volume_bytes       Eq. 11's traffic as it ran: the bytes of every push and reply the
 *                       server moved, every round (2·c_w·m·K when every round pushes);
 *  * merges             pushes the server merged (AGWU: one per push; SGWU: m per round);
 *  * staleness_mean, staleness_max  per merge, the merges of other pushes the worker's
 *                       increment missed (version - 1 - base_version, Trace MergeRecord);
 *  * staleness          the list, in the order the server applied them. */
struct ParameterServerComponents {
  int workers = 0;
  double sync_wait_s = 0;
  double run_s = 0;
  double epoch_s = 0;
  double workload_balance = 1;
  double volume_bytes = 0;
  int merges = 0;
  double staleness_mean = 0;
  int staleness_max = 0;
  std::vector<int> staleness;
};

/** @throws InputError (file "<trace>") for a trace without measured iterations or with
 *  malformed metadata.collective_layers / options.conv_workers. */
VeeriahComponents veeriah_components(const Trace& trace);
/** `network` may be null (then no upload volume). @throws InputError as above. */
ConvSplitComponents conv_split_components(const Trace& trace, const Network* network, int element_bytes);

/** @throws InputError (file "<trace>") for a trace without a server or measured rounds. */
ParameterServerComponents parameter_server_components(const Trace& trace);

nlohmann::json to_json(const VeeriahComponents& components);
nlohmann::json to_json(const ParameterServerComponents& components);
nlohmann::json to_json(const ConvSplitComponents& components);

/** True for the strategies that register a component split (veeriah, conv_split, param_server). */
bool has_components(const std::string& strategy);

/** The components of the trace's strategy (metadata.strategy) as JSON, with "strategy" set;
 *  nothing for a strategy without components. */
std::optional<nlohmann::json> components_json(const Trace& trace, const Network* network, int element_bytes);

/** One component value for a table: seconds (a key ending in _s) and bytes (_bytes) with a
 *  unit, other numbers with 4 significant digits. */
std::string format_component_value(const std::string& key, double value);
/** The numeric keys of components objects (arrays and text left out): the papers' order
 *  (Veeriah's Tables 1-5, Marques' Comm./Conv./Comp. and Eq. 2), then any other key. */
std::vector<std::string> component_keys(const std::vector<const nlohmann::json*>& objects);

/** Two components objects (components_json) side by side, one line per quantity with a time
 *  unit; keys missing on one side print as "-". */
std::string format_components_comparison(const nlohmann::json& predicted, const nlohmann::json& measured);

}  // namespace cnnpar
