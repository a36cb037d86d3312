// `cnnpar compare`: two traces, the input split at the first kSeparator (no separator: the
// trace is compared with itself), both read with trace_from_json, then compare_traces.
#include <string_view>

#include "analysis/compare.hpp"
#include "model/trace.hpp"
#include "tests/fuzz/fuzz_common.hpp"

namespace {
constexpr std::string_view kSeparator = "\n@@@@\n";  // also in cnnpar.dict
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cnnpar;
  const std::string text = fuzz::text_of(data, size);
  const std::size_t at = text.find(kSeparator);
  const std::string first = at == std::string::npos ? text : text.substr(0, at);
  const std::string second = at == std::string::npos ? text : text.substr(at + kSeparator.size());
  try {
    const Trace predicted = trace_from_json(parse_json_text(first, "<fuzz predicted>"), "<fuzz predicted>");
    const Trace measured = trace_from_json(parse_json_text(second, "<fuzz measured>"), "<fuzz measured>");
    const CompareReport report = compare_traces(predicted, measured);
    format_compare_table(report);
    to_json(report).dump();
  } catch (const InputError&) {
  }
  return 0;
}
