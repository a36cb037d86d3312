#pragma once
// A network's layers as a table: what each reads, its output shape, its parameters and its
// forward multiply-accumulates per image (`cnnpar layers`). Multiply-accumulates count the conv
// and fc GEMMs only (torchvision's and the papers' "FLOPs" of a network).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/network.hpp"

namespace cnnpar {

struct NetworkLayerRow {
  int index = 0;
  std::string name;
  LayerKind kind = LayerKind::relu;
  std::vector<std::string> inputs;  ///< names of the layers read; "(input)" for the network input
  Shape out;                        ///< per image (C, H, W)
  std::int64_t parameters = 0;      ///< weights + biases (batchnorm: scale + shift)
  double forward_macs = 0;          ///< per image; conv and fc only
};

struct NetworkTable {
  std::string network;
  Shape input;
  std::vector<NetworkLayerRow> rows;
  std::int64_t parameters = 0;  ///< sum over the rows
  double forward_macs = 0;      ///< per image, sum over the rows
};

NetworkTable network_table(const Network& network);
nlohmann::json to_json(const NetworkTable& table);
/** One row per layer: index,name,type,inputs,c,h,w,parameters,forward_macs (inputs joined by ';'). */
std::string network_table_csv(const NetworkTable& table);
/** The table for a terminal, with the totals. */
std::string network_table_text(const NetworkTable& table);

}  // namespace cnnpar
