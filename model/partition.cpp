#include "model/partition.hpp"

#include <algorithm>
#include <stdexcept>

namespace cnnpar {

const char* to_string(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::data: return "data";
    case PartitionKind::model: return "model";
    case PartitionKind::replicated: return "replicated";
    case PartitionKind::none: return "none";
  }
  return "?";
}

PartitionKind partition_kind_from_string(const std::string& text) {
  for (auto k : {PartitionKind::data, PartitionKind::model, PartitionKind::replicated, PartitionKind::none})
    if (text == to_string(k)) return k;
  throw std::invalid_argument("unknown partition (expected data, model, replicated or none)");
}

Range even_slice(std::int64_t total, int parts, int index) {
  const std::int64_t base = total / parts, extra = total % parts;
  const std::int64_t begin = base * index + (index < extra ? index : extra);
  return {begin, base + (index < extra ? 1 : 0)};
}

LayerPartition none_partition() { return {PartitionKind::none, {0, 0}, {0, 0}}; }

Range intersect(const Range& a, const Range& b) {
  const std::int64_t begin = std::max(a.begin, b.begin), end = std::min(a.end(), b.end());
  return {begin, std::max<std::int64_t>(0, end - begin)};
}

nlohmann::json to_json(const LayerPartition& partition) {
  return {{"kind", to_string(partition.kind)},
          {"batch", {partition.batch.begin, partition.batch.count}},
          {"units", {partition.units.begin, partition.units.count}}};
}

}  // namespace cnnpar
