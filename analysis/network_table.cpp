#include "analysis/network_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/output_files.hpp"
#include "model/cost.hpp"

namespace cnnpar {

NetworkTable network_table(const Network& network) {
  NetworkTable table{.network = network.name, .input = network.input};
  for (int i = 0; i < int(network.layers.size()); ++i) {
    const Layer& layer = network.layers[std::size_t(i)];
    const LayerCost cost = layer_cost(layer);
    NetworkLayerRow row{.index = i,
                        .name = layer.spec.name,
                        .kind = layer.spec.kind,
                        .out = layer.out,
                        .parameters = cost.parameters(),
                        // A GEMM's forward FLOPs count each multiply-add as 2 (model/cost.hpp).
                        .forward_macs = layer.has_gemm() ? cost.forward_flops / 2 : 0.0};
    for (int input : layer.inputs)
      row.inputs.push_back(input < 0 ? std::string("(input)") : network.layers[std::size_t(input)].spec.name);
    table.parameters += row.parameters;
    table.forward_macs += row.forward_macs;
    table.rows.push_back(std::move(row));
  }
  return table;
}

nlohmann::json to_json(const NetworkTable& table) {
  nlohmann::json rows = nlohmann::json::array();
  for (const NetworkLayerRow& row : table.rows)
    rows.push_back({{"index", row.index},
                    {"name", row.name},
                    {"type", to_string(row.kind)},
                    {"inputs", row.inputs},
                    {"out", {row.out.c, row.out.h, row.out.w}},
                    {"parameters", row.parameters},
                    {"forward_macs", row.forward_macs}});
  return {{"network", table.network},
          {"input", {table.input.c, table.input.h, table.input.w}},
          {"parameters", table.parameters},
          {"forward_macs", table.forward_macs},
          {"layers", std::move(rows)}};
}

std::string network_table_csv(const NetworkTable& table) {
  std::string csv = "index,name,type,inputs,c,h,w,parameters,forward_macs\n";
  for (const NetworkLayerRow& row : table.rows)
    csv += fmt::format("{},{},{},{},{},{},{},{},{:.17g}\n", row.index, csv_field(row.name), to_string(row.kind),
                       csv_field(fmt::format("{}", fmt::join(row.inputs, ";"))), row.out.c, row.out.h, row.out.w,
                       row.parameters, row.forward_macs);
  return csv;
}

std::string network_table_text(const NetworkTable& table) {
  std::size_t name_width = 5;
  for (const NetworkLayerRow& row : table.rows) name_width = std::max(name_width, row.name.size());
  std::string text = fmt::format("{}: input ({}, {}, {}), {} layers\n", table.network, table.input.c, table.input.h,
                                 table.input.w, table.rows.size());
  text += fmt::format("{:>4}  {:<{}}  {:<9}  {:>18}  {:>12}  {:>10}  {}\n", "#", "layer", name_width, "type",
                      "out (C, H, W)", "parameters", "fwd MMAC", "inputs");
  for (const NetworkLayerRow& row : table.rows)
    text += fmt::format("{:>4}  {:<{}}  {:<9}  {:>18}  {:>12}  {:>10.2f}  {}\n", row.index, row.name, name_width,
                        to_string(row.kind), fmt::format("({}, {}, {})", row.out.c, row.out.h, row.out.w),
                        row.parameters, row.forward_macs / 1e6, fmt::join(row.inputs, ", "));
  text += fmt::format("total: {} parameters, {:.4f} G multiply-accumulates forward per image (conv and fc)\n",
                      table.parameters, table.forward_macs / 1e9);
  return text;
}

}  // namespace cnnpar
