// serve_replay TRACE.json OUT.bin: replays a parameter-server run of cnnpar-run in one process
// (real/local_executor.hpp) with the merge order its server recorded, and writes the final
// global weights (flat FP32, the network's layer order, as --weights-out). The schedule is
// rebuilt from the trace's metadata (network, platform, strategy options with the per-sample
// times the run resolved, seed, SGD settings); the data is the run's synthetic set. An
// asynchronous run is then checked against arithmetic that does not depend on timing:
// weights_compare the two files.
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/output_files.hpp"
#include "model/scenarios.hpp"
#include "model/trace.hpp"
#include "real/dataset.hpp"
#include "real/local_executor.hpp"
#include "workload/strategy.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: serve_replay TRACE.json OUT.bin\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    if (!in) {
      std::fprintf(stderr, "serve_replay: cannot read %s\n", argv[1]);
      return 2;
    }
    const cnnpar::Trace trace = cnnpar::trace_from_json(nlohmann::json::parse(in), argv[1]);
    const nlohmann::json& m = trace.metadata;
    if (m.value("dataset", "") != "synthetic") {
      std::fprintf(stderr, "serve_replay: the run must use the synthetic dataset\n");
      return 2;
    }
    const cnnpar::Network network = cnnpar::load_network(m.at("network_argument").get<std::string>());
    const cnnpar::Platform platform = cnnpar::load_platform(m.at("platform_argument").get<std::string>());
    const cnnpar::StrategyOptions options = cnnpar::strategy_options_from_json(m.at("options"), argv[1]);
    const cnnpar::Schedule schedule = cnnpar::build_schedule(network, platform, options);
    const auto servers = m.at("server_ranks").get<std::vector<int>>();
    if (servers.size() != 1) {
      std::fprintf(stderr, "serve_replay: the run must have one server, it has %zu\n", servers.size());
      return 2;
    }
    const int server = servers.front();
    const nlohmann::json& sgd = m.at("sgd");
    const cnnpar::real::SgdConfig config{.learning_rate = sgd.at("lr").get<float>(),
                                         .momentum = sgd.at("momentum").get<float>(),
                                         .weight_decay = sgd.at("weight_decay").get<float>()};
    const auto seed = m.at("seed").get<std::uint64_t>();
    cnnpar::real::LocalExecutor executor(network, schedule, seed, config);
    executor.replay_merges(trace.ranks.at(std::size_t(server)).merges);
    const cnnpar::real::SyntheticDataset data(network.input, network.classes(), cnnpar::real::SyntheticDataset::kRunImages, seed);
    executor.run(data);
    const std::vector<float> weights = executor.runtime(server).flat_weights();
    cnnpar::write_file_atomic(argv[2], weights.data(), weights.size() * sizeof(float));
    std::printf("serve_replay: %zu merges replayed, %zu weights written to %s\n",
                trace.ranks.at(std::size_t(server)).merges.size(), weights.size(), argv[2]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "serve_replay: %s\n", e.what());
    return 1;
  }
}
