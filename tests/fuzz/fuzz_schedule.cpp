// Schedule files: schedule_from_json, verify_or_throw against lenet-5 (the network the seed
// schedules were built for), and for a schedule the verifier accepts, the analytic replay:
// the replay promises an InternalError only for schedules verify() rejects, so any
// exception there is a finding.
#include "analysis/metrics.hpp"
#include "model/scenarios.hpp"
#include "model/schedule.hpp"
#include "sim/analytic/analytic_engine.hpp"
#include "tests/fuzz/fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  static const Network network = load_network("lenet-5");
  static const Platform platform = load_platform("cori-haswell");  // 768 nodes
  Schedule schedule;
  try {
    const nlohmann::json document = parse_json_text(fuzz::text_of(data, size), fuzz::kOrigin);
    schedule = schedule_from_json(document, fuzz::kOrigin);
    FUZZ_REQUIRE_SAME(document, "iterations", schedule.iterations);
    FUZZ_REQUIRE_SAME(document, "warmup_iterations", schedule.warmup_iterations);
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
