// Run-specs (what `cnnpar run` hands to `cnnpar-run`): run_spec_from_json, then the JSON
// form written back.
#include "tests/fuzz/fuzz_common.hpp"
#include "workload/run_spec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  try {
    const nlohmann::json document = parse_json_text(fuzz::text_of(data, size), fuzz::kOrigin);
    const RunSpec spec = run_spec_from_json(document, fuzz::kOrigin);
    FUZZ_REQUIRE_SAME(document, "iterations", spec.strategy.iterations);
    FUZZ_REQUIRE_SAME(document, "warmup", spec.strategy.warmup_iterations);
    FUZZ_REQUIRE((spec.strategy.global_batch >= 1 && spec.strategy.iterations >= 1),
                 "batch/iterations");
    to_json(spec).dump();
  } catch (const InputError&) {
  }
  return 0;
}
