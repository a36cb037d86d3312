#include "model/strategies/strategy.hpp"

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/strategies/builders.hpp"

namespace cnnpar {

std::vector<std::string> strategy_names() { return {"dp", "dp_layerwise", "dp_buckets", "lee", "per_layer", "hybrid"}; }

nlohmann::json to_json(const StrategyOptions& options) {
  nlohmann::json j = {{"strategy", options.name},
                      {"batch", options.global_batch},
                      {"ranks", options.ranks},
                      {"iterations", options.iterations},
                      {"warmup", options.warmup_iterations}};
  if (options.name == "lee") {
    j["k"] = options.lee_k;
    j["f"] = options.lee_f;
  }
  if (options.name == "dp_buckets") j["bucket_bytes"] = options.bucket_bytes;
  if (options.name == "per_layer") j["assign"] = options.assign;
  if (options.name == "per_layer" || options.name == "hybrid") {
    j["sync"] = options.sync;
    if (options.sync == "chunks") j["k"] = options.lee_k;
  }
  if (options.uneven_batch) j["uneven_batch"] = true;
  return j;
}

namespace {

void validate(const Network& network, const StrategyOptions& options) {
  const std::string& origin = options.origin;
  const auto fail = [&](const char* path, const std::string& value, const std::string& reason) {
    throw InputError(origin, path, value, reason);
  };
  bool known = false;
  for (const std::string& name : strategy_names()) known = known || name == options.name;
  if (!known)
    fail("/strategy", options.name,
         "unknown strategy (expected dp, dp_layerwise, dp_buckets, lee, per_layer or hybrid)");
  if (options.ranks < 1) fail("/nodes", std::to_string(options.ranks), "the number of ranks must be at least 1");
  if (options.global_batch < 1) fail("/batch", std::to_string(options.global_batch), "the batch must be at least 1");
  if (options.global_batch < options.ranks)
    fail("/batch", fmt::format("{} over {} ranks", options.global_batch, options.ranks),
         "every rank needs at least one image: the batch must be at least the number of ranks");
  if (options.global_batch % options.ranks != 0 && !options.uneven_batch)
    fail("/batch", fmt::format("{} over {} ranks", options.global_batch, options.ranks),
         "the global batch must be divisible by the number of ranks (or allow an uneven split)");
  if (options.iterations < 1) fail("/iterations", std::to_string(options.iterations), "at least one iteration is needed");
  if (options.warmup_iterations < 0 || options.warmup_iterations >= options.iterations)
    fail("/warmup", std::to_string(options.warmup_iterations),
         fmt::format("warm-up iterations must be in [0, iterations) = [0, {})", options.iterations));
  if (network.layers.empty()) fail("/network", network.name, "the network has no layers");
  if (options.name == "lee") {
    const int counted = int(network.counted_layers().size());
    const int fc = int(network.fc_layers().size());
    if (options.lee_k < 1 || options.lee_k > counted)
      fail("/k", std::to_string(options.lee_k),
           fmt::format("k must be in [1, {}] (the counted conv, pool and fc layers of {})", counted, network.name));
    if (options.lee_f < 0 || options.lee_f > fc)
      fail("/f", std::to_string(options.lee_f), fmt::format("f must be in [0, {}] (the fc layers of {})", fc, network.name));
    if (options.lee_f > 0 && options.iterations < 2)
      fail("/iterations", std::to_string(options.iterations),
           "lee with f > 0 delays fc updates into the next iteration: at least 2 iterations are needed");
  }
  if (options.name == "per_layer" || options.name == "hybrid") {
    if (options.sync != "end" && options.sync != "layerwise" && options.sync != "chunks")
      fail("/sync", options.sync, "expected end, layerwise or chunks");
    const int counted = int(network.counted_layers().size());
    if (options.sync == "chunks" && (options.lee_k < 1 || options.lee_k > counted))
      fail("/k", std::to_string(options.lee_k),
           fmt::format("k must be in [1, {}] (the counted conv, pool and fc layers of {})", counted, network.name));
  }
  if (options.name == "dp_buckets" && !(options.bucket_bytes > 0))
    fail("/bucket_bytes", fmt::format("{}", options.bucket_bytes), "the bucket size must be greater than zero");
}

}  // namespace

Schedule build_schedule(const Network& network, const Platform& platform, const StrategyOptions& options) {
  validate(network, options);
  if (options.name == "dp") return strategies::build_dp(network, platform, options);
  if (options.name == "dp_layerwise") return strategies::build_dp_layerwise(network, platform, options);
  if (options.name == "dp_buckets") return strategies::build_dp_buckets(network, platform, options);
  if (options.name == "per_layer") return strategies::build_per_layer(network, platform, options);
  if (options.name == "hybrid") return strategies::build_hybrid(network, platform, options);
  return strategies::build_lee(network, platform, options);
}

}  // namespace cnnpar
