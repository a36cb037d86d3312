#pragma once
// Errors shared by every layer of cnnpar.
//
// Bad user input throws InputError; a broken internal assumption throws
// InternalError through CNNPAR_ASSERT. Only main() maps exceptions to exit codes
// (0 ok, 1 failure, 2 bad input, 128 + signal when interrupted).
#include <stdexcept>
#include <string>

namespace cnnpar {

/** Bad input: names the file, the JSON path (RFC 6901 pointer, e.g. "/layers/3/kernel")
 *  and the offending value. what() is one line: "FILE: PATH: REASON (value: VALUE)". */
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string json_path, std::string value, std::string reason);

  const std::string& file() const noexcept { return file_; }
  const std::string& json_path() const noexcept { return json_path_; }
  const std::string& value() const noexcept { return value_; }
  const std::string& reason() const noexcept { return reason_; }

 private:
  std::string file_, json_path_, value_, reason_;
};

/** SIGINT or SIGTERM reached cnnpar while it waited for a child process (run_child); main()
 *  exits with 128 + signal() after the stack has unwound. */
class InterruptedError : public std::runtime_error {
 public:
  explicit InterruptedError(int signal)
      : std::runtime_error("interrupted by signal " + std::to_string(signal)), signal_(signal) {}
  int signal() const noexcept { return signal_; }

 private:
  int signal_;
};

/** A broken internal assumption (a bug in cnnpar, not in the input). */
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void assertion_failed(const char* expression, const char* file, int line,
                                   const std::string& message);

}  // namespace cnnpar

/** Checks an internal assumption; on failure throws InternalError naming it. */
#define CNNPAR_ASSERT(condition, message)                                            \
  do {                                                                               \
    if (!(condition)) ::cnnpar::assertion_failed(#condition, __FILE__, __LINE__, (message)); \
  } while (false)
