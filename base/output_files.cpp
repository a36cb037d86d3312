#include "base/output_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "base/error.hpp"

namespace cnnpar {
namespace fs = std::filesystem;
namespace {

fs::path folder_of(const fs::path& target) {
  return target.has_parent_path() ? target.parent_path() : fs::path(".");
}

fs::path sibling(const fs::path& target, const char* suffix) {
  return folder_of(target) / fmt::format(".{}.{}.{}", target.filename().string(), ::getpid(), suffix);
}

// Creates and removes a file in `folder`: the only test that also covers read-only mounts,
// ACLs and quotas. Returns the reason it failed, or "".
std::string probe_folder(const fs::path& folder, const fs::path& target) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) return "the output folder does not exist";
  if (!fs::is_directory(folder, ec)) return fmt::format("{} is not a folder", folder.string());
  const fs::path probe = sibling(target, "probe");
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fmt::format("the output folder is not writable: {}", std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

// The temporary file being written, for a signal handler (one write at a time per process).
char g_temporary[4096];
volatile std::sig_atomic_t g_pending = 0;

struct PendingTemporary {
  explicit PendingTemporary(const std::string& path) {
    if (path.size() >= sizeof g_temporary) return;  // too long to record: not cleaned on a signal
    std::memcpy(g_temporary, path.c_str(), path.size() + 1);
    g_pending = 1;
  }
  ~PendingTemporary() { g_pending = 0; }
  PendingTemporary(const PendingTemporary&) = delete;
  PendingTemporary& operator=(const PendingTemporary&) = delete;
};

// Writes all of `content` to `path` as it is ("-" = standard output): for streams, which a
// rename would replace by a regular file (as root, even /dev/stdout's link).
void write_stream(const std::string& path, const void* data, std::size_t bytes) {
  std::FILE* file = path == "-" ? stdout : std::fopen(path.c_str(), "wb");
  if (!file) throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  const bool written = std::fwrite(data, 1, bytes, file) == bytes;
  const int write_errno = errno;
  const bool closed = file == stdout ? std::fflush(file) == 0 : std::fclose(file) == 0;
  if (!written || !closed)
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(written ? errno : write_errno)));
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

bool is_stream_output(const std::string& path) {
  if (path == "-") return true;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // follows links (/dev/stdout)
  return !ec && fs::exists(status) && !fs::is_regular_file(status) && !fs::is_directory(status);
}

void remove_pending_temporary() noexcept {
  if (g_pending) ::unlink(g_temporary);
}

void write_file_atomic(const std::string& path, const void* data, std::size_t bytes) {
  if (is_stream_output(path)) return write_stream(path, data, bytes);
  const fs::path temporary = sibling(path, "tmp");
  const PendingTemporary pending(temporary.string());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file) throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  const bool written = std::fwrite(data, 1, bytes, file) == bytes;
  const int write_errno = errno;
  const bool closed = std::fclose(file) == 0;
  const int close_errno = errno;
  if (!written || !closed) {
    std::remove(temporary.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(written ? close_errno : write_errno)));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(temporary.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {}", path, std::strerror(rename_errno)));
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  write_file_atomic(path, content.data(), content.size());
}

void check_output_path(const std::string& path, const std::string& option, const std::string& origin) {
  if (path.empty()) return;
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) throw InputError(origin, option, path, "the output path is a folder");
  if (is_stream_output(path)) {
    if (path != "-" && ::access(path.c_str(), W_OK) != 0)
      throw InputError(origin, option, path, fmt::format("cannot write to it: {}", std::strerror(errno)));
    return;
  }
  if (const std::string reason = probe_folder(folder_of(target), target); !reason.empty())
    throw InputError(origin, option, path, reason);
}

void check_output_folder(const std::string& dir, const std::string& option, const std::string& origin) {
  const fs::path target = fs::path(dir).lexically_normal();
  std::error_code ec;
  if (fs::exists(target, ec) && !fs::is_directory(target, ec))
    throw InputError(origin, option, dir, "exists and is not a folder");
  if (const std::string reason = probe_folder(folder_of(target), target); !reason.empty())
    throw InputError(origin, option, dir, reason);
}

OutputTransaction::~OutputTransaction() {
  std::error_code ignored;
  for (const Staged& staged : staged_) fs::remove_all(staged.temporary, ignored);
}

void OutputTransaction::file(const std::string& path, const std::string& content) {
  if (is_stream_output(path)) {
    streams_.push_back({path, content});  // written as they are at commit, never replaced
    return;
  }
  const fs::path temporary = sibling(path, "staged");
  staged_.push_back({temporary.string(), path, false});
  write_file_atomic(temporary.string(), content);
}

std::string OutputTransaction::folder(const std::string& dir) {
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path temporary = sibling(target, "staged");
  std::error_code ec;
  fs::remove_all(temporary, ec);
  staged_.push_back({temporary.string(), target.string(), true});
  fs::create_directories(temporary, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot write {}: {}", dir, ec.message()));
  return temporary.string();
}

void OutputTransaction::commit() {
  for (Staged& staged : staged_) {
    std::error_code ec;
    if (!staged.is_folder) {
      fs::rename(staged.temporary, staged.target, ec);
    } else {
      // A folder cannot be renamed over a non-empty one: move the old one aside first, and
      // back if the new one cannot take its place.
      const fs::path old = sibling(staged.target, "old");
      const bool had_old = fs::exists(staged.target);
      if (had_old) fs::rename(staged.target, old, ec);
      if (!ec) fs::rename(staged.temporary, staged.target, ec);
      std::error_code ignored;
      if (ec && had_old) fs::rename(old, staged.target, ignored);
      if (!ec && had_old) fs::remove_all(old, ignored);
    }
    if (ec) throw std::runtime_error(fmt::format("cannot write {}: {}", staged.target, ec.message()));
    staged.temporary.clear();  // in place: nothing left to remove
  }
  staged_.clear();
  for (const auto& [path, content] : streams_) write_stream(path, content.data(), content.size());
  streams_.clear();
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  char text[32] = {};
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

}  // namespace cnnpar
