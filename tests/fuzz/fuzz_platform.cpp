// Platform files: parse, then predict a fixed small schedule on the platform, as
// `cnnpar predict --platform FILE` does.
#include <cmath>

#include "model/platform.hpp"
#include "model/scenarios.hpp"
#include "tests/fuzz/fuzz_common.hpp"
#include "tests/fuzz/fuzz_replay.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  static const Network network = load_network("lenet-5");
  try {
    const nlohmann::json document = parse_json_text(fuzz::text_of(data, size), fuzz::kOrigin);
    const Platform platform = parse_platform(document, fuzz::kOrigin);
    const nlohmann::json& nodes = document.at("nodes");
    FUZZ_REQUIRE_SAME(nodes, "count", platform.nodes.count);
    FUZZ_REQUIRE_SAME(nodes, "cores", platform.nodes.cores);
    FUZZ_REQUIRE_SAME(document.at("network"), "collective_concurrency", platform.network.collective_concurrency);
    FUZZ_REQUIRE(std::isfinite(platform.nodes.peak_flops) && platform.nodes.peak_flops > 0, "peak");
    FUZZ_REQUIRE(std::isfinite(platform.network.bandwidth_Bps) && platform.network.bandwidth_Bps > 0, "bandwidth");
    FUZZ_REQUIRE(std::isfinite(platform.network.latency_s) && platform.network.latency_s >= 0, "latency");
    to_json(platform).dump();
    if (platform.nodes.count < 2) return 0;
    fuzz::replay_dp_on_two_ranks(network, platform);
  } catch (const InputError&) {
  }
  return 0;
}
