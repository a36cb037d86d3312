// Schedule files: schedule_from_json, verify_or_throw against lenet-5 (the network the seed
// schedules were built for), and for a schedule the verifier accepts, the analytic replay:
// the replay promises an InternalError only for schedules verify() rejects, so any
// exception there is a finding.
#include "analysis/metrics.hpp"
#include "model/scenarios.hpp"
#include "model/schedule.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {

/** Integers of the schedule must be the document's, not narrowed to int. */
void check_integers(const nlohmann::json& document, const cnnpar::Schedule& schedule) {
  FUZZ_REQUIRE_SAME(document, "iterations", schedule.iterations);
  FUZZ_REQUIRE_SAME(document, "warmup_iterations", schedule.warmup_iterations);
  const nlohmann::json& collectives = document.at("collectives");
  for (std::size_t i = 0; i < schedule.collectives.size(); ++i) {
    const cnnpar::Collective& c = schedule.collectives[i];
    FUZZ_REQUIRE_SAME(collectives.at(i), "root", c.root);
    FUZZ_REQUIRE_SAME(collectives.at(i), "iteration", c.iteration);
    for (std::size_t l = 0; l < c.layers.size(); ++l)
      FUZZ_REQUIRE(double(c.layers[l]) == collectives.at(i).at("layers").at(l).get<double>(), "layers");
  }
  const nlohmann::json& programs = document.at("programs");
  for (std::size_t r = 0; r < schedule.programs.size(); ++r)
    for (std::size_t i = 0; i < schedule.programs[r].ops.size(); ++i) {
      const cnnpar::Op& op = schedule.programs[r].ops[i];
      const nlohmann::json& node = programs.at(r).at("ops").at(i);
      FUZZ_REQUIRE_SAME(node, "layer", op.layer);
      FUZZ_REQUIRE_SAME(node, "collective", op.collective);
      FUZZ_REQUIRE_SAME(node, "iteration", op.iteration);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  static const Network network = load_network("lenet-5");
  static const Platform platform = load_platform("cori-haswell");  // 768 nodes
  Schedule schedule;
  try {
    const nlohmann::json document = parse_json_text(fuzz::text_of(data, size), fuzz::kOrigin);
    schedule = schedule_from_json(document, fuzz::kOrigin);
    check_integers(document, schedule);
    verify_or_throw(schedule, fuzz::kOrigin, &network);
    to_json(schedule).dump();
  } catch (const InputError&) {
    return 0;
  }
  if (schedule.ranks() > platform.nodes.count) return 0;
  const Trace trace = analytic::analytic_replay(schedule, platform);
  try {
    compute_metrics(trace);
  } catch (const InputError&) {  // e.g. no measured iteration
  }
  return 0;
}
