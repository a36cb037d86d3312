#include "real/atomic_file.hpp"

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "model/error.hpp"

namespace cnnpar::real {
namespace {

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

}  // namespace

void remove_pending_temporary() noexcept {
  if (g_pending) ::unlink(g_temporary);
}

void write_file_atomically(const std::string& path, const void* data, std::size_t bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const PendingTemporary pending(temporary);
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file) throw InputError(path, "/", path, std::string("cannot write output: ") + std::strerror(errno));
  const bool written = std::fwrite(data, 1, bytes, file) == bytes;
  const int saved_errno = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    std::remove(temporary.c_str());
    throw InputError(path, "/", path, std::string("cannot write output: ") + std::strerror(written ? errno : saved_errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(temporary.c_str());
    throw InputError(path, "/", path, std::string("cannot rename output into place: ") + std::strerror(rename_errno));
  }
}

}  // namespace cnnpar::real
