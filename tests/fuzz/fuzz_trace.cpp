// Trace files (`cnnpar compare`, `cnnpar report` inputs): trace_from_json, then the metrics.
#include "analysis/metrics.hpp"
#include "model/trace.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {

/** Integers of the trace must be the document's, not narrowed to int. */
void check_integers(const nlohmann::json& document, const cnnpar::Trace& trace) {
  FUZZ_REQUIRE_SAME(document, "warmup_iterations", trace.warmup_iterations);
  const nlohmann::json& ranks = document.at("ranks");
  for (std::size_t r = 0; r < trace.ranks.size(); ++r) {
    const cnnpar::RankTrace& rank = trace.ranks[r];
    FUZZ_REQUIRE_SAME(ranks.at(r), "rank", rank.rank);
    for (std::size_t i = 0; i < rank.compute.size(); ++i) {
      FUZZ_REQUIRE_SAME(ranks.at(r).at("compute").at(i), "op", rank.compute[i].op);
      FUZZ_REQUIRE_SAME(ranks.at(r).at("compute").at(i), "layer", rank.compute[i].layer);
    }
    for (std::size_t i = 0; i < rank.collectives.size(); ++i) {
      FUZZ_REQUIRE_SAME(ranks.at(r).at("collectives").at(i), "collective", rank.collectives[i].collective);
      FUZZ_REQUIRE_SAME(ranks.at(r).at("collectives").at(i), "iteration", rank.collectives[i].iteration);
    }
    for (std::size_t i = 0; i < rank.marks.size(); ++i)
      FUZZ_REQUIRE_SAME(ranks.at(r).at("marks").at(i), "iteration", rank.marks[i].iteration);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  try {
    const nlohmann::json document = parse_json_text(fuzz::text_of(data, size), fuzz::kOrigin);
    const Trace trace = trace_from_json(document, fuzz::kOrigin);
    check_integers(document, trace);
    const TraceMetrics metrics = compute_metrics(trace);
    to_json(metrics).dump();
  } catch (const InputError&) {
  }
  return 0;
}
