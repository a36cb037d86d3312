// Writes the schedule and run-spec seeds of tests/fuzz/corpus with the real serialisers (no
// cnnpar command writes a Schedule or a run-spec file). Usage: cnnpar_fuzz_seeds FOLDER
// (writes FOLDER/schedule/*.json and FOLDER/run_spec/*.json). Traces come from `cnnpar trace`.
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/json_node.hpp"
#include "base/output_files.hpp"
#include "model/scenarios.hpp"
#include "workload/run_spec.hpp"
#include "workload/strategy.hpp"

int main(int argc, char** argv) {
  using namespace cnnpar;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FOLDER\n", argv[0]);
    return 2;
  }
  const std::filesystem::path folder(argv[1]);
  std::filesystem::create_directories(folder / "schedule");
  std::filesystem::create_directories(folder / "run_spec");
  // lenet-5: the network fuzz_schedule verifies against.
  const Network network = load_network("lenet-5");
  const Platform platform = load_platform("local");
  for (const char* strategy : {"dp", "lee", "hybrid"}) {
    StrategyOptions options;
    options.name = strategy;
    options.global_batch = 4;
    options.ranks = 2;
    options.iterations = 2;
    options.warmup_iterations = 1;
    if (options.name == "lee") options.set("k", 3).set("f", 1);
    const Schedule schedule = build_schedule(network, platform, options);
    write_file_atomic((folder / "schedule" / ("lenet-5-" + options.name + "-2ranks.json")).string(),
                      to_json(schedule).dump() + "\n");
    RunSpec spec;
    spec.network = network.name;
    spec.strategy = options;
    spec.learning_rate = 0.01;
    spec.trace = "trace.json";
    write_file_atomic((folder / "run_spec" / ("lenet-5-" + options.name + ".json")).string(), to_json(spec).dump(1) + "\n");
  }
  // A parameter server and 2 workers (local widened to 3 nodes), UDPA, AGWU with a fixed gamma:
  // one round of pushes, merges and replies (one arrival serve), small enough for the corpus.
  Platform three_nodes = platform;
  three_nodes.nodes.count = 3;
  three_nodes.resolve_speed_factors();
  StrategyOptions server;
  server.name = "param_server";
  server.global_batch = 4;
  server.ranks = 3;
  server.iterations = 1;
  server.warmup_iterations = 0;
  server.set("partition", "udpa").set("gamma", "0.5");
  write_file_atomic((folder / "schedule" / "lenet-5-param_server-3ranks.json").string(),
                    to_json(build_schedule(network, three_nodes, server)).dump() + "\n");
  return 0;
}
