#pragma once
// Internal to the study report: what its pages and plots read off a predicted study, a series'
// row at a node count and the component tables of veeriah and conv_split series.
#include <string>
#include <utility>
#include <vector>

#include "experiments/report.hpp"

namespace cnnpar::detail {

/** The row of `series` at `nodes`, or null. */
const SweepRow* row_at(const SeriesResult& series, int nodes);

// veeriah and conv_split series: one table per series, a row per node count, a column per
// component (analysis/components.hpp), cells formatted with their units.
struct ComponentTable {
  std::string series;
  std::vector<std::string> keys;
  std::vector<std::pair<int, std::vector<std::string>>> rows;  // (nodes, cells)
};
std::vector<ComponentTable> component_tables(const StudyResult& result);
inline constexpr const char* kComponentsNote = "Per iteration, median over the measured iterations (definitions in "
                                               "analysis/components.hpp).";

}  // namespace cnnpar::detail
