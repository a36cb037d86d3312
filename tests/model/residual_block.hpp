#pragma once
// A small residual block that the graph tests share:
// conv1 (3→4 maps, 3x3, no bias) ─ bn1 ─┬─ conv2 (4→4, 3x3) ─ sum ─ relu ─ global avg pool ─ fc 10 ─ softmax
//                                        └──────────────────────┘
#include <nlohmann/json.hpp>

inline nlohmann::json residual_block() {
  return nlohmann::json::parse(R"({
    "name": "block", "input": {"channels": 3, "height": 8, "width": 8},
    "layers": [
      {"name": "conv1", "type": "conv", "maps": 4, "kernel": 3, "pad": 1, "bias": false},
      {"name": "bn1", "type": "batchnorm"},
      {"name": "conv2", "type": "conv", "maps": 4, "kernel": 3, "pad": 1},
      {"name": "sum", "type": "add", "inputs": ["conv2", "bn1"]},
      {"name": "relu", "type": "relu"},
      {"name": "gap", "type": "pool", "mode": "avg", "global": true},
      {"name": "fc", "type": "fc", "outputs": 10},
      {"name": "prob", "type": "softmax"}]})");
}
