#pragma once
// Partitions: what one rank holds of one layer (docs/design.md "Partitions").
//
// Every layer's output is a (batch × units × spatial) tensor per iteration, units being the
// output maps of a conv/pool/lrn layer (and of relu/dropout after them) or the neurons of an
// fc layer (out.c; spatial = out.h·out.w). A rank holds a region of it:
//   data        a slice of the global batch, every unit;              weights whole
//   model       the whole batch, a slice of the units (fc neurons or conv output maps);
//               weights: the rows of those units only
//   replicated  every unit; the weight gradient is computed over the whole batch from
//               gathered activations and errors (Lee et al.'s replicated gradient
//               calculation) or from the whole batch held locally; weights whole.
//               Its activations cover the rank's batch slice when its input and its
//               consumer are batch-sliced (Lee), else the whole batch.
//   none        nothing: the rank takes no part in the layer (separate worker groups of
//               Veeriah & Modi, the master-only layers of Marques et al.); empty ranges.
// The regions of the ranks that hold a layer tile it: data and Lee-replicated batch slices and
// model unit slices are disjoint and cover the layer, replicated whole-batch regions are
// identical.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"

namespace cnnpar {

enum class PartitionKind { data, model, replicated, none };
const char* to_string(PartitionKind kind);
PartitionKind partition_kind_from_string(const std::string& text);  ///< @throws std::invalid_argument

/** A half-open index range [begin, begin + count). */
struct Range {
  std::int64_t begin = 0;
  std::int64_t count = 0;
  std::int64_t end() const { return begin + count; }
  bool contains(const Range& other) const { return other.begin >= begin && other.end() <= end(); }
  bool operator==(const Range&) const = default;
};

/** The region of one layer's output that a rank holds (activations and errors alike). */
struct LayerPartition {
  PartitionKind kind = PartitionKind::data;
  Range batch;  ///< images of the global batch
  Range units;  ///< output units (maps or neurons)
  bool operator==(const LayerPartition&) const = default;
};

/** The partition of a layer a rank takes no part in. */
LayerPartition none_partition();

/** The common part of two ranges (count 0 when they are disjoint). */
Range intersect(const Range& a, const Range& b);

/** Output units of a layer: maps for conv/pool/lrn (and relu/dropout after them), neurons
 *  for fc and softmax (out.c in both cases). */
inline std::int64_t layer_units(const Layer& layer) { return layer.out.c; }
/** Elements per unit and image: out.h·out.w (1 after an fc layer). */
inline std::int64_t layer_spatial(const Layer& layer) { return layer.out.h * layer.out.w; }

/** Slice `index` of `total` items split over `parts`: the first total % parts slices take one
 *  more (the same rule as the batch split of data parallelism). */
Range even_slice(std::int64_t total, int parts, int index);

nlohmann::json to_json(const LayerPartition& partition);

}  // namespace cnnpar
