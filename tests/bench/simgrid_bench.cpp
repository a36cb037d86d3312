// Speed of the SimGrid engine on a strategy schedule.
//
//   simgrid_bench [--ranks P] [--network vgg-a] [--platform cori-haswell] [--strategy lee]
//                 [--batch 256] [--k 9] [--f 2] [--iterations 2] [--warmup 1]
//                 [--topology crossbar] [--model CM02] [--cfg ITEM]...
//                 [--ring-step-batch G] [--ring-messages M] [--analytic]
//
// Prints one JSON line: wall seconds of the simulation (fork + replay + trace transfer), the
// simulated iteration time (last measured iteration, max over ranks), messages' collectives.
// The platform's node count is raised to P and its collective algorithms are set to ring.
// Measure memory with /usr/bin/time -v (the figure includes the forked child).
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "model/scenarios.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "sim/simgrid/simgrid_engine.hpp"
#include "workload/strategy.hpp"

using namespace cnnpar;

namespace {

/** Iteration time of the last iteration: max over ranks of mark_last - mark_before. */
double last_iteration_s(const Trace& trace) {
  double worst = 0;
  for (const RankTrace& rank : trace.ranks) {
    if (rank.marks.empty()) continue;
    const double end = rank.marks.back().time_s;
    const double begin = rank.marks.size() > 1 ? rank.marks[rank.marks.size() - 2].time_s : 0.0;
    worst = std::max(worst, end - begin);
  }
  return worst;
}

}  // namespace

int main(int argc, char** argv) {
  StrategyOptions options;
  options.name = "lee";
  options.global_batch = 256;
  options.ranks = 128;
  options.iterations = 2;
  options.warmup_iterations = 1;
  options.set("k", 9).set("f", 2);
  std::string network_name = "vgg-a", platform_name = "cori-haswell", topology = "crossbar";
  SimgridOptions sg;
  bool analytic = false;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      const auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw InputError("<command line>", arg, "", "needs a value");
        return argv[++i];
      };
      if (arg == "--ranks") options.ranks = std::stoi(value());
      else if (arg == "--network") network_name = value();
      else if (arg == "--platform") platform_name = value();
      else if (arg == "--strategy") options.name = value();
      else if (arg == "--batch") options.global_batch = std::stoll(value());
      else if (arg == "--k") options.set("k", std::stoi(value()));
      else if (arg == "--f") options.set("f", std::stoi(value()));
      else if (arg == "--iterations") options.iterations = std::stoi(value());
      else if (arg == "--warmup") options.warmup_iterations = std::stoi(value());
      else if (arg == "--topology") topology = value();
      else if (arg == "--model") sg.network_model = value();
      else if (arg == "--cfg") sg.extra_cfg.push_back(value());
      else if (arg == "--ring-step-batch") sg.ring_step_batch = std::stoi(value());
      else if (arg == "--ring-messages") sg.ring_messages = std::stoi(value());
      else if (arg == "--analytic") analytic = true;
      else throw InputError("<command line>", arg, arg, "unknown option");
    }
    const Network network = load_network(network_name);
    Platform platform = load_platform(platform_name);
    platform.nodes.count = std::max(platform.nodes.count, options.ranks);
    platform.network.topology = topology_from_string(topology);
    platform.network.algorithms["allreduce"] = Algorithm::ring;
    platform.network.algorithms["allgather"] = Algorithm::ring;
    platform.resolve_speed_factors();

    const auto t0 = std::chrono::steady_clock::now();
    const Schedule schedule = build_schedule(network, platform, options);
    const auto t1 = std::chrono::steady_clock::now();
    const Trace trace = make_simgrid_engine(sg)->run(schedule, platform);
    const auto t2 = std::chrono::steady_clock::now();
    std::size_t messages = 0;
    for (const auto& program : schedule.programs)
      for (const auto& op : program.ops) messages += op.kind == OpKind::post;
    nlohmann::json out = {
        {"network", network_name}, {"platform", platform_name}, {"topology", topology},
        {"strategy", options.name}, {"ranks", options.ranks}, {"batch", options.global_batch},
        {"iterations", options.iterations}, {"network_model", sg.network_model},
        {"ring_step_batch", sg.ring_step_batch},
        {"ring_messages", sg.ring_messages},
        {"collective_posts", messages},
        {"build_wall_s", std::chrono::duration<double>(t1 - t0).count()},
        {"simgrid_wall_s", std::chrono::duration<double>(t2 - t1).count()},
        {"simgrid_iteration_s", last_iteration_s(trace)}};
    if (analytic) {
      const auto t3 = std::chrono::steady_clock::now();
      const Trace reference = make_analytic_engine()->run(schedule, platform);
      out["analytic_wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t3).count();
      out["analytic_iteration_s"] = last_iteration_s(reference);
    }
    std::cout << out.dump() << std::endl;
    return 0;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
