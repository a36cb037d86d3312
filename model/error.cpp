#include "model/error.hpp"

#include <fmt/format.h>

namespace cnnpar {

namespace {
std::string input_error_message(const std::string& file, const std::string& path,
                                const std::string& value, const std::string& reason) {
  return fmt::format("{}: {}: {} (value: {})", file.empty() ? "<input>" : file,
                     path.empty() ? "/" : path, reason, value);
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
