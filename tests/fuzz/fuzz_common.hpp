#pragma once
// Shared by the libFuzzer targets. Each target feeds the input bytes, as a file's text, to a
// real entry point and catches only cnnpar::InputError (documented bad input); any other
// exception escapes LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer reports the
// abort as a crash. Invariants the parsers promise are checked with fuzz_require.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/json_node.hpp"

namespace cnnpar::fuzz {

/** The origin every target names in its errors. */
inline const std::string kOrigin = "<fuzz>";

inline std::string text_of(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

/** A broken promise of the parser under test: abort so libFuzzer records the input. */
[[noreturn]] inline void fuzz_failed(const char* condition, const char* file, int line, const std::string& detail) {
  std::fprintf(stderr, "fuzz invariant failed at %s:%d: %s (%s)\n", file, line, condition, detail.c_str());
  std::abort();
}

/** The integer the document holds at `object[key]`, when it is a number. */
inline bool document_number(const nlohmann::json& object, const char* key, double& value) {
  if (!object.is_object()) return false;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return false;
  value = it->get<double>();
  return true;
}

}  // namespace cnnpar::fuzz

#define FUZZ_REQUIRE(condition, detail)                                                   \
  do {                                                                                    \
    if (!(condition)) ::cnnpar::fuzz::fuzz_failed(#condition, __FILE__, __LINE__, (detail)); \
  } while (false)

/** A value read from key `key` of `object` must equal the document's number (no silent
 *  narrowing to int). */
#define FUZZ_REQUIRE_SAME(object, key, read_value)                                                  \
  do {                                                                                              \
    double fuzz_document_value = 0;                                                                 \
    if (::cnnpar::fuzz::document_number((object), (key), fuzz_document_value))                      \
      FUZZ_REQUIRE(double(read_value) == fuzz_document_value,                                       \
                   std::string(key) + " read as " + std::to_string(read_value) + ", document has " + \
                       std::to_string(fuzz_document_value));                                        \
  } while (false)
