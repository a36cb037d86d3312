// Network files: parse, shape inference, per-layer costs, then what `cnnpar predict` does
// with a network (a dp schedule for 2 ranks on platform "local", analytic replay, metrics).
#include <cmath>

#include "model/cost.hpp"
#include "model/network.hpp"
#include "model/scenarios.hpp"
#include "tests/fuzz/fuzz_common.hpp"
#include "tests/fuzz/fuzz_replay.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  static const Platform platform = load_platform("local");
  try {
    const nlohmann::json document = parse_json_text(fuzz::text_of(data, size), fuzz::kOrigin);
    const Network network = parse_network(document, fuzz::kOrigin);
    for (const Layer& layer : network.layers) {
      FUZZ_REQUIRE(layer.out.c >= 1 && layer.out.h >= 1 && layer.out.w >= 1, layer.spec.name);
      const LayerCost cost = layer_cost(layer);
      FUZZ_REQUIRE(std::isfinite(cost.forward_flops) && cost.forward_flops >= 0, layer.spec.name);
      FUZZ_REQUIRE(cost.weights >= 0 && cost.biases >= 0 && cost.output_elements >= 1, layer.spec.name);
    }
    total_parameters(network);
    fuzz::replay_dp_on_two_ranks(network, platform);
  } catch (const InputError&) {
  }
  return 0;
}
