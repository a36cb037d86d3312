// Reading JSON input: nesting, numbers out of range, bounded integers.
#include <catch2/catch.hpp>

#include <string>

#include "base/error.hpp"
#include "base/json_node.hpp"
#include "base/limits.hpp"

using cnnpar::InputError;
using cnnpar::JsonNode;
using cnnpar::parse_json_text;

TEST_CASE("nesting deeper than the limit is refused before parsing, at its line and column") {
  // 100,000 levels crashed every entry point (stack overflow in nlohmann's recursive copy and dump).
  const std::string deep(100000, '[');
  try {
    parse_json_text(deep, "deep.json");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.file() == "deep.json");
    // The first bracket past the limit is byte kMaxJsonDepth (0-based): line 1, column kMaxJsonDepth + 1.
    CHECK(error.reason() == "JSON nested deeper than 64 levels at line 1, column 65");
  }
  // Exactly the limit parses; brackets inside strings do not count.
  const std::string at_limit = std::string(cnnpar::limits::kMaxJsonDepth, '[') + std::string(cnnpar::limits::kMaxJsonDepth, ']');
  CHECK_NOTHROW(parse_json_text(at_limit, "ok.json"));
  CHECK_NOTHROW(parse_json_text("{\"name\": \"" + std::string(1000, '[') + "\"}", "ok.json"));
  CHECK_NOTHROW(parse_json_text("{\"name\": \"a\\\"[[[[\"}", "escaped.json"));
}

TEST_CASE("a number outside double's range names the file, its line and column, and the number") {
  try {
    parse_json_text("{\n  \"maps\": 1e400\n}", "net.json");
    FAIL("no error");
  } catch (const InputError& error) {
    CHECK(error.file() == "net.json");
    CHECK(error.value() == "1e400");
    CHECK(error.reason() == "number outside the range of a double at line 2, column 11");
  }
}

TEST_CASE("bounded integers refuse what would be cut to int") {
  const nlohmann::json document = nlohmann::json::parse(R"({"count": 2147483648, "small": 7, "float": 3.0})");
  const JsonNode root(document, "p.json");
  // 2^31 does not fit an int: refused with the bound, not reported as -2147483648.
  CHECK_THROWS_WITH(root.at("count").as_int_in(1, cnnpar::limits::kMaxIndex),
                    "p.json: /count: must be an integer in [1, 2147483647] (value: 2147483648)");
  CHECK(root.at("small").as_int_in(1, 7) == 7);
  CHECK(root.at("float").as_int_in(0, 10) == 3);
  CHECK_THROWS_AS(root.at("small").as_int_in(8, 10), InputError);
}

TEST_CASE("integers above 2^63 - 1 are refused as int64 and kept whole as uint64") {
  // nlohmann stores 2^64 - 1 as unsigned; read as int64 it used to wrap to -1 and be reported
  // as "must not be negative" with the right value beside it.
  const nlohmann::json document = nlohmann::json::parse(R"({"big": 18446744073709551615, "top": 9223372036854775807, "neg": -1})");
  const JsonNode root(document, "s.json");
  CHECK_THROWS_WITH(root.at("big").as_int(),
                    "s.json: /big: expected an integer in [-2^63, 2^63 - 1] (value: 18446744073709551615)");
  CHECK(root.at("top").as_int() == 9223372036854775807LL);
  CHECK(root.at("big").as_uint64() == 18446744073709551615ULL);
  CHECK(root.at("top").as_uint64() == 9223372036854775807ULL);
  CHECK_THROWS_AS(root.at("neg").as_uint64(), InputError);
}

TEST_CASE("a value with a newline stays on the message's one line") {
  const InputError error("f.json", "/name", "a\nb", "bad");
  CHECK(std::string(error.what()) == "f.json: /name: bad (value: a\\nb)");
}
