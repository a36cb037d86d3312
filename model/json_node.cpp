#include "model/json_node.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "model/error.hpp"

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

std::int64_t JsonNode::as_int() const {
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

std::int64_t JsonNode::as_nonnegative_int() const {
  const std::int64_t number = as_int();
  if (number < 0) fail("must not be negative");
  return number;
}

bool JsonNode::as_bool() const {
  if (!value_->is_boolean()) fail("expected true or false");
  return value_->get<bool>();
}

double JsonNode::as_quantity(Unit unit, bool allow_zero) const {
  double quantity = 0;
  if (value_->is_number()) {
    // A bare number is taken in base units (bytes/s, s, FLOP/s, Hz, bytes).
    quantity = as_number();
  } else if (value_->is_string()) {
    try {
      quantity = parse_quantity(value_->get<std::string>(), unit, true);
    } catch (const std::invalid_argument& error) {
      fail(error.what());
    }
  } else {
    fail("expected " + unit_example(unit));
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
    if (!known) {
      std::string names;
      for (auto name : allowed) names += (names.empty() ? "" : ", ") + std::string(name);
      throw InputError(file_, path_ + "/" + escape_token(it.key()), value_text(it.value()),
                       fmt::format("unknown member \"{}\" (expected one of: {})", it.key(), names));
    }
  }
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& error) {
    // error.byte is the 1-based offset of the failure; show the line and column.
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i + 1 < error.byte && i < text.size(); ++i) {
      if (text[i] == '\n') { ++line; column = 1; } else { ++column; }
    }
    const std::size_t at = error.byte > 0 ? std::min(error.byte - 1, text.size()) : 0;
    std::string near = text.substr(at, 20);
    for (char& c : near) if (c == '\n' || c == '\r') c = ' ';
    throw InputError(origin, "/", near.empty() ? "(end of file)" : near,
                     fmt::format("malformed JSON at line {}, column {}", line, column));
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw InputError(path, "/", path, "cannot open file");
  std::ostringstream buffer;
  buffer << stream.rdbuf();
  if (stream.bad()) throw InputError(path, "/", path, "cannot read file");
  return parse_json_text(buffer.str(), path);
}

void write_file_atomic(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path temporary = target.parent_path() / fmt::format(".{}.{}.tmp", target.filename().string(), ::getpid());
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream) throw std::runtime_error(fmt::format("cannot write {}", temporary.string()));
    stream.write(content.data(), std::streamsize(content.size()));
    stream.flush();
    if (!stream) {
      stream.close();
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw std::runtime_error(fmt::format("cannot write {}", temporary.string()));
    }
  }
  std::error_code error;
  fs::rename(temporary, target, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    throw std::runtime_error(fmt::format("cannot rename {} to {}: {}", temporary.string(), path, error.message()));
  }
}

}  // namespace cnnpar
