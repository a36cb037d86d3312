#pragma once
// The per-layer breakdown of a Trace: compute, communication (T_c), exposed communication
// (T_b) and bytes per (layer, phase), per measured iteration.
//
// Attribution (one rule, used by predict, trace, compare and the reports):
//  * compute: the ops of the layer and phase (TraceMetrics::layers);
//  * a collective counts for the layers it carries (the trace's metadata.collective_layers,
//    from Collective::layers) in the phase its payload belongs to: activations → forward,
//    errors → backward_data, gradients (and payload-less collectives) → backward_weight,
//    weights → update;
//  * a collective of several layers (a gradient bucket, a Lee chunk) is split between them in
//    proportion to their parameter bytes when the network is known, else evenly;
//  * collectives a trace does not attribute (traces written before metadata.collective_layers)
//    go to one row with layer −1 and name "(unattributed)".
// Every column is the per-iteration sum on a rank, then the max over ranks, so the columns of
// a row need not come from the same rank, and rows do not add up to the trace's totals when
// ranks differ.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/metrics.hpp"
#include "analysis/rows.hpp"
#include "model/network.hpp"
#include "model/trace.hpp"

namespace cnnpar {

struct LayerPhaseBreakdown {
  int layer = -1;             ///< index into Network::layers; −1 = unattributed collectives
  std::string name;           ///< "conv1"
  Phase phase = Phase::forward;
  double compute_s = 0;       ///< compute seconds per iteration, max over ranks
  double comm_s = 0;          ///< T_c seconds per iteration attributed to the layer, max over ranks
  double exposed_comm_s = 0;  ///< T_b seconds per iteration attributed, max over ranks
  double bytes = 0;           ///< bytes per iteration handed to its collectives, max over ranks
};

/** The phase a collective of this payload belongs to (see above). */
Phase collective_phase(Payload payload);

/** Rows sorted by layer (−1 last), then phase; only (layer, phase) pairs with compute or
 *  communication. `metrics` must come from `trace` with per-layer and per-collective detail.
 *  `network` (may be null) names the layers and weighs multi-layer collectives. */
std::vector<LayerPhaseBreakdown> layer_breakdown(const Trace& trace, const TraceMetrics& metrics,
                                                 const Network* network);

/** Rows summed over the phases of each layer (phase left at forward). */
std::vector<LayerPhaseBreakdown> layer_totals(const std::vector<LayerPhaseBreakdown>& rows);

/** A text table, one line per layer (its phases summed) with a time unit per column. */
std::string format_layer_table(const std::vector<LayerPhaseBreakdown>& rows);

/** The header of the per-layer CSV: the configuration columns every cnnpar CSV starts with,
 *  nodes, then layer,name,phase,compute_s,comm_s,exposed_comm_s,bytes. */
extern const char* const kLayerCsvHeader;
/** One CSV line per row of one configuration at `nodes` ("\n"-terminated, no header). */
std::string layer_csv_lines(const ConfigColumns& config, int nodes, const std::vector<LayerPhaseBreakdown>& rows);
nlohmann::json to_json(const std::vector<LayerPhaseBreakdown>& rows);

/** One (layer, phase) of two breakdowns, e.g. a prediction and a measurement of the same
 *  schedule; a side without that row keeps zeros. */
struct LayerPair {
  LayerPhaseBreakdown predicted, measured;
};
/** Paired by (layer, phase), in breakdown order. */
std::vector<LayerPair> pair_layers(const std::vector<LayerPhaseBreakdown>& predicted,
                                   const std::vector<LayerPhaseBreakdown>& measured);
/** A text table, one line per layer (its phases summed): compute, comm and exposed comm,
 *  predicted beside measured, with the relative difference of compute. */
std::string format_layer_comparison(const std::vector<LayerPair>& pairs);
nlohmann::json to_json(const std::vector<LayerPair>& pairs);

}  // namespace cnnpar
