#include "base/json_node.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/error.hpp"
#include "base/limits.hpp"

namespace cnnpar {
namespace {

// RFC 6901 escaping of one reference token.
std::string escape_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// 1-based line and column of byte `offset` of `text`.
std::pair<std::size_t, std::size_t> line_and_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; column = 1; } else { ++column; }
  }
  return {line, column};
}

std::string text_near(const std::string& text, std::size_t offset) {
  std::string near = text.substr(std::min(offset, text.size()), 20);
  for (char& c : near) if (c == '\n' || c == '\r') c = ' ';
  return near.empty() ? "(end of file)" : near;
}

// Refuses nesting deeper than limits::kMaxJsonDepth before nlohmann's recursive copy,
// comparison and dump see it (100,000 levels overflow the stack).
void check_nesting(const std::string& text, const std::string& origin) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits::kMaxJsonDepth) {
        const auto [line, column] = line_and_column(text, i);
        throw InputError(origin, "/", text_near(text, i),
                         fmt::format("JSON nested deeper than {} levels at line {}, column {}",
                                     limits::kMaxJsonDepth, line, column));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

std::string value_text(const nlohmann::json& value) {
  std::string text = value.is_string() ? value.get<std::string>() : value.dump();
  constexpr std::size_t kMax = 80;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

}  // namespace

JsonNode::JsonNode(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value), file_(std::move(file)), path_(std::move(path)) {}

void JsonNode::fail(const std::string& reason) const {
  throw InputError(file_, path_.empty() ? "/" : path_, value_text(*value_), reason);
}

bool JsonNode::has(std::string_view key) const {
  return value_->is_object() && value_->contains(key);
}

JsonNode JsonNode::at(std::string_view key) const {
  if (!value_->is_object()) fail("expected an object");
  auto it = value_->find(key);
  if (it == value_->end()) {
    throw InputError(file_, path_ + "/" + escape_token(key), "(missing)",
                     fmt::format("required member \"{}\" is missing", key));
  }
  return JsonNode(*it, file_, path_ + "/" + escape_token(key));
}

JsonNode JsonNode::at(std::size_t index) const {
  if (!value_->is_array()) fail("expected an array");
  if (index >= value_->size()) fail(fmt::format("array has no element {}", index));
  return JsonNode((*value_)[index], file_, fmt::format("{}/{}", path_, index));
}

std::vector<JsonNode> JsonNode::items() const {
  if (!value_->is_array()) fail("expected an array");
  std::vector<JsonNode> nodes;
  nodes.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i)
    nodes.emplace_back((*value_)[i], file_, fmt::format("{}/{}", path_, i));
  return nodes;
}

std::vector<std::string> JsonNode::keys() const {
  if (!value_->is_object()) fail("expected an object");
  std::vector<std::string> names;
  for (auto it = value_->begin(); it != value_->end(); ++it) names.push_back(it.key());
  return names;
}

std::string JsonNode::as_string() const {
  if (!value_->is_string()) fail("expected a string");
  return value_->get<std::string>();
}

double JsonNode::as_number() const {
  if (!value_->is_number()) fail("expected a number");
  const double number = value_->get<double>();
  if (!std::isfinite(number)) fail("expected a finite number");
  return number;
}

double JsonNode::as_positive_number() const {
  const double number = as_number();
  if (!(number > 0)) fail("must be greater than zero");
  return number;
}

double JsonNode::as_nonnegative_number() const {
  const double number = as_number();
  if (number < 0) fail("must not be negative");
  return number;
}

double JsonNode::as_number_in(double min, double max) const {
  const double number = as_number();
  if (number < min || number > max) fail(fmt::format("must be a number in [{:g}, {:g}]", min, max));
  return number;
}

std::int64_t JsonNode::as_int() const {
  // nlohmann keeps integers above 2^63 - 1 as unsigned; get<int64_t> would wrap them negative.
  if (value_->is_number_unsigned()) {
    const std::uint64_t number = value_->get<std::uint64_t>();
    if (number > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
      fail("expected an integer in [-2^63, 2^63 - 1]");
    return std::int64_t(number);
  }
  if (value_->is_number_integer()) return value_->get<std::int64_t>();
  if (value_->is_number_float()) {
    const double number = value_->get<double>();
    if (std::isfinite(number) && number == std::floor(number) && std::fabs(number) < 9e15)
      return std::int64_t(number);
  }
  fail("expected an integer");
}

std::int64_t JsonNode::as_positive_int() const {
  const std::int64_t number = as_int();
  if (number <= 0) fail("must be a positive integer");
  return number;
}

std::int64_t JsonNode::as_int_in(std::int64_t min, std::int64_t max) const {
  const std::int64_t number = as_int();
  if (number < min || number > max) fail(fmt::format("must be an integer in [{}, {}]", min, max));
  return number;
}

std::int64_t JsonNode::as_nonnegative_int() const {
  const std::int64_t number = as_int();
  if (number < 0) fail("must not be negative");
  return number;
}

std::uint64_t JsonNode::as_uint64() const {
  if (value_->is_number_unsigned()) return value_->get<std::uint64_t>();
  return std::uint64_t(as_nonnegative_int());
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false");
  return value_->get<bool>();
}

double JsonNode::as_quantity(Unit unit, bool allow_zero) const {
  double quantity = 0;
  try {
    if (value_->is_number()) {
      // A bare number is taken in base units (bytes/s, s, FLOP/s, Hz, bytes).
      quantity = check_quantity(as_number(), unit);
    } else if (value_->is_string()) {
      quantity = parse_quantity(value_->get<std::string>(), unit, true);
    } else {
      fail("expected " + unit_example(unit));
    }
  } catch (const std::invalid_argument& error) {
    fail(error.what());
  }
  if (quantity < 0 || (!allow_zero && quantity == 0)) fail(allow_zero ? "must not be negative" : "must be greater than zero");
  return quantity;
}

std::string JsonNode::string_or(std::string_view key, std::string fallback) const {
  return has(key) ? at(key).as_string() : fallback;
}
std::int64_t JsonNode::int_or(std::string_view key, std::int64_t fallback) const {
  return has(key) ? at(key).as_int() : fallback;
}
double JsonNode::number_or(std::string_view key, double fallback) const {
  return has(key) ? at(key).as_number() : fallback;
}
double JsonNode::quantity_or(std::string_view key, Unit unit, double fallback) const {
  return has(key) ? at(key).as_quantity(unit) : fallback;
}
bool JsonNode::bool_or(std::string_view key, bool fallback) const {
  return has(key) ? at(key).as_bool() : fallback;
}

void JsonNode::check_keys(std::initializer_list<std::string_view> allowed) const {
  if (!value_->is_object()) fail("expected an object");
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    bool known = false;
    for (auto name : allowed) known = known || name == it.key();
    if (!known)
      throw InputError(file_, path_ + "/" + escape_token(it.key()), value_text(it.value()),
                       fmt::format("unknown member \"{}\" (expected one of: {})", it.key(), fmt::join(allowed, ", ")));
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  check_nesting(text, origin);
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    // error.byte is the 1-based offset of the failure.
    const std::size_t at = error.byte > 0 ? std::min(error.byte - 1, text.size()) : 0;
    const auto [line, column] = line_and_column(text, at);
    throw InputError(origin, "/", text_near(text, at), fmt::format("malformed JSON at line {}, column {}", line, column));
  } catch (const nlohmann::json::out_of_range& error) {
    // "number overflow parsing '1e400'": the number is quoted in the message; find it.
    const std::string message = error.what();
    const std::size_t open = message.find('\'');
    const std::size_t close = open == std::string::npos ? open : message.find('\'', open + 1);
    const std::string number = close == std::string::npos ? "" : message.substr(open + 1, close - open - 1);
    const std::size_t at = number.empty() ? std::string::npos : text.find(number);
    if (at == std::string::npos)
      throw InputError(origin, "/", number.empty() ? "(unknown)" : number, "a number is outside the range of a double");
    const auto [line, column] = line_and_column(text, at);
    throw InputError(origin, "/", number,
                     fmt::format("number outside the range of a double at line {}, column {}", line, column));
  } catch (const nlohmann::json::exception& error) {
    throw InputError(origin, "/", "(document)", fmt::format("unreadable JSON: {}", error.what()));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError(path, "/", path, "is a folder, not a JSON file");
  // Devices and pipes (/dev/zero) never end; a file's size is known before it is read.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw InputError(path, "/", path, "is not a regular file");
  if (const auto bytes = std::filesystem::file_size(path, ec); !ec && bytes > limits::kMaxInputFileBytes)
    throw InputError(path, "/", fmt::format("{} bytes", bytes),
                     fmt::format("a JSON input may have at most {} bytes", limits::kMaxInputFileBytes));
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw InputError(path, "/", path, "cannot open file");
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  if (stream.bad()) throw InputError(path, "/", path, "cannot read file");
  return parse_json_text(buffer.str(), path);
}

}  // namespace cnnpar
