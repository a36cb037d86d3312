#pragma once
// Reading JSON input with the file and JSON path attached, so every error can
// name the file, the path and the value.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/units.hpp"

namespace cnnpar {

/** A view of one value inside a parsed JSON document, with its file and JSON pointer path.
 *  Every accessor throws InputError (file, path, value) when the value does not fit. */
class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, std::string file, std::string path = "");

  const nlohmann::json& raw() const noexcept { return *value_; }
  const std::string& file() const noexcept { return file_; }
  const std::string& path() const noexcept { return path_; }

  bool has(std::string_view key) const;
  /** Required member of an object. */
  JsonNode at(std::string_view key) const;
  /** Element of an array. */
  JsonNode at(std::size_t index) const;
  /** Elements of a required array. */
  std::vector<JsonNode> items() const;
  /** Names of an object's members, in document order. */
  std::vector<std::string> keys() const;

  std::string as_string() const;
  double as_number() const;
  double as_positive_number() const;
  double as_nonnegative_number() const;
  /** A finite number in [min, max]. */
  double as_number_in(double min, double max) const;
  std::int64_t as_int() const;
  std::int64_t as_positive_int() const;
  std::int64_t as_nonnegative_int() const;
  /** An integer in [0, 2^64 - 1] (seeds): the only accessor that takes values above 2^63 - 1. */
  std::uint64_t as_uint64() const;
  /** An integer in [min, max]; the bound is named in the error, so a count of 2^31 is
   *  refused instead of being cut to int. */
  std::int64_t as_int_in(std::int64_t min, std::int64_t max) const;
  bool as_bool() const;
  /** A unit string like "10Gbps" converted to base units; must be > 0 unless allow_zero. */
  double as_quantity(Unit unit, bool allow_zero = false) const;

  // Optional members with defaults.
  std::string string_or(std::string_view key, std::string fallback) const;
  std::int64_t int_or(std::string_view key, std::int64_t fallback) const;
  double number_or(std::string_view key, double fallback) const;
  double quantity_or(std::string_view key, Unit unit, double fallback) const;
  bool bool_or(std::string_view key, bool fallback) const;

  /** Rejects members not in `allowed` (catches typos such as "kernal"). */
  void check_keys(std::initializer_list<std::string_view> allowed) const;

  /** Throws InputError for this node with the given reason. */
  [[noreturn]] void fail(const std::string& reason) const;

 private:
  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
};

/** Reads and parses a JSON file. @throws InputError if unreadable, malformed, nested deeper
 *  than limits::kMaxJsonDepth, or holding a number outside double's range. */
nlohmann::json read_json_file(const std::string& path);
/** Parses JSON text that came from `origin` (a file name or "<embedded:NAME>").
 *  @throws InputError as read_json_file does. */
nlohmann::json parse_json_text(const std::string& text, const std::string& origin);

}  // namespace cnnpar
