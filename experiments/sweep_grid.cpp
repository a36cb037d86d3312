#include "experiments/sweep_grid.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/output_files.hpp"
#include "base/text.hpp"
#include "workload/overrides.hpp"
#include "workload/registry.hpp"

namespace cnnpar {

bool is_scenario_axis(const std::string& name) {
  return name == "strategy" || name == "network" || name == "platform" || name == "batch";
}

SweepAxis parse_axis(const std::string& text, const std::string& origin, const std::string& flag) {
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    throw InputError(origin, flag, text, "expected NAME=V1,V2,..., e.g. network.bandwidth=1Gbps,10Gbps or strategy=dp,lee");
  SweepAxis axis;
  axis.name = text.substr(0, equals);
  const std::string list = text.substr(equals + 1);
  if (list.empty()) throw InputError(origin, flag, text, "the axis " + axis.name + " has no values");
  for (const std::string& value : split(list, ',')) {
    if (value.empty()) throw InputError(origin, flag, text, "an empty value in the axis " + axis.name);
    if (std::find(axis.values.begin(), axis.values.end(), value) != axis.values.end())
      throw InputError(origin, flag, text, fmt::format("{} appears twice in the axis {}", value, axis.name));
    axis.values.push_back(value);
  }
  return axis;
}

std::vector<SweepPoint> sweep_points(const std::vector<SweepAxis>& axes, const std::string& base_strategy,
                                     const std::string& origin, const std::string& flag) {
  std::set<std::string> names;
  for (const SweepAxis& axis : axes)
    if (!names.insert(axis.name).second)
      throw InputError(origin, flag, axis.name, "two axes over the same name: give one with every value");
  const auto strategy_axis = std::find_if(axes.begin(), axes.end(), [](const SweepAxis& a) { return a.name == "strategy"; });
  const std::vector<std::string> strategies =
      strategy_axis == axes.end() ? std::vector<std::string>{base_strategy} : strategy_axis->values;
  for (const std::string& name : strategies) strategy_spec(name, origin);  // names the registered ones otherwise
  for (const SweepAxis& axis : axes) {
    if (!is_strategy_option(axis.name)) continue;
    const bool taken = std::any_of(strategies.begin(), strategies.end(),
                                   [&](const std::string& s) { return strategy_spec(s).option(axis.name) != nullptr; });
    if (!taken)
      throw InputError(origin, flag, axis.name,
                       fmt::format("no strategy of the sweep ({}) has the option {}", fmt::join(strategies, ", "), axis.name));
  }

  std::vector<SweepPoint> points;
  std::set<std::vector<std::string>> seen;
  std::vector<std::size_t> index(axes.size(), 0);
  for (;;) {
    SweepPoint point;
    for (std::size_t a = 0; a < axes.size(); ++a) point.values.push_back(axes[a].values[index[a]]);
    const std::string& strategy =
        strategy_axis == axes.end() ? base_strategy : point.values[std::size_t(strategy_axis - axes.begin())];
    for (std::size_t a = 0; a < axes.size(); ++a)
      if (is_strategy_option(axes[a].name) && strategy_spec(strategy).option(axes[a].name) == nullptr) point.values[a].clear();
    if (seen.insert(point.values).second) points.push_back(std::move(point));
    // Odometer, last axis fastest.
    std::size_t a = axes.size();
    while (a > 0 && ++index[a - 1] == axes[a - 1].values.size()) index[--a] = 0;
    if (a == 0) break;
  }
  return points;
}

std::string sweep_grid_csv_header(const std::vector<SweepAxis>& axes) {
  // kRowCsvHeader = "network,...,batch,nodes,..." : the axes go between batch and nodes.
  const std::string row = kRowCsvHeader;
  const std::size_t nodes = row.find(",nodes,");
  std::string header = row.substr(0, nodes);
  for (const SweepAxis& axis : axes)
    if (!is_scenario_axis(axis.name)) header += "," + csv_field(axis.name);
  return header + row.substr(nodes);
}

std::size_t sweep_grid_axis_columns(const std::vector<SweepAxis>& axes) {
  return std::size_t(std::count_if(axes.begin(), axes.end(), [](const SweepAxis& a) { return !is_scenario_axis(a.name); }));
}

namespace {
std::string axis_fields(const std::vector<SweepAxis>& axes, const SweepPoint& point) {
  std::string fields;
  for (std::size_t a = 0; a < axes.size(); ++a)
    if (!is_scenario_axis(axes[a].name)) fields += "," + csv_field(point.values[a]);
  return fields;
}
}  // namespace

std::string sweep_grid_row_prefix(const ConfigColumns& config, const std::vector<SweepAxis>& axes,
                                  const SweepPoint& point) {
  return config_csv_fields(config) + axis_fields(axes, point);
}

std::string sweep_grid_row_key(const std::string& prefix, int nodes) { return prefix + "," + std::to_string(nodes); }

std::string sweep_grid_csv_line(const std::string& prefix, const SweepRow& row) { return prefix + row_csv_tail(row); }

std::string sweep_row_key(const std::vector<std::string>& fields, std::size_t key_fields) {
  std::string key;
  for (std::size_t f = 0; f < key_fields && f < fields.size(); ++f) {
    if (f > 0) key += ',';
    key += csv_field(fields[f]);
  }
  return key;
}

bool split_csv_line(const std::string& line, std::vector<std::string>& fields) {
  fields.clear();
  std::string field;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"' && field.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields.push_back(field);
      field.clear();
      was_quoted = false;
    } else {
      field += c;
    }
  }
  if (quoted) return false;
  fields.push_back(field);
  return true;
}

ExistingSweepRows read_sweep_csv(const std::string& file, const std::string& header, std::size_t axis_columns) {
  ExistingSweepRows rows;
  std::ifstream in(file, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  const std::size_t last_newline = text.rfind('\n');
  rows.whole_bytes = last_newline == std::string::npos ? 0 : last_newline + 1;
  rows.torn_bytes = text.size() - rows.whole_bytes;
  const std::size_t key_fields = 6 + axis_columns + 1;  // configuration, axes, nodes
  const std::size_t all_fields = std::count(header.begin(), header.end(), ',') + 1;
  std::size_t begin = 0;
  for (int line_number = 1; begin < rows.whole_bytes; ++line_number) {
    const std::size_t end = text.find('\n', begin);
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    const std::string where = fmt::format("line {}", line_number);
    if (line_number == 1) {
      if (line != header)
        throw InputError(file, where, line,
                         "this CSV was written by another sweep (other axes); give another --csv, or remove the file to "
                         "start again");
      continue;
    }
    std::vector<std::string> fields;
    if (!split_csv_line(line, fields) || fields.size() != all_fields)
      throw InputError(file, where, line, fmt::format("expected a row of {} fields", all_fields));
    rows.lines_by_key[sweep_row_key(fields, key_fields)] = line + "\n";
  }
  return rows;
}

}  // namespace cnnpar
