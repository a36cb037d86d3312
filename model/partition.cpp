#include "model/partition.hpp"

#include <stdexcept>

namespace cnnpar {

const char* to_string(PartitionKind kind) {
  switch (kind) {
    case PartitionKind::data: return "data";
    case PartitionKind::model: return "model";
    case PartitionKind::replicated: return "replicated";
  }
  return "?";
}

PartitionKind partition_kind_from_string(const std::string& text) {
  for (auto k : {PartitionKind::data, PartitionKind::model, PartitionKind::replicated})
    if (text == to_string(k)) return k;
  throw std::invalid_argument("unknown partition (expected data, model or replicated)");
}

Range even_slice(std::int64_t total, int parts, int index) {
  const std::int64_t base = total / parts, extra = total % parts;
  const std::int64_t begin = base * index + (index < extra ? index : extra);
  return {begin, base + (index < extra ? 1 : 0)};
}

nlohmann::json to_json(const LayerPartition& partition) {
  return {{"kind", to_string(partition.kind)},
          {"batch", {partition.batch.begin, partition.batch.count}},
          {"units", {partition.units.begin, partition.units.count}}};
}

}  // namespace cnnpar
