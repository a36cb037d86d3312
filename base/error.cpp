#include "base/error.hpp"

#include <fmt/format.h>

namespace cnnpar {

namespace {
// One message, one line: control characters in a value (a JSON string holding "\n") are escaped.
std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out;
}

std::string input_error_message(const std::string& file, const std::string& path,
                                const std::string& value, const std::string& reason) {
  return fmt::format("{}: {}: {} (value: {})", one_line(file.empty() ? "<input>" : file),
                     one_line(path.empty() ? "/" : path), one_line(reason), one_line(value));
}
}  // namespace

InputError::InputError(std::string file, std::string json_path, std::string value, std::string reason)
    : std::runtime_error(input_error_message(file, json_path, value, reason)),
      file_(std::move(file)),
      json_path_(std::move(json_path)),
      value_(std::move(value)),
      reason_(std::move(reason)) {}

void assertion_failed(const char* expression, const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error: {} ({}:{}: assertion `{}` failed)", message, file,
                                  line, expression));
}

}  // namespace cnnpar
